/**
 * The Kubernetes platform against the real thing: a kube-apiserver, the kube-controller-manager's
 * DaemonSet controller, the scheduler, kwok and the dev cluster's simulated kata-deploy. The test drives
 * the platform's pure plans the way the KataConfig controller does (read, plan, write, remember each
 * node's record) and checks what the cluster does with them: one node at a time, kata-deploy's labels,
 * a failed node rolled back with the rollout stopped, a spec change resuming it, and an uninstall that
 * leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import type { KataNodeStatus } from '../../src/api/katanode.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { DevCluster, FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { isAlreadyExists, isNotFound } from '../../src/kube/errors.ts';
import { DaemonSets, type Node, Nodes, Pods } from '../../src/kube/resources.ts';
import { INSTALL_LABEL, INSTALLER_NAME, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import { type KubernetesObserved, KubernetesPlatform } from '../../src/platform/kubernetes/platform.ts';
import type { NodeRecord, PlatformInput, PlatformPlan } from '../../src/platform/platform.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';
import { waitFor } from '../support/wait.ts';

const log = process.env.OSC_TEST_LOG ? createLogger({ level: 'debug', destination: process.stderr }) : silentLogger();
const NS = OPERATOR_NAMESPACE;

let dc: DevCluster;
const platform = new KubernetesPlatform({ namespace: NS, installDeadlineMs: 120_000 });
/** What the controller remembers: the KataNode statuses. */
const memory = new Map<string, KataNodeStatus>();
/** Every phase each node went through, in order (consecutive repeats dropped). */
const history = new Map<string, string[]>();
let kc: KataConfig = { metadata: { name: 'example-kataconfig', uid: 'kc-uid', generation: 1 }, spec: { logLevel: 'info' } };

let lastDs: unknown;
let lastPods: unknown;

async function observe(): Promise<{ observed: KubernetesObserved; nodes: Node[] }> {
  const c = dc.client;
  const ds = await c.find(DaemonSets, INSTALLER_NAME, NS);
  lastDs = { annotations: ds?.metadata.annotations, generation: ds?.metadata.generation, status: ds?.status };
  lastPods = (await c.list(Pods, { namespace: NS })).items.map((p) => ({
    name: p.metadata.name,
    node: p.spec?.nodeName,
    annotations: p.metadata.annotations,
    deleting: p.metadata.deletionTimestamp,
    status: p.status,
  }));
  const pods = (await c.list(Pods, { namespace: NS, labelSelector: `name=${INSTALLER_NAME}` })).items;
  return { observed: { ...(ds ? { daemonSet: ds } : {}), pods }, nodes: (await c.list(Nodes)).items };
}

async function execute(plan: PlatformPlan): Promise<void> {
  for (const step of plan.steps)
    await Promise.all(
      step.map(async (w) => {
        try {
          if (w.op === 'create') await dc.client.create(w.resource, w.object);
          else if (w.op === 'patch') await dc.client.patch(w.resource, w.name, w.patch, { namespace: w.namespace, type: w.type });
          else await dc.client.delete(w.resource, w.name, { namespace: w.namespace });
        } catch (e) {
          if (!isAlreadyExists(e) && !isNotFound(e)) throw e;
        }
      }),
    );
}

/** What the controller keeps of a record (lastKnownGood once Installed: no soak period here). */
function remember(records: NodeRecord[]): void {
  const now = new Date().toISOString();
  for (const name of [...memory.keys()]) if (!records.some((r) => r.node === name)) memory.delete(name);
  for (const r of records) {
    const prev = memory.get(r.node);
    const changed =
      !prev ||
      prev.phase !== r.phase ||
      prev.assigned?.id !== r.assigned?.id ||
      prev.active?.id !== r.active?.id ||
      (prev.error ?? '') !== r.error;
    const lastKnownGood = r.phase === 'Installed' && r.active ? r.active : prev?.lastKnownGood;
    memory.set(r.node, {
      phase: r.phase,
      ...(r.assigned ? { assigned: r.assigned } : {}),
      ...(r.active ? { active: r.active } : {}),
      ...(lastKnownGood ? { lastKnownGood } : {}),
      error: r.error,
      lastTransitionTime: changed ? now : (prev?.lastTransitionTime ?? now),
    });
    const h = history.get(r.node) ?? [];
    if (h[h.length - 1] !== r.phase) h.push(r.phase);
    if (process.env.OSC_TEST_TRACE) console.error(r.node, r.phase, r.assigned?.id, r.active?.id, r.error);
    history.set(r.node, h);
  }
}

/** One controller pass: observe, record, write. Answers the records. */
async function pass(uninstall = false): Promise<NodeRecord[]> {
  const { observed, nodes } = await observe();
  const selected = uninstall ? new Set<string>() : new Set(platform.select(nodes, kc.spec).nodes);
  const input: PlatformInput<KubernetesObserved> = { observed, nodes, kataConfig: kc, selected, now: new Date(), soakMs: 0 };
  const records = platform.records(input);
  remember(records);
  await execute(uninstall ? platform.uninstallPlan(input) : platform.installPlan(input));
  return records;
}

const phases = (records: NodeRecord[]) => Object.fromEntries(records.map((r) => [r.node, r.phase]));
const inFlight = (records: NodeRecord[]) => records.filter((r) => r.phase === 'Installing' || r.phase === 'Uninstalling').length;

before(async () => {
  dc = await DevCluster.start({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    log,
    kataDeploy: { installMs: 1500, cleanupMs: 500, restartBackoffMs: 2000 },
  });
  // A real KataConfig (no operator runs here) for the owner references of the installer objects: the
  // garbage collector deletes an object whose owner does not exist.
  const made = await dc.client.create(KataConfigs, { metadata: { name: 'example-kataconfig' }, spec: { logLevel: 'info' } });
  kc = { ...kc, metadata: { ...kc.metadata, uid: made.metadata.uid } };
});

after(async () => {
  await dc?.stop();
});

describe('kubernetes platform on the dev cluster', () => {
  test('install: one node at a time, in name order, each labelled by kata-deploy', async () => {
    let maxInFlight = 0;
    const records = await waitFor(
      async () => {
        const r = await pass();
        maxInFlight = Math.max(maxInFlight, inFlight(r));
        return r.length === 2 && r.every((x) => x.phase === 'Installed') ? r : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'both workers installed' },
    );
    assert.equal(maxInFlight, 1, 'never more than one node in flight');
    // Both wait while the installer DaemonSet is made; then worker-0 goes first, worker-1 after it.
    assert.deepEqual(history.get('worker-0'), ['WaitingToInstall', 'Installing', 'Installed']);
    assert.deepEqual(history.get('worker-1'), ['WaitingToInstall', 'Installing', 'Installed']);
    for (const name of ['worker-0', 'worker-1']) {
      const node = await dc.client.get(Nodes, name);
      assert.equal(node.metadata.labels?.[KATA_RUNTIME_LABEL], 'true', `${name} labelled by kata-deploy`);
      assert.equal(node.metadata.labels?.[INSTALL_LABEL], 'true');
    }
    assert.equal((await dc.client.get(Nodes, 'master-0')).metadata.labels?.[KATA_RUNTIME_LABEL], undefined, 'not the control plane');
    assert.equal(records[0]?.active?.id, records[0]?.assigned?.id);
    assert.equal(platform.rolloutComplete((await inputNow()) as PlatformInput<KubernetesObserved>), true);
  });

  test('a failed update rolls its node back to its last known good configuration and stops the rollout', async () => {
    const before = memory.get('worker-0')?.active?.id;
    assert.ok(before);
    await dc.client.patch(Nodes, 'worker-0', {
      metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'containerd did not restart' } },
    });
    kc = { ...kc, metadata: { ...kc.metadata, generation: 2 }, spec: { logLevel: 'debug' } };
    const failed = await waitFor(
      async () => {
        const r = await pass();
        const w0 = r.find((x) => x.node === 'worker-0');
        return w0?.phase === 'FailedToInstall' && w0.active?.id === before && w0.assigned?.id === before ? r : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'worker-0 rolled back' },
    );
    assert.match(failed.find((r) => r.node === 'worker-0')?.error ?? '', /containerd did not restart/);
    assert.equal(memory.get('worker-0')?.lastKnownGood?.id, before, 'active equals lastKnownGood');
    // Rolled back: its installer runs the old configuration again and kata-deploy's label is true.
    await waitFor(async () => {
      await pass();
      return (await dc.client.get(Nodes, 'worker-0')).metadata.labels?.[KATA_RUNTIME_LABEL] === 'true';
    });
    // worker-1 was never touched: still the old configuration, waiting.
    const r = await pass();
    assert.deepEqual(phases(r), { 'worker-0': 'FailedToInstall', 'worker-1': 'WaitingToInstall' });
    assert.equal(r.find((x) => x.node === 'worker-1')?.active?.id, before);
  });

  test('clearing the failure and touching the spec finishes the rollout', async () => {
    let last: NodeRecord[] = [];
    await dc.client.patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    kc = { ...kc, metadata: { ...kc.metadata, generation: 3 } };
    const records = await waitFor(
      async () => {
        const r = await pass();
        last = r;
        return r.length === 2 && r.every((x) => x.phase === 'Installed' && x.error === '') ? r : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'both workers on the debug configuration' },
    ).catch((e: Error) => {
      throw new Error(
        `${e.message}; records: ${JSON.stringify(last)}; DaemonSet: ${JSON.stringify(lastDs)}; pods: ${JSON.stringify(lastPods)}`,
      );
    });
    assert.equal(records[0]?.active?.id, records[1]?.active?.id);
    assert.match(records[0]?.active?.description ?? '', /debug on/);
  });

  test('uninstall: nodes leave one at a time, then every installer object goes', async () => {
    history.clear();
    let maxInFlight = 0;
    await waitFor(
      async () => {
        const r = await pass(true);
        maxInFlight = Math.max(maxInFlight, inFlight(r));
        return r.length === 0 && platform.uninstallComplete((await inputNow(true)) as PlatformInput<KubernetesObserved>);
      },
      { timeoutMs: 120_000, intervalMs: 200, message: 'kata off every node' },
    );
    assert.equal(maxInFlight, 1);
    assert.deepEqual(history.get('worker-0'), ['Uninstalling']);
    assert.deepEqual(history.get('worker-1'), ['WaitingToUninstall', 'Uninstalling']);
    await execute(platform.cleanupPlan((await inputNow(true)) as PlatformInput<KubernetesObserved>));
    await waitFor(async () => {
      const { observed, nodes } = await observe();
      return (
        !observed.daemonSet &&
        nodes.every((n) => n.metadata.labels?.[KATA_RUNTIME_LABEL] === undefined && n.metadata.labels?.[INSTALL_LABEL] === undefined)
      );
    });
  });
});

async function inputNow(uninstall = false): Promise<PlatformInput<KubernetesObserved>> {
  const { observed, nodes } = await observe();
  return {
    observed,
    nodes,
    kataConfig: kc,
    selected: uninstall ? new Set() : new Set(platform.select(nodes, kc.spec).nodes),
    now: new Date(),
    soakMs: 0,
  };
}
