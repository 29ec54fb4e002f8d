/**
 * The KataConfig controller's plan: the writes one pass makes in each main situation (the install's first
 * pass, a node installing, the rollout done, an uninstall blocked by pods, an uninstall done), from an
 * observation and a clock. The platform is a stand-in whose answers each test sets: the plan is
 * platform-neutral.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { type KataNode, KataNodes } from '../../src/api/katanode.ts';
import { KATACONFIG_FINALIZER } from '../../src/api/names.ts';
import { type KataConfigObserved, planInstall, planUninstall } from '../../src/controllers/kataconfig/plan.ts';
import { DaemonSets, type Node, Nodes, type Pod, type RuntimeClass } from '../../src/kube/resources.ts';
import type { NodeRecord, Platform, PlatformPlan } from '../../src/platform/platform.ts';
import type { PlannedWrite } from '../../src/runtime/applier.ts';

const NOW = new Date('2026-03-01T12:00:00Z');
const EARLIER = '2026-03-01T11:00:00Z';
const SOAK = 600_000;
const LABEL = 'example.com/kata';

const kataConfig = (over: { status?: KataConfig['status']; deleting?: boolean } = {}): KataConfig =>
  ({
    metadata: {
      name: 'example',
      uid: 'kc-uid',
      finalizers: [KATACONFIG_FINALIZER],
      ...(over.deleting ? { deletionTimestamp: EARLIER } : {}),
    },
    spec: {},
    ...(over.status ? { status: over.status } : {}),
  }) as KataConfig;

const inProgress = (reason: string, status: 'True' | 'False' = 'True') => ({
  conditions: [{ type: 'InProgress', status, reason, message: 'x', lastTransitionTime: EARLIER }],
});

const worker = (name: string): Node => ({ metadata: { name, uid: `${name}-uid`, labels: { 'node-role.kubernetes.io/worker': '' } } });

const kataNode = (name: string, status: KataNode['status']): KataNode => ({
  metadata: {
    name,
    uid: `kn-${name}`,
    ownerReferences: [
      {
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        name: 'example',
        uid: 'kc-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  },
  status,
});

const config = { id: 'config-a', description: 'with kata' };

/** A platform whose records and plans the test gives. */
function platform(answers: {
  records?: NodeRecord[];
  install?: PlatformPlan;
  uninstall?: PlatformPlan;
  cleanup?: PlatformPlan;
  installing?: string[];
  uninstallComplete?: boolean;
}): Platform<unknown> {
  const none = (): PlatformPlan => ({ steps: [], pending: 0 });
  return {
    name: 'example',
    supportsPeerPods: true,
    watch: () => ({ caches: [], observe: () => ({}) }),
    select: (nodes) => ({ nodes: nodes.map((n) => n.metadata.name ?? '').sort(), noEligibleNodes: false }),
    records: () => answers.records ?? [],
    rolloutComplete: () => true,
    installing: () => answers.installing ?? [],
    installPlan: () => answers.install ?? none(),
    uninstallPlan: () => answers.uninstall ?? none(),
    uninstallComplete: () => answers.uninstallComplete ?? false,
    cleanupPlan: () => answers.cleanup ?? none(),
    leftoversPlan: none,
    runtimeClass: () => ({ handler: 'kata', nodeSelector: { [LABEL]: 'true' } }),
    kataNodeSelector: () => ({ [LABEL]: 'true' }),
    kataNodeTolerations: () => [],
  };
}

const observed = (kc: KataConfig, p: Platform<unknown>, over: Partial<KataConfigObserved> = {}): KataConfigObserved => ({
  kataConfig: kc,
  nodes: [worker('worker-0'), worker('worker-1')],
  kataNodes: [],
  platform: p,
  platformObserved: {},
  pods: [],
  soakMs: SOAK,
  blockedRecheckMs: 15_000,
  eligibilityRecheckMs: 30_000,
  ...over,
});

/** The planned writes, one line each: what, to which object, and the gist of it. */
function described(steps: PlannedWrite[][]): string[][] {
  return steps.map((step) =>
    step.map((w) => {
      const kind = w.resource.kind.toLowerCase();
      if (w.op === 'apply' || w.op === 'create') return `${w.op} ${kind}/${w.object.metadata.name}`;
      if (w.op === 'status') return `status ${kind}/${w.name} ${(w.status as { phase?: string }).phase ?? ''}`.trimEnd();
      if (w.op === 'delete') return `delete ${kind}/${w.name}${w.uid ? ` uid=${w.uid}` : ''}`;
      return `patch ${kind}/${w.name}`;
    }),
  );
}

const labelPatch = (node: string): PlatformPlan['steps'][number][number] => ({
  op: 'patch',
  resource: Nodes,
  name: node,
  patch: { metadata: { labels: { [LABEL]: 'true' } } },
});

describe('KataConfig plan', () => {
  test('install start: the first pass writes the documented first state and nothing else', () => {
    const p = platform({
      records: [{ node: 'worker-0', phase: 'WaitingToInstall', error: '' }],
      install: { steps: [[labelPatch('worker-0')]], pending: 0 },
    });
    const plan = planInstall(observed(kataConfig(), p), NOW);
    assert.deepEqual(plan.status, {
      inProgress: { status: 'True', reason: 'Installing', message: 'Performing initial installation of kata on cluster' },
      kataNodes: { nodeCount: 0, readyNodeCount: 0 },
    });
    assert.deepEqual(plan.steps, []);
    assert.deepEqual(plan.ensureRuntimeClasses, []);
    assert.equal(plan.requeueAfterMs, 0, 'the install proper starts at once');
  });

  test('the next pass: the platform writes (a node patch saying what the node shows once made), then the KataNode of each assigned node made with its status', () => {
    const p = platform({
      records: [
        { node: 'worker-0', phase: 'WaitingToInstall', assigned: config, error: '' },
        { node: 'worker-1', phase: 'WaitingToInstall', error: '' },
      ],
      install: { steps: [[labelPatch('worker-0'), labelPatch('worker-1')]], pending: 0 },
    });
    const plan = planInstall(observed(kataConfig({ status: inProgress('Installing') }), p), NOW);
    assert.deepEqual(described(plan.steps), [['patch node/worker-0', 'patch node/worker-1']]);
    // One request per KataNode: it has no status subresource, so it is made with its status; worker-1,
    // waiting its turn with nothing assigned, gets its KataNode once it has a configuration to report.
    assert.deepEqual(described(plan.kataNodes?.writes ?? []), [['apply katanode/worker-0']]);
    const patch = plan.steps[0]?.[0];
    assert.ok(patch?.op === 'patch');
    assert.deepEqual(
      patch.shows,
      { metadata: { labels: { [LABEL]: 'true' } } },
      'the applier skips it once the node cache shows the label',
    );
    const made = plan.kataNodes?.writes[0]?.[0];
    assert.ok(made?.op === 'apply');
    assert.deepEqual(
      made.object.metadata.ownerReferences?.map((r) => r.uid),
      ['kc-uid'],
      'owned by the KataConfig in effect',
    );
    assert.deepEqual((made.object as KataNode).status, {
      phase: 'WaitingToInstall',
      assigned: config,
      error: '',
      lastTransitionTime: '2026-03-01T12:00:00Z',
    });
    assert.equal(plan.status?.inProgress.reason, 'Installing');
    assert.deepEqual(plan.status?.kataNodes, { nodeCount: 2, readyNodeCount: 0, waitingToInstall: ['worker-0', 'worker-1'] });
    assert.equal(plan.morePending, false);
  });

  test('node progressing: only the KataNode whose state changed is written, with a new transition time', () => {
    const waiting = { phase: 'WaitingToInstall' as const, assigned: config, error: '', lastTransitionTime: EARLIER };
    const p = platform({
      records: [
        { node: 'worker-0', phase: 'Installing', assigned: config, error: '' },
        { node: 'worker-1', phase: 'WaitingToInstall', assigned: config, error: '' },
      ],
    });
    const kataNodes = [kataNode('worker-0', waiting), kataNode('worker-1', waiting)];
    const plan = planInstall(observed(kataConfig({ status: inProgress('Installing') }), p, { kataNodes }), NOW);
    assert.deepEqual(plan.steps, []);
    assert.deepEqual(described(plan.kataNodes?.writes ?? []), [['status katanode/worker-0 Installing']]);
    const status = plan.kataNodes?.writes[0]?.[0];
    assert.ok(status?.op === 'status');
    assert.equal((status.status as { lastTransitionTime: string }).lastTransitionTime, '2026-03-01T12:00:00Z');
    assert.deepEqual(plan.status?.kataNodes, { nodeCount: 2, readyNodeCount: 0, installing: ['worker-0'], waitingToInstall: ['worker-1'] });
  });

  test('node done: the RuntimeClass before the status that names it, the KataNode written, lastKnownGood due after the soak', () => {
    const installing = { phase: 'Installing' as const, assigned: config, error: '', lastTransitionTime: EARLIER };
    const p = platform({ records: [{ node: 'worker-0', phase: 'Installed', assigned: config, active: config, error: '' }] });
    const plan = planInstall(
      observed(kataConfig({ status: inProgress('Installing') }), p, {
        nodes: [worker('worker-0')],
        kataNodes: [kataNode('worker-0', installing)],
      }),
      NOW,
    );
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata']);
    assert.deepEqual(plan.status, {
      inProgress: { status: 'False', reason: '', message: '' },
      kataNodes: { nodeCount: 1, readyNodeCount: 1, installed: ['worker-0'] },
      runtimeClasses: ['kata'],
    });
    assert.deepEqual(described(plan.kataNodes?.writes ?? []), [['status katanode/worker-0 Installed']]);
    assert.equal(plan.requeueAfterMs, SOAK, 'looks again when the soak period makes the configuration known good');
    // Nothing changed since: nothing is written.
    const written = plan.kataNodes?.writes[0]?.[0];
    assert.ok(written?.op === 'status');
    const settled = planInstall(
      observed(kataConfig({ status: { ...inProgress('', 'False'), runtimeClasses: ['kata'] } }), p, {
        nodes: [worker('worker-0')],
        kataNodes: [kataNode('worker-0', written.status as KataNode['status'])],
      }),
      new Date(NOW.getTime() + 1000),
    );
    assert.deepEqual(settled.steps, []);
    assert.deepEqual(settled.kataNodes?.writes, []);
  });

  test('KataConfig deleted during a rollout: nothing is taken off until the node in flight settles, and the pass looks again at its deadline', () => {
    const p = platform({
      records: [{ node: 'worker-0', phase: 'Installing', assigned: config, error: '' }],
      installing: ['worker-0'],
      // The installer's deadline is 42 s away: past it the node fails, and the uninstall may start.
      install: { steps: [], pending: 1, recheckAfterMs: 42_000 },
      uninstall: { steps: [[labelPatch('worker-0')]], pending: 0 },
    });
    const kc = kataConfig({ deleting: true, status: { ...inProgress('', 'True'), runtimeClasses: ['kata'] } });
    const plan = planUninstall(observed(kc, p, { nodes: [worker('worker-0')] }), NOW);
    assert.deepEqual(plan.steps, [], 'kata stays where it is');
    assert.equal(plan.requeueAfterMs, 42_000, 'a silent installer wakes nothing: the pass looks again at its deadline');
  });

  test('uninstall blocked by pods: the plan asks for the pods as the API server lists them, then says who blocks', () => {
    const installed = {
      phase: 'Installed' as const,
      assigned: config,
      active: config,
      lastKnownGood: config,
      error: '',
      lastTransitionTime: EARLIER,
    };
    const p = platform({
      records: [{ node: 'worker-0', phase: 'Installed', assigned: config, active: config, error: '' }],
      uninstall: { steps: [[labelPatch('worker-0')]], pending: 0 },
    });
    const kc = kataConfig({ deleting: true, status: { ...inProgress('', 'False'), runtimeClasses: ['kata'] } });
    const obs = observed(kc, p, { nodes: [worker('worker-0')], kataNodes: [kataNode('worker-0', installed)] });
    assert.equal(planUninstall(obs, NOW).needsLivePods, true);
    const pod = { metadata: { name: 'app', namespace: 'default' }, spec: { runtimeClassName: 'kata', containers: [] } } as Pod;
    const plan = planUninstall({ ...obs, livePods: [pod] }, NOW);
    assert.deepEqual(plan.status, {
      inProgress: {
        status: 'False',
        reason: 'BlockedByExistingKataPods',
        message: 'Existing pods using "kata" RuntimeClass found. Please delete the pods manually for KataConfig deletion to proceed',
      },
    });
    assert.deepEqual(plan.steps, [], 'kata stays on the nodes: no platform write');
    assert.deepEqual(plan.kataNodes?.writes, []);
    assert.equal(plan.cleanUp, undefined);
    assert.equal(plan.requeueAfterMs, 15_000);
  });

  test('uninstall done: the platform cleans up, every KataNode goes (pinned to its UID), the RuntimeClasses too', () => {
    const p = platform({
      records: [],
      uninstallComplete: true,
      cleanup: { steps: [[{ op: 'delete', resource: DaemonSets, name: 'installer', namespace: 'osc' }]], pending: 0 },
    });
    const kc = kataConfig({ deleting: true, status: { ...inProgress('Uninstalling'), runtimeClasses: ['kata'], uninstallStarted: true } });
    const left = kataNode('worker-0', { phase: 'WaitingToUninstall', error: '', lastTransitionTime: EARLIER });
    const plan = planUninstall(observed(kc, p, { kataNodes: [left] }), NOW);
    assert.equal(plan.status, undefined, 'no status: the KataConfig goes');
    assert.deepEqual(plan.deleteRuntimeClasses, ['kata']);
    assert.ok(plan.cleanUp);
    assert.deepEqual(described(plan.cleanUp), [['delete daemonset/installer'], ['delete katanode/worker-0 uid=kn-worker-0']]);
    const first = plan.cleanUp[0]?.[0];
    assert.ok(first?.op === 'delete');
    assert.equal(first.uncached, true, 'straight to the API server: a cache may lag behind a recent create');
    assert.equal(KataNodes.kind, 'KataNode');
  });

  test('uninstall done while a RuntimeClass it owns is still there: deleted, and the KataConfig waits for it to go', () => {
    const p = platform({
      records: [],
      uninstallComplete: true,
      cleanup: { steps: [[{ op: 'delete', resource: DaemonSets, name: 'installer', namespace: 'osc' }]], pending: 0 },
    });
    const kc = kataConfig({ deleting: true, status: { ...inProgress('Uninstalling'), runtimeClasses: ['kata'], uninstallStarted: true } });
    const owner = { apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig', name: 'example', uid: 'kc-uid' };
    const rc = (name: string, deleting: boolean): RuntimeClass => ({
      metadata: { name, ownerReferences: [owner], ...(deleting ? { deletionTimestamp: NOW.toISOString() } : {}) },
      handler: name,
    });
    // kata-remote is no longer in status (peer pods turned off meanwhile) but still owned: it goes too.
    const live = planUninstall(observed(kc, p, { runtimeClasses: [rc('kata', false), rc('kata-remote', false)] }), NOW);
    assert.deepEqual(live.deleteRuntimeClasses, ['kata', 'kata-remote']);
    assert.equal(live.cleanUp, undefined, 'the finalizer stays while a class is there');
    assert.equal(live.requeueAfterMs, 5_000);
    // Being deleted, held by its cleanup finalizer: not deleted again, still waited for.
    const terminating = planUninstall(observed(kc, p, { runtimeClasses: [rc('kata', true)] }), NOW);
    assert.deepEqual(terminating.deleteRuntimeClasses, []);
    assert.equal(terminating.cleanUp, undefined);
    // Gone: the clean-up and the finalizer.
    const gone = planUninstall(observed(kc, p, { runtimeClasses: [] }), NOW);
    assert.ok(gone.cleanUp);
  });
});
