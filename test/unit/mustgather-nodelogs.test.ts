/** must-gather's node journals: one privileged pod per node, a deadline, a reason per node, cleanup, scrubbing. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import { collectNodeLogs, journalScript, journalSections, NODE_JOURNALS } from '../../src/mustgather/nodelogs.ts';

const node = (name: string, labels: Record<string, string> = {}): Node =>
  ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } }) as Node;

/** A cluster in which worker-0's pod completes at its second look and worker-1's image never pulls. */
function fakeCluster() {
  const pods = new Map<string, Pod>();
  const looks = new Map<string, number>();
  const calls: string[] = [];
  const client = {
    path: (rt: { plural: string }, ns?: string, name?: string) =>
      `/api/v1/${ns ? `namespaces/${ns}/` : ''}${rt.plural}${name ? `/${name}` : ''}`,
    create: async (rt: { plural: string }, obj: Pod) => {
      calls.push(`create ${rt.plural} ${obj.metadata.name}`);
      if (rt.plural === 'pods') pods.set(obj.metadata.name ?? '', structuredClone(obj));
      return obj;
    },
    find: async (_rt: unknown, name: string) => {
      const p = pods.get(name);
      if (!p) return undefined;
      const n = (looks.get(name) ?? 0) + 1;
      looks.set(name, n);
      if (p.spec?.nodeName === 'worker-0' && n >= 2) p.status = { phase: 'Succeeded' };
      if (p.spec?.nodeName === 'worker-1')
        p.status = {
          phase: 'Pending',
          containerStatuses: [{ state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "x"' } } }],
        } as Pod['status'];
      return p;
    },
    request: async (_method: string, path: string) => {
      calls.push(`log ${path}`);
      return '=== journalctl -u crio\nNov 25 crio[1]: started; Authorization: Bearer abc.def\n';
    },
    delete: async (rt: { plural: string }, name: string) => {
      calls.push(`delete ${rt.plural} ${name}`);
      return true;
    },
  };
  return { client: client as unknown as KubeClient, pods, calls };
}

test('each node gets a privileged pod reading its journals from the host; the namespace goes afterwards', async () => {
  const { client, pods, calls } = fakeCluster();
  const got = await collectNodeLogs(client, [node('worker-0'), node('worker-1')], {
    image: 'quay.io/osc/osc-operator:v0.1.0',
    timeoutMs: 300,
    pollMs: 10,
  });
  assert.deepEqual([...got.journals.keys()], ['worker-0']);
  assert.match(got.journals.get('worker-0') ?? '', /crio\[1\]: started; Authorization: Bearer REDACTED/);
  assert.equal(got.problems.length, 1);
  assert.match(
    got.problems[0] ?? '',
    /^node worker-1: its node-log pod did not finish within 0\.3s \(ImagePullBackOff: Back-off pulling image "x"\)$/,
  );

  const pod = [...pods.values()].find((p) => p.spec?.nodeName === 'worker-0');
  const c = ((pod?.spec?.containers ?? []) as unknown as { command: string[]; securityContext: { privileged: boolean } }[])[0];
  assert.deepEqual(c?.command.slice(0, 4), ['chroot', '/host', 'sh', '-c']);
  for (const u of NODE_JOURNALS.units) assert.match(c?.command[4] ?? '', new RegExp(`journalctl --no-pager --since=-1d -u ${u}`));
  for (const t of NODE_JOURNALS.identifiers) assert.match(c?.command[4] ?? '', new RegExp(`journalctl --no-pager --since=-1d -t ${t}`));
  assert.equal(c?.securityContext.privileged, true);
  assert.equal(pod?.spec?.restartPolicy, 'Never');

  const ns = /^create namespaces (osc-must-gather-[0-9a-f]+)$/.exec(calls[0] ?? '')?.[1];
  assert.ok(ns, calls.join('\n'));
  assert.equal(calls.at(-1), `delete namespaces ${ns}`, 'the namespace, with its pods, is deleted last');
});

test('the script reads the journals support reads: the node’s own runtime unit, the kubelet, kata, QEMU through kata, virtiofsd', () => {
  const crio = journalScript(node('worker-0'));
  const containerd = journalScript({
    ...node('worker-1'),
    status: { nodeInfo: { containerRuntimeVersion: 'containerd://2.1.4' } },
  } as Node);
  assert.match(crio, /journalctl --no-pager --since=-1d -u crio /);
  assert.doesNotMatch(crio, /-u containerd/);
  assert.match(containerd, /journalctl --no-pager --since=-1d -u containerd /);
  assert.doesNotMatch(containerd, /-u crio/);
  // QEMU's lines are kata's with a qemuPid field, as the documentation's command reads them.
  assert.match(
    crio,
    /echo "=== journalctl -t kata -g 'qemuPid=\[0-9\]\+'"; journalctl --no-pager --since=-1d -t kata -g 'qemuPid=\[0-9\]\+' /,
  );
  assert.doesNotMatch(crio, /qemu-kvm/, 'QEMU logs under no identifier of its own');
  assert.deepEqual(journalSections(node('worker-0')), ['-u crio', '-u kubelet', '-t kata', "-t kata -g 'qemuPid=[0-9]+'", '-t virtiofsd']);
});
