/**
 * The dev cluster's kubernetes distribution against a real kube-apiserver and kwok: no OpenShift API,
 * kubeadm-like containerd nodes, and kata-deploy's simulated host side reacting to a hand-made installer
 * pod (labels on install, release on deletion, failure injection). One cluster serves every test, in order.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DevCluster, FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { INSTANCE_LABEL_PREFIX, KATA_RUNTIME_LABEL } from '../../src/devcluster/katadeploy/index.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { DaemonSets, type Node, Nodes, type Pod, Pods } from '../../src/kube/resources.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';
import { waitFor } from '../support/wait.ts';

const log = process.env.OSC_TEST_LOG ? createLogger({ level: 'debug', destination: process.stderr }) : silentLogger();
const MARKER = `${INSTANCE_LABEL_PREFIX}default`;
const NS = 'kube-system';

let dc: DevCluster;

const installer = (name: string, node: string, opts: { restartPolicy?: string; action?: string } = {}): Pod => ({
  metadata: { name, namespace: NS },
  spec: {
    nodeName: node,
    restartPolicy: opts.restartPolicy ?? 'Always',
    containers: [
      {
        name: 'kube-kata',
        image: 'quay.io/kata-containers/kata-deploy:4.1.0',
        command: ['/usr/bin/kata-deploy', opts.action ?? 'install'],
        terminationMessagePolicy: 'FallbackToLogsOnError',
        env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
      },
    ],
  },
});

const labelsOf = async (name: string) => (await dc.client.get(Nodes, name)).metadata.labels ?? {};
const handlersOf = async (name: string) =>
  ((await dc.client.get(Nodes, name)).status as { runtimeHandlers?: { name: string }[] }).runtimeHandlers?.map((h) => h.name) ?? [];
const container = (p: Pod | undefined) =>
  (
    p?.status?.containerStatuses as
      | { ready?: boolean; restartCount?: number; state?: Record<string, unknown>; lastState?: Record<string, unknown> }[]
      | undefined
  )?.[0];
const gone = async (name: string) => {
  try {
    await dc.client.get(Pods, name, NS);
    return false;
  } catch (e) {
    if (isNotFound(e)) return true;
    throw e;
  }
};

before(async () => {
  dc = await DevCluster.start({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    log,
    kataDeploy: { installMs: 300, cleanupMs: 200, restartBackoffMs: 300 },
  });
});

after(async () => {
  await dc?.stop();
});

describe('dev cluster, kubernetes distribution', () => {
  test('serves no OpenShift API and has no MCO', async () => {
    const groups = (await dc.client.request<{ groups: { name: string }[] }>('GET', '/apis')).groups.map((g) => g.name);
    assert.ok(!groups.includes('machineconfiguration.openshift.io'), `no MCO API group: ${groups.join(', ')}`);
    assert.ok(!groups.includes('config.openshift.io'), 'no config.openshift.io');
    assert.ok(groups.includes('kataconfiguration.openshift.io'), "osc's own API is served");
    assert.throws(() => dc.mco, /has no Machine Config Operator/);
  });

  test('nodes are kubeadm-like and report containerd', async () => {
    const nodes = (await dc.client.list(Nodes)).items;
    assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), ['master-0', 'worker-0', 'worker-1']);
    for (const n of nodes) {
      assert.match(n.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\/2\./, `${n.metadata.name} runs containerd`);
      assert.ok(!Object.keys(n.metadata.labels ?? {}).some((k) => k.includes('openshift')), `${n.metadata.name} has no OpenShift label`);
      assert.ok(!('node-role.kubernetes.io/worker' in (n.metadata.labels ?? {})), 'kubeadm sets no worker role label');
    }
    const master = nodes.find((n) => n.metadata.name === 'master-0') as Node;
    assert.equal(master.metadata.labels?.['node-role.kubernetes.io/control-plane'], '');
    assert.ok(master.spec?.taints?.some((t) => t.key === 'node-role.kubernetes.io/control-plane' && t.effect === 'NoSchedule'));
  });

  test('kwok still runs every other pod: Ready at once, deleted at once', async () => {
    await dc.client.create(Pods, {
      metadata: { name: 'web', namespace: NS },
      spec: { nodeName: 'worker-0', containers: [{ name: 'web', image: 'quay.io/kata-containers/kata-deploy-job-dispatcher:4.1.0' }] },
    });
    await waitFor(async () => container(await dc.client.get(Pods, 'web', NS))?.ready === true, { message: 'an ordinary pod Ready' });
    await dc.client.delete(Pods, 'web', { namespace: NS });
    await waitFor(() => gone('web'));
    assert.equal((await labelsOf('worker-0'))[KATA_RUNTIME_LABEL], undefined, 'not an installer: no label');
  });

  test('an installer pod labels its node once installed, and turns Ready only then', async () => {
    await dc.client.create(Pods, installer('kata-deploy-worker-0', 'worker-0'));
    // The claim comes first: both labels false while installing, the container not Ready.
    const claimed = await waitFor(async () => {
      const l = await labelsOf('worker-0');
      return l[KATA_RUNTIME_LABEL] !== undefined ? l : undefined;
    });
    if (claimed[KATA_RUNTIME_LABEL] === 'false') {
      const p = await dc.client.get(Pods, 'kata-deploy-worker-0', NS);
      assert.notEqual(container(p)?.ready, true, 'not Ready while the node is only claimed');
    }
    await waitFor(async () => (await labelsOf('worker-0'))[KATA_RUNTIME_LABEL] === 'true', { message: 'worker-0 labelled' });
    assert.equal((await labelsOf('worker-0'))[MARKER], 'true');
    const pod = await waitFor(async () => {
      const p = await dc.client.get(Pods, 'kata-deploy-worker-0', NS);
      return container(p)?.ready === true ? p : undefined;
    });
    assert.equal(pod.status?.phase, 'Running');
    assert.equal((await labelsOf('worker-1'))[KATA_RUNTIME_LABEL], undefined, 'the other node is untouched');
    const handlers = await handlersOf('worker-0');
    assert.ok(
      handlers.includes('kata-qemu') && handlers.includes('kata-qemu-runtime-rs'),
      `the kubelet lists the kata handlers: ${handlers}`,
    );
    assert.ok(handlers.includes('runc'), 'and still the runtime’s own');
    assert.deepEqual(await handlersOf('worker-1'), ['', 'runc']);
  });

  test("deleting the installer pod runs kata-deploy's cleanup: the labels go, then the pod", async () => {
    await dc.client.delete(Pods, 'kata-deploy-worker-0', { namespace: NS });
    await waitFor(() => gone('kata-deploy-worker-0'), { message: 'the pod removed once its cleanup exited' });
    const l = await labelsOf('worker-0');
    assert.equal(l[KATA_RUNTIME_LABEL], undefined);
    assert.equal(l[MARKER], undefined);
    assert.deepEqual(await handlersOf('worker-0'), ['', 'runc'], 'the kata handlers left with the CRI drop-in');
  });

  test('an installer pod an etcd restore brings back after its cleanup runs again, as a kubelet starts it again', async () => {
    await dc.client.create(Pods, installer('kata-deploy-restored', 'worker-0'));
    const installed = await waitFor(
      async () => {
        const p = await dc.client.get(Pods, 'kata-deploy-restored', NS);
        return container(p)?.ready === true ? p : undefined;
      },
      { message: 'installed' },
    );
    const backup = join(dc.controlPlane.dataDir, 'installer-backup.db');
    await dc.controlPlane.snapshotEtcd(backup);
    await dc.client.delete(Pods, 'kata-deploy-restored', { namespace: NS });
    await waitFor(() => gone('kata-deploy-restored'), { message: 'cleaned up and removed' });
    assert.equal((await labelsOf('worker-0'))[KATA_RUNTIME_LABEL], undefined, 'its cleanup released the node');
    // The backup has the pod Ready and the node labelled, and both come back; no container runs the pod,
    // so the simulated kubelet starts it again and kata-deploy installs again: a new container, Ready once
    // installed.
    await dc.controlPlane.restoreEtcd(backup);
    const startedAt = (p: Pod) => (container(p)?.state as { running?: { startedAt?: string } } | undefined)?.running?.startedAt;
    const again = await waitFor(
      async () => {
        const p = await dc.client.get(Pods, 'kata-deploy-restored', NS);
        return startedAt(p) !== startedAt(installed) && container(p)?.ready === true ? p : undefined;
      },
      { message: 'the restored pod ran its install again in a new container' },
    );
    assert.equal(container(again)?.restartCount, 0, 'a pod started afresh, not a container restart');
    assert.equal((await labelsOf('worker-0'))[MARKER], 'true');
    await dc.client.delete(Pods, 'kata-deploy-restored', { namespace: NS });
    await waitFor(() => gone('kata-deploy-restored'));
  });

  test('osc.dev/fail-next-update makes the install fail: exit 1 with the reason, node left claimed', async () => {
    await dc.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'disk full' } } });
    await dc.client.create(Pods, installer('kata-deploy-worker-1', 'worker-1'));
    const failed = await waitFor(async () => {
      const c = container(await dc.client.get(Pods, 'kata-deploy-worker-1', NS));
      return (c?.restartCount ?? 0) >= 1 ? c : undefined;
    });
    const last = failed.lastState?.terminated as { exitCode: number; message?: string };
    assert.equal(last.exitCode, 1);
    assert.equal(last.message, 'Error: disk full');
    assert.equal(failed.ready, false);
    const l = await labelsOf('worker-1');
    assert.equal(l[KATA_RUNTIME_LABEL], 'false', 'claimed, never labelled true');
    assert.equal(l[MARKER], 'false');

    // The fault cleared, the next restart installs.
    await dc.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    await waitFor(async () => (await labelsOf('worker-1'))[KATA_RUNTIME_LABEL] === 'true', {
      message: 'worker-1 installed after the fault',
    });
    await dc.client.delete(Pods, 'kata-deploy-worker-1', { namespace: NS });
    await waitFor(() => gone('kata-deploy-worker-1'));
    assert.equal((await labelsOf('worker-1'))[KATA_RUNTIME_LABEL], undefined);
  });

  test('with restartPolicy Never a failed install ends the pod Failed', async () => {
    await dc.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: '' } } });
    await dc.client.create(Pods, installer('kata-deploy-once', 'worker-1', { restartPolicy: 'Never' }));
    const p = await waitFor(async () => {
      const pod = await dc.client.get(Pods, 'kata-deploy-once', NS);
      return pod.status?.phase === 'Failed' ? pod : undefined;
    });
    const t = container(p)?.state?.terminated as { exitCode: number; message?: string };
    assert.equal(t.exitCode, 1);
    assert.match(t.message ?? '', /^Error: simulated failure/);
  });

  test('a one-shot cleanup pod releases a node a failed install left claimed, and Succeeds', async () => {
    await dc.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    await dc.client.delete(Pods, 'kata-deploy-once', { namespace: NS });
    await waitFor(() => gone('kata-deploy-once'));
    assert.equal((await labelsOf('worker-1'))[KATA_RUNTIME_LABEL], 'false', 'an exited installer cannot clean up');
    await dc.client.create(Pods, installer('kata-cleanup', 'worker-1', { restartPolicy: 'Never', action: 'cleanup' }));
    await waitFor(async () => (await dc.client.get(Pods, 'kata-cleanup', NS)).status?.phase === 'Succeeded');
    const l = await labelsOf('worker-1');
    assert.equal(l[KATA_RUNTIME_LABEL], undefined);
    assert.equal(l[MARKER], undefined);
    await dc.client.delete(Pods, 'kata-cleanup', { namespace: NS });
  });

  test("a DaemonSet's pods: a restarted pod keeps Kata on the node, deleting the DaemonSet cleans every node", async () => {
    const template = installer('unused', '');
    delete template.spec?.nodeName;
    await dc.client.create(DaemonSets, {
      metadata: { name: 'kata-deploy', namespace: NS },
      spec: {
        selector: { matchLabels: { name: 'kata-deploy' } },
        template: { metadata: { labels: { name: 'kata-deploy' } }, spec: template.spec as Record<string, unknown> },
      },
    });
    for (const n of ['worker-0', 'worker-1'])
      await waitFor(async () => (await labelsOf(n))[KATA_RUNTIME_LABEL] === 'true', { message: `${n} installed by the DaemonSet` });
    const onWorker0 = (await dc.client.list(Pods, { namespace: NS, labelSelector: 'name=kata-deploy' })).items.find(
      (p) => p.spec?.nodeName === 'worker-0',
    ) as Pod;
    await dc.client.delete(Pods, onWorker0.metadata.name ?? '', { namespace: NS });
    await waitFor(() => gone(onWorker0.metadata.name ?? ''), { message: 'the restarted pod gone' });
    assert.equal((await labelsOf('worker-0'))[KATA_RUNTIME_LABEL], 'true', 'its DaemonSet still selects the node: no cleanup');
    // Its replacement runs before the DaemonSet goes: a pod deleted before its container started has no
    // process to clean up with, and would leave the node labelled, as on a real node.
    await waitFor(
      async () =>
        (await dc.client.list(Pods, { namespace: NS, labelSelector: 'name=kata-deploy' })).items.some(
          (p) => p.spec?.nodeName === 'worker-0' && p.metadata.name !== onWorker0.metadata.name && container(p)?.ready === true,
        ),
      { message: 'the replacement pod on worker-0 Ready' },
    );

    await dc.client.delete(DaemonSets, 'kata-deploy', { namespace: NS });
    for (const n of ['worker-0', 'worker-1'])
      await waitFor(async () => !(KATA_RUNTIME_LABEL in (await labelsOf(n))), { message: `${n} cleaned when the DaemonSet went` });
    await waitFor(async () => (await dc.client.list(Pods, { namespace: NS, labelSelector: 'name=kata-deploy' })).items.length === 0);
  });

  test('a pod bound to a node before it registers runs once it does, as its kubelet runs what is bound to it', async () => {
    // A DaemonSet's pod can be bound in the moment between a node's registration and its kubelet's first
    // Lease; here the pod comes first, so that kwok surely sees it before it holds the node.
    await dc.client.create(Pods, {
      metadata: { name: 'early', namespace: NS },
      spec: { nodeName: 'worker-7', containers: [{ name: 'early', image: 'quay.io/kata-containers/kata-deploy-job-dispatcher:4.1.0' }] },
    });
    await dc.addWorker('worker-7');
    try {
      await waitFor(async () => container(await dc.client.get(Pods, 'early', NS))?.ready === true, {
        timeoutMs: 60_000,
        message: 'the pod bound before its node registered Ready',
      });
    } finally {
      await dc.client.delete(Pods, 'early', { namespace: NS, gracePeriodSeconds: 0 }).catch(() => {});
      await dc.removeNode('worker-7');
    }
  });
});
