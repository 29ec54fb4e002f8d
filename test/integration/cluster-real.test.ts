/**
 * What the real scheduler, controller-manager and kwok make true for osc's users: kata pods scheduled onto
 * kata nodes and Running, never onto a node without kata; node heartbeats as Leases; a node that stops
 * heartbeating going Unknown, and `osc status` saying so; garbage collection through ownerReferences as
 * the backstop for what osc deletes itself; namespaces that finish terminating.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { EXTENSION_MACHINE_CONFIG, KATA_RUNTIME_CLASS } from '../../src/api/names.ts';
import { MachineConfigs } from '../../src/api/openshift.ts';
import { nodeProblem, summarize } from '../../src/api/summary.ts';
import { Leases, Namespaces, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount } from '../support/wait.ts';

const NAME = 'example-kataconfig';
const cluster = useDevCluster({ workers: 3, rebootMs: 200, nodeMonitorGracePeriodSeconds: 20 });
const c = () => cluster.dev.client;

const kataPod = (name: string): Pod => ({
  metadata: { name, namespace: 'default', labels: { app: 'sandboxed' } },
  spec: { runtimeClassName: KATA_RUNTIME_CLASS, containers: [{ name: 'app', image: 'quay.io/openshift/origin-hello-openshift' }] },
});

async function kc(): Promise<KataConfig | undefined> {
  return c().find(KataConfigs, NAME);
}

describe('the cluster under osc is real', () => {
  const running = useOperator(cluster, NAME);

  test('every node has a kubelet heartbeat (a Lease renewed by kwok) and no not-ready taint once Ready', async () => {
    const nodes = (await c().list(Nodes)).items;
    assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), ['master-0', 'worker-0', 'worker-1', 'worker-2']);
    await Promise.all(
      nodes.map(async (n) => {
        const name = n.metadata.name ?? '';
        const lease = await waitFor(() => c().find(Leases, name, 'kube-node-lease'), { message: `${name}'s Lease` });
        const renewed = lease.spec?.renewTime;
        assert.ok(renewed, 'renewed');
        await waitFor(async () => (await c().get(Leases, name, 'kube-node-lease')).spec?.renewTime !== renewed, {
          message: `${name}'s Lease renewed again`,
        });
        // The NodeTaint admission plugin adds not-ready at registration; the node lifecycle controller removes it.
        await waitFor(async () => !(await c().get(Nodes, name)).spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready'), {
          message: `${name} without the not-ready taint`,
        });
      }),
    );
  });

  test('kata on worker-0 and worker-1 only: kata pods run there and never on worker-2', async () => {
    await c().patch(Nodes, 'worker-2', { metadata: { labels: { 'osc.test/kata': 'no' } } });
    await c().create(KataConfigs, {
      metadata: { name: NAME },
      spec: {
        checkNodeEligibility: false,
        logLevel: 'info',
        kataConfigPoolSelector: { matchExpressions: [{ key: 'osc.test/kata', operator: 'DoesNotExist' }] },
      },
    } as KataConfig);
    await waitFor(async () => (await kc())?.status?.conditions?.some((x) => x.type === 'InProgress' && x.status === 'False'), {
      timeoutMs: 120_000,
      message: 'kata installed',
    });
    assert.deepEqual((await kc())?.status?.kataNodes?.installed, ['worker-0', 'worker-1']);
    for (let i = 0; i < 4; i++) await c().create(Pods, kataPod(`sandboxed-${i}`));
    const running = await waitFor(
      async () => {
        const pods = (await c().list(Pods, { namespace: 'default', labelSelector: 'app=sandboxed' })).items;
        return pods.length === 4 && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
      },
      { message: 'the kata pods Running' },
    );
    for (const p of running) {
      assert.match(String(p.spec?.nodeName), /^worker-[01]$/, `${p.metadata.name} runs on a kata node`);
      assert.match(String(p.status?.podIP), /^10\.(12[89]|13[01])\./, 'an IP from the pod network');
    }
  });

  test('a node that stops heartbeating goes Unknown, and osc status says what that means', async () => {
    await cluster.dev.setHeartbeat('worker-1', false);
    const unknown = await waitFor(
      async () => {
        const n = await c().get(Nodes, 'worker-1');
        return n.status?.conditions?.find((x) => x.type === 'Ready')?.status === 'Unknown' ? n : undefined;
      },
      { timeoutMs: 120_000, message: 'worker-1 Unknown' },
    );
    const ready = unknown.status?.conditions?.find((x) => x.type === 'Ready');
    assert.equal(ready?.reason, 'NodeStatusUnknown');
    await waitFor(async () => (await c().get(Nodes, 'worker-1')).spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable'), {
      message: 'the unreachable taint from the node lifecycle controller',
    });
    const current = await kc();
    assert.ok(current);
    const s = summarize(current, [unknown]);
    assert.equal(s.nodes.find((n) => n.node === 'worker-1')?.problem, nodeProblem(unknown));
    assert.match(
      s.nodes.find((n) => n.node === 'worker-1')?.problem ?? '',
      /^unreachable since .*NodeStatusUnknown: Kubelet stopped posting node status/,
    );

    await cluster.dev.setHeartbeat('worker-1', true);
    await waitFor(async () => (await c().get(Nodes, 'worker-1')).status?.conditions?.find((x) => x.type === 'Ready')?.status === 'True', {
      timeoutMs: 120_000,
      message: 'worker-1 Ready again',
    });
  });

  test('uninstall: osc removes what it made itself, in order; nothing is left', async () => {
    await c().delete(Pods, 'sandboxed-0', { namespace: 'default' });
    for (let i = 1; i < 4; i++) await c().delete(Pods, `sandboxed-${i}`, { namespace: 'default' });
    await waitFor(async () => (await c().list(Pods, { namespace: 'default', labelSelector: 'app=sandboxed' })).items.length === 0, {
      message: 'kwok removes the deleted pods',
    });
    await c().delete(KataConfigs, NAME);
    await waitFor(async () => !(await kc()), { timeoutMs: 120_000, message: 'the KataConfig gone' });
    assert.equal(await c().find(RuntimeClasses, KATA_RUNTIME_CLASS), undefined);
    assert.equal(await c().find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined);
    assert.ok(running.recorder.deleted.length > 0, 'the watch saw the KataConfig go');
  });

  test('a KataConfig whose finalizer is removed by hand: garbage collection removes what it owned', async () => {
    await c().create(KataConfigs, { metadata: { name: NAME }, spec: { checkNodeEligibility: false, logLevel: 'info' } } as KataConfig);
    await waitFor(() => c().find(RuntimeClasses, KATA_RUNTIME_CLASS), { timeoutMs: 120_000, message: 'RuntimeClass kata' });
    const owned = await c().get(RuntimeClasses, KATA_RUNTIME_CLASS);
    assert.equal(owned.metadata.ownerReferences?.[0]?.kind, 'KataConfig');
    // Stop the operator from seeing the deletion through its finalizer: strip it, then delete.
    await c().patch(KataConfigs, NAME, { metadata: { finalizers: null } });
    await c().delete(KataConfigs, NAME);
    await waitFor(async () => !(await kc()), { message: 'the KataConfig gone at once' });
    await waitFor(async () => !(await c().find(RuntimeClasses, KATA_RUNTIME_CLASS)), {
      message: 'the garbage collector deletes the RuntimeClass the KataConfig owned',
    });
    await waitFor(async () => !(await c().find(MachineConfigs, EXTENSION_MACHINE_CONFIG)), {
      message: 'and the MachineConfig',
    });
  });

  test('a deleted namespace finishes terminating', async () => {
    await c().create(Namespaces, { metadata: { name: 'osc-test-ns' } });
    await waitForDefaultServiceAccount(c(), 'osc-test-ns');
    await c().create(Pods, {
      ...kataPod('plain'),
      metadata: { name: 'plain', namespace: 'osc-test-ns' },
      spec: { containers: [{ name: 'a', image: 'x' }] },
    });
    await c().delete(Namespaces, 'osc-test-ns');
    await waitFor(async () => !(await c().find(Namespaces, 'osc-test-ns')), { timeoutMs: 120_000, message: 'the namespace gone' });
  });
});
