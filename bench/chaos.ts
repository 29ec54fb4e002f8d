/**
 * `npm run chaos`: the chaos run (bench/chaos/run.ts) on the dev cluster, printing its figures and the rows
 * of the README's chaos table.
 *
 *   node bench/chaos.ts [--faults 100] [--seed N] [--workers 3] [--converge-timeout-s 360] [--max-minutes M]
 *                       [--kinds killOperator,partitionReplica,...]
 *
 * The seed is printed; the same seed replays the same operations, faults and timings. Exits 1 unless every
 * fault converged, nothing leaked, no two leaders ever wrote, no node rebooted without a change and the
 * shipped RBAC allowed every request.
 */
import { parseArgs } from 'node:util';
import { runChaos } from './chaos/run.ts';
import { FAULT_KINDS, type FaultKind } from './chaos/scenario.ts';

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: '100' },
    seed: { type: 'string' },
    workers: { type: 'string', default: '3' },
    'converge-timeout-s': { type: 'string', default: '360' },
    'max-minutes': { type: 'string' },
    kinds: { type: 'string' },
  },
});
const kinds = values.kinds?.split(',').map((k) => k.trim()) as FaultKind[] | undefined;
for (const k of kinds ?? [])
  if (!(FAULT_KINDS as readonly string[]).includes(k)) throw new Error(`--kinds: no fault kind ${k} (known: ${FAULT_KINDS.join(', ')})`);
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const r = await runChaos({
  faults: Number(values.faults),
  seed,
  workers: Number(values.workers),
  convergeTimeoutMs: Number(values['converge-timeout-s']) * 1000,
  budgetMs: values['max-minutes'] !== undefined ? Number(values['max-minutes']) * 60_000 : undefined,
  ...(kinds ? { kinds } : {}),
  progress: (l) => console.log(l),
});
const s = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)}s` : '-');
const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
};
console.log(JSON.stringify({ ...r, steps: undefined }));
console.log(
  `seed ${r.seed}  (replay: npm run chaos -- --seed ${r.seed} --faults ${r.faults}${kinds ? ` --kinds ${kinds.join(',')}` : ''})`,
);
console.log(
  `faults injected       ${r.faults}  ${Object.entries(r.faultsByKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}`,
);
console.log(`runs converged        ${r.converged} of ${r.faults}`);
console.log(`time to converge      p50 ${s(r.convergeP50Ms)}  p99 ${s(r.convergeP99Ms)}  max ${s(r.convergeMaxMs)} (from the fault)`);
const byKind = new Map<string, number[]>();
for (const st of r.steps) if (st.converged) byKind.set(st.fault, [...(byKind.get(st.fault) ?? []), st.convergeMs]);
for (const [k, xs] of byKind)
  console.log(`  ${k.padEnd(20)}${String(xs.length).padStart(4)}  p50 ${s(pct(xs, 50))}  p99 ${s(pct(xs, 99))}  max ${s(Math.max(...xs))}`);
console.log(`leaked objects        ${r.leaks.length}${r.leaks.length ? `: ${r.leaks.join('; ')}` : ''}`);
console.log(
  `double leaders        ${r.doubleLeaderWrites.length} writes by a replica not holding the lease${r.doubleLeaderWrites.length ? `: ${r.doubleLeaderWrites.slice(0, 5).join('; ')}` : ''} (${r.leaderships} leaderships, ${r.leadershipsLost} lost and stopped)`,
);
console.log(
  `lost or duplicated    ${r.duplicateReboots} reboots without a configuration change (of ${r.reboots}); extension MachineConfig created ${r.machineConfigCreates} times for ${r.installs} installs, rewritten ${r.machineConfigRewrites} times; ${r.faults - r.converged} steps with work left undone`,
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
console.log(`elapsed               ${r.elapsedS}s`);

// The README's chaos table: one row per platform, then one per kind of fault.
console.log('\n| platform | faults | converged | leaks | double leaders | needless reboots |');
console.log('| --- | --- | --- | --- | --- | --- |');
console.log(
  `| OpenShift | ${r.faults} | ${r.converged}/${r.faults} | ${r.leaks.length} | ${r.doubleLeaderWrites.length} | ${r.duplicateReboots} |`,
);
console.log('\n| fault | count | p50 | p99 | max |');
console.log('| --- | --- | --- | --- | --- |');
for (const [k, xs] of [...byKind].sort(([a], [b]) => FAULT_KINDS.indexOf(a as FaultKind) - FAULT_KINDS.indexOf(b as FaultKind)))
  console.log(`| ${k} | ${xs.length} | ${s(pct(xs, 50))} | ${s(pct(xs, 99))} | ${s(Math.max(...xs))} |`);
const ok =
  r.converged === r.faults &&
  r.leaks.length === 0 &&
  r.doubleLeaderWrites.length === 0 &&
  r.duplicateReboots === 0 &&
  r.rbacGaps.length === 0;
process.exit(ok ? 0 : 1);
