/**
 * The short chaos run (`npm run chaos` runs 100 faults): six operations on the dev cluster, each struck by
 * a fault, every kind at least once (the operator SIGKILLed, the API server restarted, etcd compacted
 * under the watches, the operator's connections black-holed, the webhook unreachable). Each must converge
 * to exactly the modelled end state, and nothing osc made may be left behind.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runChaos } from '../../bench/chaos/run.ts';
import { FAULT_KINDS, faultPlan, rng } from '../../bench/chaos/scenario.ts';
import { testLogger } from '../support/controlplane.ts';

const SEED = 7;
const FAULTS = 6;

test('the fault plan: every kind of fault in each round of five, and the same plan for the same seed', () => {
  const plan = faultPlan(rng(SEED), 10, 3000);
  for (const round of [plan.slice(0, 5), plan.slice(5, 10)]) assert.deepEqual(round.map((f) => f.kind).sort(), [...FAULT_KINDS].sort());
  assert.deepEqual(faultPlan(rng(SEED), 10, 3000), plan);
});

test('chaos: six faults, one of each kind at least; every run converges and nothing leaks', async () => {
  const report = await runChaos({
    faults: FAULTS,
    seed: SEED,
    workers: 3,
    convergeTimeoutMs: 300_000,
    log: testLogger(),
    progress: (l) => console.log(`# ${l}`),
  });
  assert.deepEqual(Object.keys(report.faultsByKind).sort(), [...FAULT_KINDS].sort(), 'every kind of fault');
  assert.deepEqual(
    report.steps.filter((s) => !s.converged).map((s) => `${s.step} ${s.operation} / ${s.fault}: ${s.left.map((d) => d.what).join('; ')}`),
    [],
    'every step converged',
  );
  assert.deepEqual(report.leaks, [], 'nothing osc made is left');
  assert.equal(report.duplicateReboots, 0, 'no node rebooted without a configuration change');
  assert.equal(report.machineConfigRewrites, 0, 'the extension MachineConfig never rewritten');
  assert.ok(report.machineConfigCreates <= report.installs, 'the extension MachineConfig created at most once per install');
  assert.ok(report.relistsOnGone > 0, 'the informers listed again after 410 Gone');
});
