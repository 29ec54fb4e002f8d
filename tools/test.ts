/**
 * `npm test`: type-check, lint, make sure the pinned control plane is built (once, cached), then run the
 * unit, integration and end-to-end suites with Node's test runner.
 *
 *   node tools/test.ts [unit|integration|e2e|all] [-- extra node --test arguments]
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const args = process.argv.slice(2);
const suite = args[0] && !args[0].startsWith('-') ? args.shift() : 'all';
const extra = args[0] === '--' ? args.slice(1) : args;
const started = Date.now();

function step(name: string, cmd: string, cmdArgs: string[]): void {
  const t0 = Date.now();
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`\n${name} failed`);
    process.exit(r.status ?? 1);
  }
  console.log(`${name}: ok (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
}

function testFiles(dir: string): string[] {
  const abs = join(root, 'test', dir);
  let entries: string[] = [];
  try {
    entries = readdirSync(abs, { recursive: true }) as string[];
  } catch {
    return [];
  }
  return entries.filter((f) => f.endsWith('.test.ts')).map((f) => relative(root, join(abs, f)));
}

const bin = (name: string) => join(root, 'node_modules', '.bin', name);
if (!process.env.OSC_SKIP_CHECKS) {
  step('type-check', bin('tsc'), ['-p', 'tsconfig.json']);
  // The console's front end runs in a browser: its own settings (DOM, JSX).
  step('type-check console front end', bin('tsc'), ['-p', 'src/console/web/tsconfig.json']);
  step('lint', bin('biome'), ['check', '.']);
}

const suites = suite === 'all' ? ['unit', 'integration', 'e2e'] : [suite as string];
const env = { ...process.env };
if (suites.some((s) => s !== 'unit') && !env.OSC_CONTROL_PLANE_DIR) {
  const t0 = Date.now();
  const r = spawnSync('bash', [join(root, 'tools', 'build-control-plane.sh')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    console.error('building the control plane failed');
    process.exit(r.status ?? 1);
  }
  env.OSC_CONTROL_PLANE_DIR = r.stdout.toString().trim().split('\n').pop();
  console.log(`control plane: ${env.OSC_CONTROL_PLANE_DIR} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
}

// The dev cluster's Prometheus (osc start runs it for the console), built once like the control plane.
if (suites.some((s) => s === 'e2e') && !env.OSC_PROMETHEUS) {
  const t0 = Date.now();
  const r = spawnSync('bash', [join(root, 'tools', 'build-prometheus.sh')], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) {
    console.error('building Prometheus failed');
    process.exit(r.status ?? 1);
  }
  env.OSC_PROMETHEUS = r.stdout.toString().trim().split('\n').pop();
  console.log(`prometheus: ${env.OSC_PROMETHEUS} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
}

const files = suites.flatMap(testFiles);
if (files.length === 0) {
  console.error(`no test files for suite "${suite}"`);
  process.exit(1);
}
// Two files at a time: each integration file runs its own etcd + kube-apiserver, and the machine has 2 cores.
const child = spawn(process.execPath, ['--test', '--test-concurrency=2', '--test-timeout=600000', ...extra, ...files], {
  cwd: root,
  env,
  stdio: 'inherit',
});
// Ctrl-C reaches the whole process group; we only wait for the runner to finish cleaning up.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => {
  console.log(`\ntest suites (${suites.join(', ')}) finished in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  process.exit(code ?? (signal ? 1 : 0));
});
