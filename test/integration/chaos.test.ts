/**
 * The short chaos runs (`npm run chaos` runs 100 faults, of every kind): the operator as production runs it
 * (two replicas with leader election, the least-privilege RBAC osc install ships for the platform). On
 * OpenShift seven operations on the dev cluster, each struck by a fault: the leader SIGKILLed, the API server
 * restarted, etcd compacted under the watches, the replicas' connections black-holed, the webhook unreachable,
 * the leader partitioned from the API server past its lease, etcd restored from an older backup. On plain
 * Kubernetes (kata-deploy) three: the leader SIGKILLed, etcd compacted, the connections black-holed. Each must
 * converge to exactly the modelled end state, nothing osc made may be left behind, no work may be done twice,
 * and the audit log must show no write by a replica that did not hold the lease.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../bench/chaos/run.ts';
import { CLASSIC_FAULT_KINDS, FAULT_KINDS, type FaultKind, faultPlan, rng } from '../../bench/chaos/scenario.ts';
import { testLogger } from '../support/controlplane.ts';

const SEED = 7;
const KINDS: FaultKind[] = [...CLASSIC_FAULT_KINDS, 'partitionReplica', 'restoreEtcd'];
// Not restoreEtcd here yet: after a restore the controller-manager's DaemonSet controller once gave a node two
// kata-deploy pods and never removed one, and the run did not converge (docs/devcluster.md).
const KUBERNETES_KINDS: FaultKind[] = ['killOperator', 'compactEtcd', 'blackholeWatches'];
const FAULTS = KINDS.length;

test('the fault plan: every kind of fault in each round, and the same plan for the same seed', () => {
  const n = FAULT_KINDS.length;
  const plan = faultPlan(rng(SEED), 2 * n, 3000);
  for (const round of [plan.slice(0, n), plan.slice(n)]) assert.deepEqual(round.map((f) => f.kind).sort(), [...FAULT_KINDS].sort());
  assert.deepEqual(faultPlan(rng(SEED), 2 * n, 3000), plan);
  assert.deepEqual(
    faultPlan(rng(SEED), KINDS.length, 3000, KINDS)
      .map((f) => f.kind)
      .sort(),
    [...KINDS].sort(),
  );
});

test('chaos on OpenShift: two replicas, seven faults of seven kinds; every run converges, nothing leaks, never two leaders writing', async () => {
  const report = await runChaos({
    faults: FAULTS,
    seed: SEED,
    kinds: KINDS,
    workers: 3,
    convergeTimeoutMs: 300_000,
    log: testLogger(),
    progress: (l) => console.log(`# ${l}`),
  });
  assert.deepEqual(Object.keys(report.faultsByKind).sort(), [...KINDS].sort(), 'every kind of fault');
  assert.deepEqual(
    report.steps.filter((s) => !s.converged).map((s) => `${s.step} ${s.operation} / ${s.fault}: ${s.left.map((d) => d.what).join('; ')}`),
    [],
    'every step converged',
  );
  assert.deepEqual(report.leaks, [], 'nothing osc made is left');
  assert.equal(report.needlessRuns, 0, 'no node rebooted without a configuration change');
  assert.equal(report.machineConfigRewrites, 0, 'the extension MachineConfig never rewritten');
  assert.ok(
    report.machineConfigCreates <= report.installs + report.restores,
    'the extension MachineConfig created at most once per install (or per etcd restore that lost it)',
  );
  assert.ok(report.relistsOnGone > 0, 'the informers listed again after 410 Gone');
  assert.deepEqual(report.doubleLeaderWrites, [], 'no write by a replica that did not hold the lease');
  assert.deepEqual(report.rbacGaps, [], 'the RBAC osc install ships allows every request the operator made');
  assert.ok(report.leadershipsLost >= 1, 'the partitioned leader stopped');
  assert.equal(Object.keys(report.requestsByReplica).sort().join(), 'osc-controller-manager-chaos-a,osc-controller-manager-chaos-b');
});

test('chaos on Kubernetes: two replicas, three faults; every run converges, nothing leaks, no needless reinstall, never two leaders writing', async () => {
  const report = await runChaos({
    faults: KUBERNETES_KINDS.length,
    seed: SEED,
    kinds: KUBERNETES_KINDS,
    workers: 3,
    distribution: 'kubernetes',
    convergeTimeoutMs: 300_000,
    log: testLogger(),
    progress: (l) => console.log(`# ${l}`),
  });
  assert.deepEqual(Object.keys(report.faultsByKind).sort(), [...KUBERNETES_KINDS].sort(), 'every kind of fault');
  assert.deepEqual(
    report.steps.filter((s) => !s.converged).map((s) => `${s.step} ${s.operation} / ${s.fault}: ${s.left.map((d) => d.what).join('; ')}`),
    [],
    'every step converged',
  );
  assert.deepEqual(report.leaks, [], 'nothing osc made is left');
  assert.ok(report.runs > 0, 'kata-deploy installed somewhere');
  assert.equal(report.needlessRuns, 0, 'no kata-deploy install without a configuration change');
  assert.deepEqual(report.doubleLeaderWrites, [], 'no write by a replica that did not hold the lease');
  assert.deepEqual(report.rbacGaps, [], 'the RBAC osc install ships for Kubernetes allows every request the operator made');
});
