/**
 * The simulated node controller's pure parts: pool membership, the pool status (calculateStatus) and the
 * choice of the next nodes to update (getCandidateMachines).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../../src/api/names.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import { PoolMembership, poolForNode } from '../../src/devcluster/mco/membership.ts';
import { maxUnavailableOf } from '../../src/devcluster/mco/node-state.ts';
import { computePoolStatus, reportsUpdating, selectCandidates } from '../../src/devcluster/mco/pool-status.ts';
import { renderPool } from '../../src/devcluster/mco/render.ts';
import type { Node } from '../../src/kube/resources.ts';
import { desiredConfidentialMachineConfig } from '../../src/platform/openshift/confidential.ts';

const OLD = 'rendered-worker-old';
const NEW = 'rendered-worker-new';
const NOW = new Date('2026-11-22T10:00:00Z');

function pool(
  name: string,
  opts: { target?: string; maxUnavailable?: number | string; paused?: boolean; nodeRole?: string } = {},
): MachineConfigPool {
  return {
    metadata: { name, generation: 3 },
    spec: {
      nodeSelector: { matchLabels: { [`node-role.kubernetes.io/${opts.nodeRole ?? name}`]: '' } },
      ...(opts.target ? { configuration: { name: opts.target, source: [] } } : {}),
      ...(opts.maxUnavailable !== undefined ? { maxUnavailable: opts.maxUnavailable } : {}),
      ...(opts.paused ? { paused: true } : {}),
    },
  };
}

function node(
  name: string,
  opts: { current?: string; desired?: string; state?: string; reason?: string; ready?: boolean; cordoned?: boolean; roles?: string[] } = {},
): Node {
  const current = opts.current ?? OLD;
  return {
    metadata: {
      name,
      labels: Object.fromEntries((opts.roles ?? ['worker']).map((r) => [`node-role.kubernetes.io/${r}`, ''])),
      annotations: {
        [MCO_CURRENT_CONFIG]: current,
        [MCO_DESIRED_CONFIG]: opts.desired ?? current,
        [MCO_STATE]: opts.state ?? 'Done',
        [MCO_REASON]: opts.reason ?? '',
      },
    },
    spec: opts.cordoned ? { unschedulable: true } : {},
    status: { conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

const cond = (s: ReturnType<typeof computePoolStatus>, type: string) => s.conditions?.find((c) => c.type === type);
const counts = (s: ReturnType<typeof computePoolStatus>) => [
  s.machineCount,
  s.updatedMachineCount,
  s.readyMachineCount,
  s.unavailableMachineCount,
  s.degradedMachineCount,
];

describe('pool status', () => {
  test('a new target with no node handed it yet: Updating, nothing unavailable, the old configuration still reported', () => {
    const p = pool('worker', { target: NEW });
    p.status = { configuration: { name: OLD, source: [] } };
    const s = computePoolStatus(p, { nodes: [node('worker-0'), node('worker-1')], now: NOW });
    assert.deepEqual(counts(s), [2, 0, 0, 0, 0]);
    assert.equal(cond(s, 'Updated')?.status, 'False');
    assert.deepEqual(
      [cond(s, 'Updating')?.status, cond(s, 'Updating')?.message],
      ['True', `All nodes are updating to MachineConfig ${NEW}`],
    );
    assert.equal(s.configuration?.name, OLD);
    assert.equal(s.observedGeneration, 3);
    assert.equal(reportsUpdating(s, NEW), true);
    assert.equal(reportsUpdating(s, OLD), false);
  });

  test('nodes handed the target, updating or rebooting count as unavailable; a done node as updated and ready', () => {
    const p = pool('worker', { target: NEW });
    const s = computePoolStatus(p, {
      nodes: [
        node('worker-0', { current: NEW }),
        node('worker-1', { desired: NEW }),
        node('worker-2', { desired: NEW, state: 'Working', cordoned: true, ready: false }),
        node('worker-3'),
      ],
      now: NOW,
    });
    assert.deepEqual(counts(s), [4, 1, 1, 2, 0]);
    assert.equal(cond(s, 'Updating')?.status, 'True');
  });

  test('all nodes done on the target: Updated, the configuration moves to the target; unchanged conditions keep their time', () => {
    const p = pool('worker', { target: NEW });
    const earlier = '2026-11-22T09:00:00Z';
    p.status = {
      conditions: [
        { type: 'Degraded', status: 'False', reason: '', message: '', lastTransitionTime: earlier },
        { type: 'Updated', status: 'False', reason: '', message: '', lastTransitionTime: earlier },
      ],
    };
    const s = computePoolStatus(p, { nodes: [node('worker-0', { current: NEW })], now: NOW });
    assert.deepEqual(counts(s), [1, 1, 1, 0, 0]);
    assert.equal(cond(s, 'Updated')?.status, 'True');
    assert.equal(cond(s, 'Updating')?.status, 'False');
    assert.equal(s.configuration?.name, NEW);
    assert.equal(cond(s, 'Degraded')?.lastTransitionTime, earlier);
    assert.equal(cond(s, 'Updated')?.lastTransitionTime, '2026-11-22T10:00:00Z');
  });

  test('degraded nodes, conflicting nodes and render errors degrade the pool with their reasons', () => {
    const p = pool('worker', { target: NEW });
    const degraded = computePoolStatus(p, {
      nodes: [node('worker-0', { desired: NEW, state: 'Degraded', reason: 'disk on fire' })],
      now: NOW,
    });
    assert.equal(degraded.degradedMachineCount, 1);
    assert.equal(degraded.unavailableMachineCount, 0, 'a failed node does not count as unavailable');
    assert.deepEqual(
      [cond(degraded, 'NodeDegraded')?.reason, cond(degraded, 'NodeDegraded')?.message, cond(degraded, 'Degraded')?.status],
      ['1 nodes are reporting degraded status on sync', 'Node worker-0 is reporting: "disk on fire"', 'True'],
    );
    const conflicted = computePoolStatus(p, { nodes: [], conflicts: ['node worker-9 belongs to 2 custom roles'], now: NOW });
    assert.equal(cond(conflicted, 'NodeDegraded')?.reason, '1 nodes cannot join the pool');
    const broken = computePoolStatus(pool('empty'), { nodes: [], renderError: 'no MachineConfigs found', now: NOW });
    assert.deepEqual(
      [cond(broken, 'RenderDegraded')?.status, cond(broken, 'RenderDegraded')?.message, cond(broken, 'Updating')?.status],
      ['True', 'Failed to render configuration for pool empty: no MachineConfigs found', 'False'],
    );
  });

  test("render: an invalid file refuses the pool's new configuration; osc's confidential handlers render, and change the target", () => {
    const kataOc: MachineConfigPool = {
      metadata: { name: 'kata-oc' },
      spec: {
        machineConfigSelector: {
          matchExpressions: [{ key: 'machineconfiguration.openshift.io/role', operator: 'In', values: ['kata-oc', 'worker'] }],
        },
      },
    };
    const base = { metadata: { name: '00-worker', labels: { 'machineconfiguration.openshift.io/role': 'worker' } }, spec: {} };
    const tee = desiredConfidentialMachineConfig('kata-oc', 'kc', ['kata-tdx']);
    const without = renderPool(kataOc, [base], []);
    const withTee = renderPool(kataOc, [base, tee], []);
    assert.ok('name' in without && 'name' in withTee);
    assert.notEqual(withTee.name, without.name, 'new content, new rendered configuration: the nodes roll');
    assert.deepEqual(
      withTee.source.map((s) => s.name),
      ['00-worker', '51-sandboxed-containers-confidential'],
    );
    const relative = {
      metadata: { name: '99-bad', labels: { 'machineconfiguration.openshift.io/role': 'kata-oc' } },
      spec: { config: { ignition: { version: '3.2.0' }, storage: { files: [{ path: 'etc/x', contents: { source: 'data:,x' } }] } } },
    };
    assert.deepEqual(renderPool(kataOc, [base, relative], []), {
      error: 'MachineConfig 99-bad: storage.files: "etc/x": path not absolute',
    });
    const badUrl = {
      ...relative,
      spec: { config: { storage: { files: [{ path: '/etc/x', contents: { source: 'data:text/plain;base64,%%%' } }] } } },
    };
    assert.deepEqual(renderPool(kataOc, [base, badUrl], []), { error: 'MachineConfig 99-bad: storage.files: /etc/x: unable to parse url' });
  });

  test('a paused pool is not Updating and says why', () => {
    const s = computePoolStatus(pool('worker', { target: NEW, paused: true }), { nodes: [node('worker-0')], now: NOW });
    assert.deepEqual(
      [cond(s, 'Updating')?.status, cond(s, 'Updating')?.message],
      ['False', `Pool is paused; will not update to MachineConfig ${NEW}`],
    );
  });
});

describe('candidates', () => {
  const names = (ns: Node[]) => ns.map((n) => n.metadata.name);

  test('maxUnavailable nodes at a time, in the given (update) order', () => {
    const m = new PoolMembership();
    for (const n of ['worker-10', 'worker-2', 'worker-1']) m.assign(n, node(n), [pool('worker')]);
    const nodes = m.nodesOf('worker').map((n) => node(n));
    assert.deepEqual(names(selectCandidates(pool('worker'), nodes, NEW)), ['worker-1']);
    assert.deepEqual(names(selectCandidates(pool('worker', { maxUnavailable: 2 }), nodes, NEW)), ['worker-1', 'worker-2']);
    assert.deepEqual(names(selectCandidates(pool('worker', { maxUnavailable: '100%' }), nodes, NEW)), [
      'worker-1',
      'worker-2',
      'worker-10',
    ]);
  });

  test('nodes already unavailable use up the room; they go first when there is room', () => {
    const busy = [node('worker-0', { desired: NEW }), node('worker-1'), node('worker-2')];
    assert.deepEqual(selectCandidates(pool('worker'), busy, NEW), [], 'one node updating fills maxUnavailable 1');
    const notReady = [node('worker-0'), node('worker-1'), node('worker-2', { ready: false })];
    assert.deepEqual(selectCandidates(pool('worker'), notReady, NEW), []);
    assert.deepEqual(names(selectCandidates(pool('worker', { maxUnavailable: 2 }), notReady, NEW)), ['worker-2']);
  });

  test('a node failing on this target holds the rollout; a paused pool hands out nothing', () => {
    const failing = [node('worker-0', { desired: NEW, state: 'Degraded' }), node('worker-1')];
    assert.deepEqual(selectCandidates(pool('worker'), failing, NEW), []);
    assert.deepEqual(names(selectCandidates(pool('worker', { maxUnavailable: 2 }), failing, NEW)), ['worker-1']);
    assert.deepEqual(selectCandidates(pool('worker', { paused: true }), [node('worker-0')], NEW), []);
  });

  test('maxUnavailable: an integer or a percentage of the pool, rounded down, at least 1', () => {
    const p = (maxUnavailable?: number | string) => ({ metadata: {}, spec: { maxUnavailable } }) as MachineConfigPool;
    assert.equal(maxUnavailableOf(p(), 10), 1);
    assert.equal(maxUnavailableOf(p(3), 10), 3);
    assert.equal(maxUnavailableOf(p('50%'), 3), 1);
    assert.equal(maxUnavailableOf(p('50%'), 10), 5);
    assert.equal(maxUnavailableOf(p(0), 3), 1);
  });
});

describe('pool membership', () => {
  const pools = [pool('master'), pool('worker'), pool('kata-oc', { nodeRole: 'kata-oc' }), pool('infra', { nodeRole: 'infra' })];

  test('a custom pool wins over worker, master over worker; two custom pools or master and a custom pool are an error', () => {
    assert.deepEqual(poolForNode(node('w', { roles: ['worker'] }), pools), { pool: 'worker' });
    assert.deepEqual(poolForNode(node('w', { roles: ['worker', 'kata-oc'] }), pools), { pool: 'kata-oc' });
    assert.deepEqual(poolForNode(node('m', { roles: ['master', 'worker'] }), pools), { pool: 'master' });
    assert.deepEqual(poolForNode(node('w', { roles: ['worker', 'kata-oc', 'infra'] }), pools), {
      error: 'node w belongs to 2 custom roles, cannot proceed with this Node',
      conflicting: ['infra', 'kata-oc'],
    });
    assert.deepEqual(poolForNode(node('m', { roles: ['master', 'kata-oc'] }), pools), {
      error: 'node m has both master role and custom role kata-oc',
      conflicting: ['kata-oc'],
    });
    assert.deepEqual(poolForNode(node('x', { roles: [] }), pools), {});
  });

  test('kept incrementally: each change names the pools it touches, member lists stay sorted', () => {
    const m = new PoolMembership();
    for (const n of ['worker-10', 'worker-2', 'worker-1']) m.assign(n, node(n), pools);
    assert.deepEqual(m.nodesOf('worker'), ['worker-1', 'worker-2', 'worker-10']);
    assert.deepEqual([...m.assign('worker-2', node('worker-2', { roles: ['worker', 'kata-oc'] }), pools)].sort(), ['kata-oc', 'worker']);
    assert.deepEqual(m.nodesOf('worker'), ['worker-1', 'worker-10']);
    assert.deepEqual(m.nodesOf('kata-oc'), ['worker-2']);
    assert.equal(m.poolOf('worker-2'), 'kata-oc');
    assert.deepEqual([...m.assign('worker-1', node('worker-1'), pools)], ['worker'], 'an unchanged membership touches only its pool');

    m.assign('worker-10', node('worker-10', { roles: ['worker', 'kata-oc', 'infra'] }), pools);
    assert.equal(m.poolOf('worker-10'), undefined);
    assert.deepEqual(m.conflictsOf('infra'), ['node worker-10 belongs to 2 custom roles, cannot proceed with this Node']);
    assert.deepEqual(m.nodesOf('worker'), ['worker-1']);
    assert.deepEqual([...m.assign('worker-10', undefined, pools)].sort(), ['infra', 'kata-oc']);
    assert.deepEqual(m.conflictsOf('infra'), []);
  });
});
