/**
 * KataNode records on the simulated OpenShift cluster: at every step of a lifecycle (install, a failed
 * update and its recovery, a node leaving the selection, uninstall) each KataNode agrees with the Machine
 * Config Operator's own view of its node (the node annotations) and with the KataConfig's kataNodes lists;
 * lastKnownGood follows a short soak; nothing is written while nothing changes; uninstall deletes them all
 * before the KataConfig goes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs, type KataNodes as KataNodeLists, messages } from '../../src/api/kataconfig.ts';
import { type KataNode, type KataNodePhase, KataNodes } from '../../src/api/katanode.ts';
import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../../src/api/names.ts';
import { FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { Nodes } from '../../src/kube/resources.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { type RunningOperator, StatusRecorder, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const SOAK_MS = 1000;

const LIST_OF: Record<KataNodePhase, keyof KataNodeLists> = {
  Installed: 'installed',
  Installing: 'installing',
  WaitingToInstall: 'waitingToInstall',
  FailedToInstall: 'failedToInstall',
  Uninstalling: 'uninstalling',
  WaitingToUninstall: 'waitingToUninstall',
  FailedToUninstall: 'failedToUninstall',
};

describe('KataNode records agree with the Machine Config Operator at every step', () => {
  const cluster = useDevCluster({ workers: 2 });
  let op: RunningOperator;
  let recorder: StatusRecorder;
  /** Every distinct status each KataNode went through, from a watch. */
  const history = new Map<string, KataNode['status'][]>();
  const ac = new AbortController();
  let kataNodes: Informer<KataNode>;
  let watching: Promise<void>;

  before(async () => {
    // No platform named: discovery finds the MCO's API group on the dev cluster.
    op = await startOperator(cluster.dev, { kataConfig: { soakMs: SOAK_MS } });
    recorder = new StatusRecorder(cluster.dev.client, KC);
    kataNodes = new Informer(cluster.dev.client, KataNodes);
    const push = (k: KataNode) => {
      const h = history.get(k.metadata.name ?? '') ?? [];
      if (k.status && JSON.stringify(h.at(-1)) !== JSON.stringify(k.status)) h.push(k.status);
      history.set(k.metadata.name ?? '', h);
    };
    kataNodes.addEventHandler({ add: push, update: (_o, n) => push(n) });
    watching = kataNodes.run(ac.signal);
    await Promise.all([recorder.synced(), kataNodes.waitForSync()]);
  });
  after(async () => {
    ac.abort();
    await watching;
    await recorder?.stop();
    await op?.stop();
  });

  const client = () => cluster.dev.client;
  const settled = () => {
    const c = recorder.current?.status?.conditions?.find((x) => x.type === 'InProgress');
    return c?.status === 'False' && c.reason === '';
  };

  /**
   * What disagrees now between the KataNodes, the nodes' MCO annotations and the KataConfig's lists (an
   * independent reading of the annotations, not the operator's code). Empty when all agree.
   */
  async function disagreements(): Promise<string[]> {
    const problems: string[] = [];
    const kc = await client().find(KataConfigs, KC);
    const lists = kc?.status?.kataNodes ?? { nodeCount: 0, readyNodeCount: 0 };
    const listed = new Map<string, string>();
    for (const [list, names] of Object.entries(lists)) if (Array.isArray(names)) for (const n of names) listed.set(n, list);
    const records = (await client().list(KataNodes)).items;
    for (const k of records) {
      const name = k.metadata.name ?? '';
      const node = await client().get(Nodes, name);
      const a = node.metadata.annotations ?? {};
      const s = k.status;
      if (!s) {
        problems.push(`${name}: no status`);
        continue;
      }
      if (s.assigned?.id !== a[MCO_DESIRED_CONFIG])
        problems.push(`${name}: assigned ${s.assigned?.id} vs desiredConfig ${a[MCO_DESIRED_CONFIG]}`);
      if (s.active?.id !== a[MCO_CURRENT_CONFIG])
        problems.push(`${name}: active ${s.active?.id} vs currentConfig ${a[MCO_CURRENT_CONFIG]}`);
      const error = a[MCO_STATE] === 'Degraded' ? (a[MCO_REASON] ?? '') : '';
      if (s.error !== error) problems.push(`${name}: error "${s.error}" vs MCO reason "${error}"`);
      if (!s.phase || listed.get(name) !== LIST_OF[s.phase]) problems.push(`${name}: phase ${s.phase} vs list ${listed.get(name)}`);
      if (!k.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig' && r.uid === kc?.metadata.uid))
        problems.push(`${name}: not owned by the KataConfig`);
    }
    for (const n of listed.keys()) if (!records.some((k) => k.metadata.name === n)) problems.push(`${n}: listed but no KataNode`);
    return problems;
  }
  // A disagreement is "not yet" (thrown, so that a timeout reports it); the operator catches up within moments.
  const agree = (step: string) =>
    waitFor(
      async () => {
        const problems = await disagreements();
        if (problems.length) throw new Error(problems.join('; '));
        return true;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: `KataNodes agree with the MCO (${step})` },
    );

  test('install: one KataNode per selected node, through the rollout to Installed, then known good after the soak', async () => {
    await client().create(KataConfigs, { metadata: { name: KC }, spec: { logLevel: 'info' } } as KataConfig);
    await waitFor(() => settled() && recorder.current?.status?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 120_000,
      message: 'kata installed on both workers',
    });
    await agree('installed');
    const order: KataNodePhase[] = ['WaitingToInstall', 'Installing', 'Installed'];
    for (const n of ['worker-0', 'worker-1']) {
      const phases = (history.get(n) ?? []).map((s) => s?.phase as KataNodePhase);
      assert.equal(phases.at(-1), 'Installed', `${n}: ${phases.join(' → ')}`);
      assert.ok(phases.includes('Installing'), `${n} was seen installing: ${phases.join(' → ')}`);
      for (let i = 1; i < phases.length; i++)
        assert.ok(
          order.indexOf(phases[i] as KataNodePhase) >= order.indexOf(phases[i - 1] as KataNodePhase),
          `${n}: ${phases.join(' → ')}`,
        );
    }
    await waitFor(
      () =>
        ['worker-0', 'worker-1'].every((n) => {
          const s = kataNodes.get(n)?.status;
          return s?.lastKnownGood?.id !== undefined && s.lastKnownGood.id === s.assigned?.id;
        }),
      { timeoutMs: 60_000, message: 'lastKnownGood = assigned after the soak' },
    );
    const s = kataNodes.get('worker-0')?.status;
    assert.match(s?.active?.id ?? '', /^rendered-kata-oc-/);
    assert.match(s?.active?.description ?? '', /pool kata-oc, with kata/);
    assert.equal(s?.error, '');
  });

  test('kubectl get katanodes shows phase, the three configurations and the error', async () => {
    const r = await cluster.dev.controlPlane.kubectl(['get', 'katanodes']);
    assert.equal(r.code, 0, r.stderr);
    const [header, ...rows] = r.stdout.trim().split('\n');
    assert.match(header ?? '', /^NAME\s+PHASE\s+ASSIGNED\s+ACTIVE\s+LAST KNOWN GOOD\s+ERROR\s+AGE$/);
    assert.equal(rows.length, 2);
    assert.match(rows[0] ?? '', /^worker-0\s+Installed\s+rendered-kata-oc-\S+\s+rendered-kata-oc-\S+\s+rendered-kata-oc-\S+\s+\S+$/);
  });

  test('idle: a reconcile with nothing new writes no KataNode', async () => {
    const { metrics } = op.operator.manager;
    const written = async () =>
      (await metrics.statusWrites.get()).values.find((v) => v.labels.resource === 'katanodes' && v.labels.result === 'written')?.value ?? 0;
    const reconciles = async () =>
      (await metrics.reconcileTotal.get()).values
        .filter((v) => v.labels.controller === 'kataconfig' && v.labels.result === 'success')
        .reduce((n, v) => n + v.value, 0);
    const before = { written: await written(), reconciles: await reconciles() };
    // A node change wakes the controller; nothing about the nodes' kata state changes.
    await client().patch(Nodes, 'worker-0', { metadata: { labels: { 'example.com/touched': 'yes' } } });
    await waitFor(async () => (await reconciles()) > before.reconciles, { message: 'the controller reconciled the node change' });
    assert.equal(await written(), before.written, 'no KataNode status written');
  });

  test('a failed update: error is the MCO reason, active stays, lastKnownGood stays; recovery clears it', async () => {
    const before = kataNodes.get('worker-1')?.status;
    await client().patch(Nodes, 'worker-1', {
      metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'failed to pull the extension image' } },
    });
    await client().patch(KataConfigs, KC, { spec: { logLevel: 'warn' } });
    await waitFor(() => kataNodes.get('worker-1')?.status?.phase === 'FailedToInstall', { timeoutMs: 120_000, message: 'failed' });
    await agree('failed');
    const failed = kataNodes.get('worker-1')?.status;
    assert.equal(failed?.error, 'failed to pull the extension image');
    assert.equal(failed?.active?.id, before?.active?.id, 'the node still runs what it ran');
    assert.notEqual(failed?.assigned?.id, failed?.active?.id, 'assigned is the new configuration');
    assert.deepEqual(failed?.lastKnownGood, before?.lastKnownGood, 'a failed configuration never becomes known good');
    const message = recorder.current?.status?.conditions?.find((c) => c.type === 'InProgress')?.message;
    assert.equal(message, messages.failed('worker-1', 'failed to pull the extension image'));

    await client().patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    await waitFor(() => settled() && recorder.current?.status?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 120_000,
      message: 'recovered',
    });
    await agree('recovered');
    assert.equal(kataNodes.get('worker-1')?.status?.error, '');
  });

  test('a node leaving the selection keeps its KataNode while kata leaves it, then loses it', async () => {
    await client().patch(Nodes, 'worker-0', { metadata: { labels: { kata: 'yes' } } });
    await client().patch(KataConfigs, KC, {
      spec: { kataConfigPoolSelector: { matchExpressions: [{ key: 'kata', operator: 'In', values: ['yes'] }] } },
    });
    await waitFor(() => settled() && recorder.current?.status?.kataNodes?.nodeCount === 1, {
      timeoutMs: 120_000,
      message: 'worker-1 left',
    });
    await agree('worker-1 left');
    await waitFor(() => !kataNodes.get('worker-1'), { message: 'worker-1 KataNode deleted' });
    const phases = (history.get('worker-1') ?? []).map((s) => s?.phase);
    assert.ok(
      phases.includes('Uninstalling') || phases.includes('WaitingToUninstall'),
      `worker-1 was recorded leaving: ${phases.join(' → ')}`,
    );
    assert.deepEqual(
      kataNodes.list().map((k) => k.metadata.name),
      ['worker-0'],
    );
  });

  test('uninstall: every KataNode goes before the KataConfig does', async () => {
    await client().delete(KataConfigs, KC);
    await waitFor(async () => !(await client().find(KataConfigs, KC)), { timeoutMs: 120_000, message: 'KataConfig gone' });
    assert.deepEqual((await client().list(KataNodes)).items, [], 'no KataNode left once the finalizer went');
  });
});
