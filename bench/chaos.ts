/**
 * `npm run chaos`: the chaos run (bench/chaos/run.ts) on the dev cluster, for one platform or each in turn,
 * printing its figures and the README's chaos table (bench/chaos/table.ts).
 *
 *   node bench/chaos.ts [--distribution openshift|kubernetes|openshift,kubernetes] [--faults 100] [--seed N]
 *                       [--workers 3] [--converge-timeout-s 360] [--max-minutes M] [--kinds killOperator,...]
 *                       [--report FILE]
 *
 * The seed is printed; the same seed replays the same operations, faults and timings (per platform). With
 * several platforms, --faults and --max-minutes are each platform's. Exits 1 unless every fault converged,
 * nothing leaked, no two leaders ever wrote, no work was done twice (a reboot or a kata-deploy install
 * without a configuration change) and the shipped RBAC allowed every request.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type ChaosReport, runChaos } from './chaos/run.ts';
import { type ChaosPlatform, FAULT_KINDS, type FaultKind } from './chaos/scenario.ts';
import { chaosTable, overTarget, P99_TARGET_MS, percentile, timesByKind } from './chaos/table.ts';

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: '100' },
    seed: { type: 'string' },
    workers: { type: 'string', default: '3' },
    'converge-timeout-s': { type: 'string', default: '360' },
    'max-minutes': { type: 'string' },
    kinds: { type: 'string' },
    distribution: { type: 'string', default: 'openshift' },
    report: { type: 'string' },
  },
});
const platforms = values.distribution.split(',').map((d) => d.trim()) as ChaosPlatform[];
for (const p of platforms)
  if (p !== 'openshift' && p !== 'kubernetes') throw new Error(`--distribution: no platform ${p} (known: openshift, kubernetes)`);
const kinds = values.kinds?.split(',').map((k) => k.trim()) as FaultKind[] | undefined;
for (const k of kinds ?? [])
  if (!(FAULT_KINDS as readonly string[]).includes(k)) throw new Error(`--kinds: no fault kind ${k} (known: ${FAULT_KINDS.join(', ')})`);
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)}s` : '-');
const reports: ChaosReport[] = [];
const load: number[] = [];
const sampler = setInterval(() => load.push(loadavg()[0] ?? 0), 60_000).unref();
const started = new Date();
for (const platform of platforms) {
  const r = await runChaos({
    faults: Number(values.faults),
    seed,
    workers: Number(values.workers),
    convergeTimeoutMs: Number(values['converge-timeout-s']) * 1000,
    budgetMs: values['max-minutes'] !== undefined ? Number(values['max-minutes']) * 60_000 : undefined,
    distribution: platform,
    ...(kinds ? { kinds } : {}),
    progress: (l) => console.log(l),
  });
  reports.push(r);
  printFigures(r);
}
clearInterval(sampler);
if (values.report) writeFileSync(values.report, JSON.stringify(reports, null, 1));

function printFigures(r: ChaosReport): void {
  console.log(JSON.stringify({ ...r, steps: undefined }));
  console.log(
    `seed ${r.seed}  (replay: npm run chaos -- --distribution ${r.platform} --seed ${r.seed} --faults ${r.faults}${kinds ? ` --kinds ${kinds.join(',')}` : ''})`,
  );
  console.log(
    `faults injected       ${r.faults}  ${Object.entries(r.faultsByKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  console.log(`runs converged        ${r.converged} of ${r.faults}`);
  console.log(`time to converge      p50 ${s(r.convergeP50Ms)}  p99 ${s(r.convergeP99Ms)}  max ${s(r.convergeMaxMs)} (from the fault)`);
  for (const [k, { times }] of timesByKind(r))
    console.log(
      `  ${k.padEnd(20)}${String(times.length).padStart(4)}  p50 ${s(percentile(times, 50))}  p99 ${s(percentile(times, 99))}  max ${s(Math.max(...times))}`,
    );
  console.log(`leaked objects        ${r.leaks.length}${r.leaks.length ? `: ${r.leaks.join('; ')}` : ''}`);
  console.log(
    `double leaders        ${r.doubleLeaderWrites.length} writes by a replica not holding the lease${r.doubleLeaderWrites.length ? `: ${r.doubleLeaderWrites.slice(0, 5).join('; ')}` : ''} (${r.leaderships} leaderships, ${r.leadershipsLost} lost and stopped)`,
  );
  const work =
    r.platform === 'kubernetes'
      ? `${r.needlessRuns} kata-deploy installs without a configuration change (of ${r.runs})`
      : `${r.needlessRuns} reboots without a configuration change (of ${r.runs}); extension MachineConfig created ${r.machineConfigCreates} times for ${r.installs} installs, rewritten ${r.machineConfigRewrites} times`;
  console.log(`lost or duplicated    ${work}; ${r.faults - r.converged} steps with work left undone`);
  for (const d of r.needlessDetail) console.log(`  needless: ${d}`);
  if (r.duplicatePodRuns?.length)
    console.log(
      `                      ${r.duplicatePodRuns.length} more by a second installer pod the DaemonSet controller made beside a live one`,
    );
  for (const d of r.duplicatePodRuns ?? []) console.log(`  duplicate pod: ${d}`);
  for (const d of r.unjudgedRuns) console.log(`  under way at an etcd restore, not judged: ${d}`);
  if (r.restores)
    console.log(
      `etcd restores         ${r.restores}${r.platform === 'openshift' ? `: pod VM images they orphaned (deleted by the administrator) ${r.imagesOrphanedByRestores}, PODVM_AMI_IDs naming an image gone (emptied) ${r.amiIdsDanglingAfterRestores}` : ''}`,
    );
  console.log(
    `operator API requests ${r.operatorRequests}: ${r.operator5xx} 5xx, ${r.operator409} 409 Conflict, ${r.operator429} 429, ${r.operator403} 403 Forbidden (audit log)${r.rbacGaps.length ? `; NOT ALLOWED BY THE SHIPPED RBAC: ${r.rbacGaps.join('; ')}` : ''}; by replica ${Object.entries(
      r.requestsByReplica,
    )
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  console.log(
    `recoveries            ${r.relistsOnGone} relists after 410 Gone, ${r.silentWatchesDetected} silent watches detected, ${r.operatorUnexpectedExits} replica exits it did not ask for (${r.oomKills} by the memory limit), ${r.webhookRefusals} user requests refused while the webhook was down; peak RSS ${r.peakRssMiB} MiB`,
  );
  console.log(`elapsed               ${r.elapsedS}s\n`);
}

// The README's chaos table, with what it was measured under.
const meanLoad = load.length ? load.reduce((a, b) => a + b, 0) / load.length : (loadavg()[0] ?? 0);
const total = reports.reduce((n, r) => n + r.faults, 0);
console.log(
  `\nMeasured on ${started.toISOString().slice(0, 10)}: ${reports.map((r) => `${r.faults} faults on ${r.platform}`).join(', ')} (seed ${seed}, ${values.workers} workers), load average ${meanLoad.toFixed(1)} (1-minute, mean of the run; max ${Math.max(0, ...load).toFixed(1)}) on ${cpus().length} cores, ${Math.round(reports.reduce((n, r) => n + r.elapsedS, 0) / 60)} minutes for ${total} faults.\n`,
);
console.log(chaosTable(reports));
const slow = overTarget(reports);
if (slow.length) console.log(`\np99 over the ${P99_TARGET_MS / 1000} s target: ${slow.join('; ')}`);
const ok = reports.every(
  (r) =>
    r.converged === r.faults &&
    r.leaks.length === 0 &&
    r.doubleLeaderWrites.length === 0 &&
    r.needlessRuns === 0 &&
    r.rbacGaps.length === 0,
);
process.exit(ok ? 0 : 1);
