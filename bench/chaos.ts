/**
 * `npm run chaos`: the chaos run (bench/chaos/run.ts) on the dev cluster, printing its figures.
 *
 *   node bench/chaos.ts [--faults 100] [--seed N] [--workers 3] [--converge-timeout-s 360] [--max-minutes M]
 *
 * The seed is printed; the same seed replays the same operations, faults and timings. Exits 1 unless every
 * fault converged and nothing leaked.
 */
import { parseArgs } from 'node:util';
import { runChaos } from './chaos/run.ts';

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: '100' },
    seed: { type: 'string' },
    workers: { type: 'string', default: '3' },
    'converge-timeout-s': { type: 'string', default: '360' },
    'max-minutes': { type: 'string' },
  },
});
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const r = await runChaos({
  faults: Number(values.faults),
  seed,
  workers: Number(values.workers),
  convergeTimeoutMs: Number(values['converge-timeout-s']) * 1000,
  budgetMs: values['max-minutes'] !== undefined ? Number(values['max-minutes']) * 60_000 : undefined,
  progress: (l) => console.log(l),
});
const s = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
console.log(JSON.stringify({ ...r, steps: undefined }));
console.log(`seed ${r.seed}  (replay: npm run chaos -- --seed ${r.seed} --faults ${r.faults})`);
console.log(
  `faults injected       ${r.faults}  ${Object.entries(r.faultsByKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}`,
);
console.log(`runs converged        ${r.converged} of ${r.faults}`);
console.log(`time to converge      p50 ${s(r.convergeP50Ms)}  p99 ${s(r.convergeP99Ms)}  max ${s(r.convergeMaxMs)} (from the fault)`);
const byKind = new Map<string, number[]>();
for (const st of r.steps) if (st.converged) byKind.set(st.fault, [...(byKind.get(st.fault) ?? []), st.convergeMs]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? Number.NaN;
console.log(`  by fault            ${[...byKind].map(([k, xs]) => `${k} p50 ${s(median(xs))} max ${s(Math.max(...xs))}`).join(', ')}`);
console.log(`leaked objects        ${r.leaks.length}${r.leaks.length ? `: ${r.leaks.join('; ')}` : ''}`);
console.log(
  `lost or duplicated    ${r.duplicateReboots} reboots without a configuration change (of ${r.reboots}); extension MachineConfig created ${r.machineConfigCreates} times for ${r.installs} installs, rewritten ${r.machineConfigRewrites} times; ${r.faults - r.converged} steps with work left undone`,
);
console.log(`operator API requests ${r.operatorRequests}: ${r.operator5xx} 5xx, ${r.operator409} 409 Conflict (audit log)`);
console.log(
  `recoveries            ${r.relistsOnGone} relists after 410 Gone, ${r.silentWatchesDetected} silent watches detected, ${r.operatorUnexpectedExits} operator restarts it did not ask for, ${r.webhookRefusals} user requests refused while the webhook was down`,
);
console.log(`elapsed               ${r.elapsedS}s`);
process.exit(r.converged === r.faults && r.leaks.length === 0 ? 0 : 1);
