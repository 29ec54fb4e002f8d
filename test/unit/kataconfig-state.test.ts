import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfigSpec } from '../../src/api/kataconfig.ts';
import { activeKataConfig, messages } from '../../src/api/kataconfig.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import {
  type Classification,
  classifyRecords,
  done,
  installCondition,
  podsUsing,
  runtimeClassesInUse,
  runtimeClassFor,
  uninstallCondition,
} from '../../src/controllers/kataconfig/state.ts';
import type { Node } from '../../src/kube/resources.ts';
import { cachedPool, poolChanged, poolSettled, poolTargetHasKata } from '../../src/platform/openshift/machineconfig.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';
import { isCompactCluster, type McoRecordInput, mcoNodeRecords } from '../../src/platform/openshift/records.ts';
import { sortedByName } from '../../src/platform/selection.ts';

/** The MCO's view as records, classified the platform-neutral way: what the controller does on OpenShift. */
const classifyNodes = (i: McoRecordInput): Classification =>
  classifyRecords(mcoNodeRecords(i), i.selected.size, i.selected.size === 0 || poolTargetHasKata(i.kataPool, i.wantCrioConfig));
/** OpenShift's selection (a compact cluster is recognised from the nodes). */
const selectNodes = (nodes: Node[], spec: KataConfigSpec, _compact: boolean) => openShiftPlatform().select(nodes, spec);

const KATA_TARGET = 'rendered-kata-oc-aaa';
const WORKER_TARGET = 'rendered-worker-bbb';

function node(
  name: string,
  opts: { roles?: string[]; labels?: Record<string, string>; state?: string; current?: string; reason?: string } = {},
): Node {
  const labels: Record<string, string> = { ...opts.labels };
  for (const r of opts.roles ?? ['worker']) labels[`node-role.kubernetes.io/${r}`] = '';
  const annotations: Record<string, string> = {};
  if (opts.state) annotations['machineconfiguration.openshift.io/state'] = opts.state;
  if (opts.current) annotations['machineconfiguration.openshift.io/currentConfig'] = opts.current;
  if (opts.reason) annotations['machineconfiguration.openshift.io/reason'] = opts.reason;
  return { metadata: { name, labels, annotations } };
}

function pool(name: string, target: string, sources: string[]): MachineConfigPool {
  return {
    metadata: { name, generation: 1 },
    spec: { configuration: { name: target, source: sources.map((s) => ({ name: s })) } },
    status: {
      observedGeneration: 1,
      conditions: [
        { type: 'Updated', status: 'True' },
        { type: 'Updating', status: 'False' },
      ],
    },
  };
}

const kataPool = pool('kata-oc', KATA_TARGET, ['00-worker', '50-enable-sandboxed-containers-extension']);
const workerPool = pool('worker', WORKER_TARGET, ['00-worker']);

const classify = (nodes: Node[], selected: string[], extra: Partial<Parameters<typeof classifyNodes>[0]> = {}): Classification =>
  classifyNodes({ nodes, selected: new Set(selected), compact: false, kataPool, basePool: workerPool, wantCrioConfig: false, ...extra });

describe('node classification (the table of docs/kataconfig.md)', () => {
  const rows: { name: string; n: Node; selected: boolean; list: string | undefined }[] = [
    {
      name: 'Done, at the kata target, in the kata pool',
      n: node('a', { state: 'Done', current: KATA_TARGET }),
      selected: true,
      list: 'installed',
    },
    {
      name: 'Done, at the worker target, not in the kata pool',
      n: node('a', { state: 'Done', current: WORKER_TARGET }),
      selected: false,
      list: undefined,
    },
    { name: 'Working, in the kata pool', n: node('a', { state: 'Working', current: WORKER_TARGET }), selected: true, list: 'installing' },
    {
      name: 'Working, leaving the kata pool',
      n: node('a', { state: 'Working', current: KATA_TARGET }),
      selected: false,
      list: 'uninstalling',
    },
    {
      name: 'Done, not at the kata target, in the kata pool',
      n: node('a', { state: 'Done', current: WORKER_TARGET }),
      selected: true,
      list: 'waitingToInstall',
    },
    {
      name: 'Done, still on kata, not in the kata pool',
      n: node('a', { state: 'Done', current: KATA_TARGET }),
      selected: false,
      list: 'waitingToUninstall',
    },
    {
      name: 'Degraded, in the kata pool',
      n: node('a', { state: 'Degraded', current: WORKER_TARGET, reason: 'boom' }),
      selected: true,
      list: 'failedToInstall',
    },
    {
      name: 'Degraded, leaving the kata pool',
      n: node('a', { state: 'Degraded', current: KATA_TARGET, reason: 'boom' }),
      selected: false,
      list: 'failedToUninstall',
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const c = classify([row.n], row.selected ? ['a'] : []);
      const lists = Object.entries(c.kataNodes).filter(([k]) => k !== 'nodeCount' && k !== 'readyNodeCount');
      assert.deepEqual(lists, row.list ? [[row.list, ['a']]] : []);
      assert.equal(c.kataNodes.nodeCount, row.selected ? 1 : 0);
      assert.equal(c.kataNodes.readyNodeCount, row.list === 'installed' ? 1 : 0);
      if (row.list?.startsWith('failed')) assert.deepEqual(c.failures, [{ node: 'a', reason: 'boom' }]);
    });
  }

  test('a Working node of the worker pool that never had kata is not listed', () => {
    const c = classify([node('a', { state: 'Working', current: 'rendered-worker-old' })], []);
    assert.deepEqual(c.kataNodes, { nodeCount: 0, readyNodeCount: 0 });
  });

  test('a node at the kata target is not installed until the target contains our MachineConfig', () => {
    const stale = pool('kata-oc', KATA_TARGET, ['00-worker']);
    const c = classify([node('a', { state: 'Done', current: KATA_TARGET })], ['a'], { kataPool: stale });
    assert.deepEqual(c.kataNodes.waitingToInstall, ['a']);
    assert.equal(c.settled, false);
  });

  test('with a log level set, the target must also carry the generated CRI-O config', () => {
    const withCrio = pool('kata-oc', KATA_TARGET, ['50-enable-sandboxed-containers-extension', '99-kata-oc-generated-containerruntime']);
    assert.equal(poolTargetHasKata(withCrio, true), true);
    assert.equal(poolTargetHasKata(withCrio, false), false, 'a leftover CRI-O config means the rollout back to info is pending');
    assert.equal(poolTargetHasKata(kataPool, true), false);
    // A CRI-O config someone made for the worker pool is not ours.
    const theirs = pool('kata-oc', KATA_TARGET, ['50-enable-sandboxed-containers-extension', '99-worker-generated-containerruntime']);
    assert.equal(poolTargetHasKata(theirs, false), true);
  });

  test('lists are sorted by name with numbers in order, and empty lists are omitted', () => {
    const nodes = ['worker-10', 'worker-2', 'worker-1'].map((n) => node(n, { state: 'Done', current: WORKER_TARGET }));
    const c = classify(nodes, ['worker-10', 'worker-2', 'worker-1']);
    assert.deepEqual(c.kataNodes, { nodeCount: 3, readyNodeCount: 0, waitingToInstall: ['worker-1', 'worker-2', 'worker-10'] });
  });

  test('settled only when every selected node is installed and nothing else moves', () => {
    const a = node('a', { state: 'Done', current: KATA_TARGET });
    const b = node('b', { state: 'Done', current: KATA_TARGET });
    assert.equal(classify([a, b], ['a', 'b']).settled, true);
    assert.equal(classify([a, node('b', { state: 'Working', current: KATA_TARGET })], ['a']).settled, false, 'a node leaving');
    assert.equal(classify([a], ['a', 'gone']).settled, false, 'a selected node not yet installed');
  });

  test('compact clusters: masters in the master pool; uninstall lists masters until the pool drops kata', () => {
    const masterWithKata = pool('master', 'rendered-master-k', ['00-master', '50-enable-sandboxed-containers-extension']);
    const masterWithout = pool('master', 'rendered-master-n', ['00-master']);
    const m = (n: string, state: string, current: string) => node(n, { roles: ['master', 'worker'], state, current });
    const install = classifyNodes({
      nodes: [m('master-0', 'Done', 'rendered-master-k'), m('master-1', 'Working', 'rendered-master-0')],
      selected: new Set(['master-0', 'master-1']),
      compact: true,
      kataPool: masterWithKata,
      basePool: masterWithKata,
      wantCrioConfig: false,
    });
    assert.deepEqual(install.kataNodes, { nodeCount: 2, readyNodeCount: 1, installed: ['master-0'], installing: ['master-1'] });
    const uninstall = classifyNodes({
      nodes: [
        m('master-0', 'Done', 'rendered-master-k'),
        m('master-1', 'Working', 'rendered-master-k'),
        m('master-2', 'Done', 'rendered-master-n'),
      ],
      selected: new Set(),
      compact: true,
      kataPool: masterWithout,
      basePool: masterWithout,
      wantCrioConfig: false,
    });
    assert.deepEqual(uninstall.kataNodes, {
      nodeCount: 0,
      readyNodeCount: 0,
      uninstalling: ['master-1'],
      waitingToUninstall: ['master-0'],
    });
  });
});

describe('node selection', () => {
  const nodes = [
    node('master-0', { roles: ['master', 'control-plane'] }),
    node('worker-0', { labels: { zone: 'a', 'feature.node.kubernetes.io/runtime.kata': 'true' } }),
    node('worker-1', { labels: { zone: 'b' } }),
    node('worker-2', { labels: { zone: 'c', 'feature.node.kubernetes.io/runtime.kata': 'true' } }),
  ];

  test('all workers by default, never masters', () => {
    assert.deepEqual(selectNodes(nodes, {}, false), { nodes: ['worker-0', 'worker-1', 'worker-2'], noEligibleNodes: false });
  });

  test('kataConfigPoolSelector: matchLabels and every matchExpressions operator', () => {
    const sel = (s: object) => selectNodes(nodes, { kataConfigPoolSelector: s }, false).nodes;
    assert.deepEqual(sel({ matchLabels: { zone: 'b' } }), ['worker-1']);
    assert.deepEqual(sel({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'c'] }] }), ['worker-0', 'worker-2']);
    assert.deepEqual(sel({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }), ['worker-1', 'worker-2']);
    assert.deepEqual(sel({ matchExpressions: [{ key: 'feature.node.kubernetes.io/runtime.kata', operator: 'Exists' }] }), [
      'worker-0',
      'worker-2',
    ]);
    assert.deepEqual(sel({ matchExpressions: [{ key: 'feature.node.kubernetes.io/runtime.kata', operator: 'DoesNotExist' }] }), [
      'worker-1',
    ]);
    assert.deepEqual(
      sel({ matchLabels: { zone: 'a' }, matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }),
      [],
      'all terms must hold',
    );
    assert.deepEqual(sel({}), ['worker-0', 'worker-1', 'worker-2'], 'an empty selector selects every worker');
  });

  test('checkNodeEligibility keeps the NFD-labelled nodes, and says when there are none', () => {
    assert.deepEqual(selectNodes(nodes, { checkNodeEligibility: true }, false), {
      nodes: ['worker-0', 'worker-2'],
      noEligibleNodes: false,
    });
    const unlabelled = nodes.map((n) =>
      node(n.metadata.name ?? '', { roles: n.metadata.name?.startsWith('master') ? ['master'] : ['worker'] }),
    );
    assert.deepEqual(selectNodes(unlabelled, { checkNodeEligibility: true }, false), { nodes: [], noEligibleNodes: true });
    assert.deepEqual(
      selectNodes(unlabelled, { checkNodeEligibility: true, enablePeerPods: true }, false).nodes.length,
      3,
      'not used with peer pods',
    );
  });

  test('compact clusters select every master and ignore the selector', () => {
    const compact = [node('master-0', { roles: ['master', 'worker'] }), node('master-1', { roles: ['master', 'worker'] })];
    assert.equal(isCompactCluster(compact), true);
    assert.equal(isCompactCluster(nodes), false);
    assert.deepEqual(selectNodes(compact, { kataConfigPoolSelector: { matchLabels: { zone: 'x' } } }, true).nodes, [
      'master-0',
      'master-1',
    ]);
  });

  test('nodes being deleted are not selected', () => {
    const deleting = { ...node('worker-9'), metadata: { ...node('worker-9').metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    assert.deepEqual(selectNodes([...nodes, deleting], {}, false).nodes, ['worker-0', 'worker-1', 'worker-2']);
  });
});

describe('conditions', () => {
  const settled: Classification = { kataNodes: { nodeCount: 1, readyNodeCount: 1, installed: ['a'] }, failures: [], settled: true };
  const moving: Classification = { kataNodes: { nodeCount: 1, readyNodeCount: 0, installing: ['a'] }, failures: [], settled: false };
  const sel = { nodes: ['a'], noEligibleNodes: false };

  test('the documented messages for kata and kata-remote', () => {
    assert.deepEqual(installCondition(moving, sel, 'kata', true), {
      status: 'True',
      reason: 'Installing',
      message: messages.installing('kata'),
    });
    assert.deepEqual(installCondition(moving, sel, 'kata-remote', true).message, messages.installing('kata-remote'));
    assert.deepEqual(installCondition(moving, sel, 'kata', false), {
      status: 'True',
      reason: 'Updating',
      message: messages.updating(),
    });
    assert.equal(installCondition(settled, sel, 'kata', true), done);
    assert.deepEqual(uninstallCondition(moving, 'kata-remote'), {
      status: 'True',
      reason: 'Uninstalling',
      message: messages.uninstalling('kata-remote'),
    });
  });

  test('a failed node wins, with its MCO reason', () => {
    const failed: Classification = { ...moving, failures: [{ node: 'worker-1', reason: 'disk full' }] };
    assert.deepEqual(installCondition(failed, sel, 'kata', true), {
      status: 'True',
      reason: 'Failed',
      message: messages.failed('worker-1', 'disk full'),
    });
    assert.deepEqual(uninstallCondition(failed, 'kata'), {
      status: 'True',
      reason: 'Failed',
      message: messages.failed('worker-1', 'disk full'),
    });
  });

  test('no eligible node: the original operator’s hint about NFD', () => {
    const none: Classification = { kataNodes: { nodeCount: 0, readyNodeCount: 0 }, failures: [], settled: true };
    assert.deepEqual(installCondition(none, { nodes: [], noEligibleNodes: true }, 'kata', true), {
      status: 'True',
      reason: 'Installing',
      message: messages.noEligibleNodes(),
    });
  });

  test('runtime class and blocking pods', () => {
    assert.equal(runtimeClassFor({}), 'kata');
    assert.equal(runtimeClassFor({ enablePeerPods: true }), 'kata-remote');
    const pods = [
      { metadata: { name: 'p1', namespace: 'ns' }, spec: { runtimeClassName: 'kata' } },
      { metadata: { name: 'p2', namespace: 'ns' }, spec: { runtimeClassName: 'runc' } },
      { metadata: { name: 'p3', namespace: 'a' }, spec: {} },
    ];
    assert.deepEqual(podsUsing(pods, new Set(['kata'])), ['ns/p1']);
    assert.deepEqual(podsUsing(pods, new Set(['kata-remote'])), []);
  });

  test('a blocked uninstall names the RuntimeClass the blocking pods use, not the one peer pods add', () => {
    const pods = [
      { metadata: { name: 'p1', namespace: 'ns' }, spec: { runtimeClassName: 'kata' } },
      { metadata: { name: 'p2', namespace: 'ns' }, spec: { runtimeClassName: 'runc' } },
    ];
    const offered = new Set(['kata', 'kata-remote']);
    assert.deepEqual(runtimeClassesInUse(pods, offered), ['kata']);
    // The text itself, as docs/kataconfig.md gives it (a test of messages cannot take its expectation from it).
    assert.equal(
      messages.blocked(runtimeClassesInUse(pods, offered)),
      'Existing pods using "kata" RuntimeClass found. Please delete the pods manually for KataConfig deletion to proceed',
    );
    const both = [...pods, { metadata: { name: 'p3', namespace: 'x' }, spec: { runtimeClassName: 'kata-remote' } }];
    assert.equal(
      messages.blocked(runtimeClassesInUse(both, offered)),
      'Existing pods using "kata" and "kata-remote" RuntimeClasses found. Please delete the pods manually for KataConfig deletion to proceed',
    );
  });

  test('a selector that validly matches no worker says so instead of reporting success', () => {
    const workers = [node('worker-0', { labels: { zone: 'a' } }), node('worker-1', { labels: { zone: 'b' } })];
    const sel = selectNodes(workers, { kataConfigPoolSelector: { matchLabels: { zone: 'nowhere' } } }, false);
    assert.deepEqual(sel.nodes, []);
    assert.equal(sel.noMatchingNodes, true);
    const none: Classification = { kataNodes: { nodeCount: 0, readyNodeCount: 0 }, failures: [], settled: true };
    assert.deepEqual(installCondition(none, sel, 'kata', true), {
      status: 'True',
      reason: 'Installing',
      message: messages.noMatchingNodes(),
    });
    assert.equal(installCondition(none, sel, 'kata', false).reason, 'Updating', 'a live KataConfig patched that way');
    const leaving: Classification = {
      kataNodes: { nodeCount: 0, readyNodeCount: 0, uninstalling: ['worker-0'] },
      failures: [],
      settled: false,
    };
    assert.equal(installCondition(leaving, sel, 'kata', false).message, messages.updating(), 'while nodes leave');
    assert.equal(selectNodes(workers, { kataConfigPoolSelector: { matchLabels: { zone: 'a' } } }, false).noMatchingNodes, undefined);
  });
});

describe('the active KataConfig', () => {
  test('the oldest wins; at the same second, the first by name; none when there is none', () => {
    const kc = (name: string, created: string) => ({ metadata: { name, creationTimestamp: created } });
    assert.equal(activeKataConfig([]), undefined);
    assert.equal(activeKataConfig([kc('b', '2026-01-02T00:00:00Z'), kc('a', '2026-01-03T00:00:00Z')])?.metadata.name, 'b');
    assert.equal(activeKataConfig([kc('z', '2026-01-02T00:00:00Z'), kc('m', '2026-01-02T00:00:00Z')])?.metadata.name, 'm');
  });
});

describe('label keys in kataConfigPoolSelector', () => {
  test('the CRD rule accepts the keys the API server accepts on nodes, and nothing else', async () => {
    const { LABEL_KEY_REGEX } = await import('../../src/api/kataconfig.ts');
    const re = new RegExp(LABEL_KEY_REGEX);
    for (const ok of [
      'custom-kata1',
      'node-role.kubernetes.io/worker',
      'feature.node.kubernetes.io/runtime.kata',
      'a',
      'A_b.c',
      'x'.repeat(63),
    ])
      assert.ok(re.test(ok), ok);
    for (const bad of ['<label_key>', 'bad key!', '', '-a', 'a-', 'x'.repeat(64), 'Upper.Case/x', 'a/b/c', '/a', 'a/'])
      assert.ok(!re.test(bad), bad);
  });
});

test('sortedByName: numeric order, remembered only while the input is the same', () => {
  const sort = sortedByName();
  const a = ['worker-10', 'worker-9', 'worker-100'];
  assert.deepEqual(sort(a), ['worker-9', 'worker-10', 'worker-100']);
  const first = sort(a);
  first.push('mutated');
  assert.deepEqual(sort(a), ['worker-9', 'worker-10', 'worker-100'], 'a caller changing its answer changes nothing');
  assert.deepEqual(sort(['worker-2', 'worker-1']), ['worker-1', 'worker-2'], 'another input is sorted afresh');
});

test('sortedByName: numeric order, remembered only while the input is the same', () => {
  const sort = sortedByName();
  const a = ['worker-10', 'worker-9', 'worker-100'];
  assert.deepEqual(sort(a), ['worker-9', 'worker-10', 'worker-100']);
  const first = sort(a);
  first.push('mutated');
  assert.deepEqual(sort(a), ['worker-9', 'worker-10', 'worker-100'], 'a caller changing its answer changes nothing');
  assert.deepEqual(sort(['worker-2', 'worker-1']), ['worker-1', 'worker-2'], 'another input is sorted afresh');
});

describe('which pool updates wake the KataConfig controller', () => {
  const at = (p: MachineConfigPool, name: string): MachineConfigPool => ({ ...p, metadata: { ...p.metadata, name } });
  const settled: MachineConfigPool = {
    ...kataPool,
    metadata: { ...kataPool.metadata, generation: 3, resourceVersion: '10' },
    status: {
      observedGeneration: 3,
      machineCount: 5000,
      readyMachineCount: 5000,
      updatedMachineCount: 5000,
      unavailableMachineCount: 0,
      conditions: [
        { type: 'Updated', status: 'True', lastTransitionTime: '2026-11-28T04:00:00Z' },
        { type: 'Updating', status: 'False', lastTransitionTime: '2026-11-28T04:00:00Z' },
      ],
    },
  };
  const withStatus = (s: Partial<NonNullable<MachineConfigPool['status']>>): MachineConfigPool => ({
    ...settled,
    metadata: { ...settled.metadata, resourceVersion: '11' },
    status: { ...settled.status, ...s },
  });
  // A node missing its heartbeat: the MCO's counts move, and Updated with them.
  const nodeOut = withStatus({
    readyMachineCount: 4999,
    unavailableMachineCount: 1,
    conditions: [
      { type: 'Updated', status: 'False', lastTransitionTime: '2026-11-28T04:01:00Z' },
      { type: 'Updating', status: 'True', lastTransitionTime: '2026-11-28T04:01:00Z' },
    ],
  });
  /** As the informer compares them: each version as the cache keeps it. */
  const changed = (a: MachineConfigPool, b: MachineConfigPool) => poolChanged(cachedPool(a), cachedPool(b));

  test('the cache keeps what the plans read: no counts, and conditions only for the master pool', () => {
    assert.deepEqual(cachedPool(settled).status, { observedGeneration: 3 });
    assert.deepEqual(cachedPool(at(settled, 'master')).status, {
      observedGeneration: 3,
      conditions: [
        { type: 'Updated', status: 'True' },
        { type: 'Updating', status: 'False' },
      ],
    });
    assert.equal(poolSettled(cachedPool(at(settled, 'master'))), true);
    assert.equal(poolSettled(cachedPool(at(nodeOut, 'master'))), false);
  });

  test("a node's readiness moving the kata pool's counts and conditions wakes nothing; the master pool's conditions do", () => {
    assert.equal(changed(settled, nodeOut), false);
    assert.equal(changed(settled, withStatus({})), false, 'a new resourceVersion alone');
    assert.equal(changed(at(settled, 'master'), at(nodeOut, 'master')), true);
    assert.equal(changed(at(settled, 'master'), at(withStatus({ readyMachineCount: 4999 }), 'master')), false, 'counts alone');
  });

  test('what a plan reads wakes it: spec, generations and metadata', () => {
    assert.equal(changed(settled, withStatus({ observedGeneration: 2 })), true, 'observedGeneration');
    assert.equal(changed(settled, { ...settled, metadata: { ...settled.metadata, generation: 4 } }), true, 'generation');
    const retargeted = { ...settled, spec: { ...settled.spec, configuration: { name: 'rendered-kata-oc-ccc', source: [] } } };
    assert.equal(changed(settled, retargeted), true, 'spec.configuration');
    const annotated = { ...settled, metadata: { ...settled.metadata, annotations: { a: 'b' } } };
    assert.equal(changed(settled, annotated), true, 'annotations');
  });
});
