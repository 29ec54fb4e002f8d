/**
 * Where a CPU profile's time went, as text: `node bench/profile-top.ts FILE.cpuprofile [--top 30]`.
 * Prints the profile's length and busy time, then the functions with the most self time and the source
 * files with the most self time. For profiles the benchmark writes (BENCH_PROFILE_DIR) and `--cpu-prof`.
 * Given an allocation profile (FILE.heapprofile: BENCH_PROFILE_KIND=allocations), where the bytes were
 * allocated: by function, and by the nearest function of the operator's own code (dist/ or src/) on the stack.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } });
const file = positionals[0];
if (!file) throw new Error('usage: node bench/profile-top.ts FILE.cpuprofile [--top N]');
const top = Number(values.top);
const parsed = JSON.parse(readFileSync(file, 'utf8')) as Profile | HeapProfile;
if ('head' in parsed) {
  allocations(parsed);
  process.exit(0);
}
const profile = parsed;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
// A sample's time is the delta to the next sample.
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i] as number;
  const dt = profile.timeDeltas[i + 1] ?? 0;
  selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
}
const IDLE = new Set(['(idle)', '(program)']);
const fn = new Map<string, number>();
const files = new Map<string, number>();
let busy = 0;
const apart = new Map<string, number>();
for (const [id, us] of selfUs) {
  const { callFrame: f } = byId.get(id) as ProfileNode;
  if (IDLE.has(f.functionName)) {
    apart.set(f.functionName, (apart.get(f.functionName) ?? 0) + us);
    continue;
  }
  busy += us;
  const where = f.url ? `${f.url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : '';
  const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
  fn.set(key, (fn.get(key) ?? 0) + us);
  const fileKey = f.url ? f.url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/') : f.functionName;
  files.set(fileKey, (files.get(fileKey) ?? 0) + us);
}
const ms = (us: number) => `${(us / 1000).toFixed(1).padStart(9)} ms`;
const pctOf = (us: number) => `${((100 * us) / Math.max(1, busy)).toFixed(1).padStart(5)} %`;
console.log(
  `${file}: ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(2)} s in JavaScript and GC`,
  `(main thread outside JavaScript: ${((apart.get('(program)') ?? 0) / 1e6).toFixed(2)} s; idle ${((apart.get('(idle)') ?? 0) / 1e6).toFixed(2)} s)`,
);
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${ms(us)} ${pctOf(us)}  ${k}`);
};
print('self time by function', fn);
print('self time by file', files);

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}
interface HeapProfile {
  head: HeapNode;
}

/** An allocation profile's bytes by function, and by the nearest frame of the operator's own code. */
function allocations(p: HeapProfile): void {
  const own = /\/(dist|src)\//;
  const name = (f: HeapNode['callFrame']) =>
    `${f.functionName || '(anonymous)'} ${f.url ? `${f.url.replace(/^file:\/\/.*?\/(dist|src|node_modules)\//, '$1/')}:${f.lineNumber + 1}` : ''}`.trim();
  const bySelf = new Map<string, number>();
  const byOwn = new Map<string, number>();
  let total = 0;
  const walk = (n: HeapNode, ownFrame: string | undefined) => {
    const here = own.test(n.callFrame.url) ? name(n.callFrame) : ownFrame;
    if (n.selfSize) {
      total += n.selfSize;
      bySelf.set(name(n.callFrame), (bySelf.get(name(n.callFrame)) ?? 0) + n.selfSize);
      const k = here ?? '(Node.js and V8 alone)';
      byOwn.set(k, (byOwn.get(k) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c, here);
  };
  walk(p.head, undefined);
  console.log(`${file}: ${(total / 1e6).toFixed(1)} MB allocated (sampled)`);
  const print = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, b] of [...m].sort((a, c) => c[1] - a[1]).slice(0, top))
      console.log(`${(b / 1e6).toFixed(1).padStart(8)} MB ${((100 * b) / Math.max(1, total)).toFixed(1).padStart(5)} %  ${k}`);
  };
  print('allocated by function', bySelf);
  print("allocated under the operator's own functions (the nearest on the stack)", byOwn);
}
