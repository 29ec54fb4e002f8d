/**
 * `npm start` as the README has a new user run it, with nothing built yet: each first build (the control plane,
 * then Prometheus) says once how long it takes (its script's measured figures) and shows its progress once,
 * and the one ready line comes when both are done, with no build line after it, however long the builds take.
 *
 * The builds are real runs of tools/build-*.sh into an empty cache (OSC_CACHE_DIR); only `go build` is a
 * stand-in on PATH, which takes a few seconds and then copies the binary already built, so that the test does
 * not take 20 minutes and its timing does not depend on whether the machine's cache is warm. An end-to-end
 * test: it needs Prometheus built (OSC_PROMETHEUS, which the e2e suite builds before its tests).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'osc-start-output-'));
let child: ChildProcess | undefined;
const running = () => !!child && child.exitCode === null && child.signalCode === null;
after(() => {
  if (running() && child?.pid) process.kill(-child.pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** The path a cached build prints last (instant when the machine's cache has it; else this builds it once). */
function built(script: string, env: string | undefined): string {
  if (env) return env;
  const r = spawnSync('bash', [join(root, 'tools', script)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  assert.equal(r.status, 0, `tools/${script} failed`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

/** The minutes a build's script measured, as its estimate line prints them. */
function estimate(script: string): string {
  const line = /^declare -A measured=\((.*)\)$/m.exec(readFileSync(join(root, 'tools', script), 'utf8'))?.[1] ?? '';
  const idle = /\[idle\]=([\d.]+)/.exec(line)?.[1];
  const busy = /\[busy\]=([\d.]+)/.exec(line)?.[1];
  return `this takes about ${idle} minutes on 2 idle cores${busy ? `, ${busy} on a busy machine` : ''}; later runs reuse it`;
}

test('npm start from nothing built: one estimate and one progress display per build, then one ready line, and no build line after it', async () => {
  const controlPlane = built('build-control-plane.sh', process.env.OSC_CONTROL_PLANE_DIR);
  const prometheus = built('build-prometheus.sh', process.env.OSC_PROMETHEUS);
  const realGo = spawnSync('bash', ['-c', 'command -v go || echo /usr/local/go/bin/go'], { encoding: 'utf8' }).stdout.trim();
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  // `go build -o OUT`: a few seconds, then the prebuilt binary of that name. Everything else is the real go.
  symlinkSync(join(root, 'test', 'support', 'slow-go.sh'), join(bin, 'go'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    OSC_CACHE_DIR: join(dir, 'cache'),
    REAL_GO: realGo,
    FAKE_GO_PREBUILT: `${controlPlane} ${dirname(prometheus)}`,
    // Prometheus is built after the cluster and the operator are up: slower than them, it is what a ready
    // banner that does not wait for it would leave behind.
    FAKE_GO_BUILD_SECONDS: '4',
  };
  delete env.OSC_CONTROL_PLANE_DIR;
  delete env.OSC_PROMETHEUS;

  // Both streams in one pipe, in the order the terminal would show them; a process group, as a terminal's job.
  let out = '';
  child = spawn('sh', ['-c', 'exec npm start -- --home "$1" --workers 1 2>&1', 'sh', join(dir, 'home')], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  child.stdout?.on('data', (d) => (out += String(d)));
  const exited = new Promise((r) => child?.once('exit', r));
  await waitFor(() => /Press Ctrl-C to stop/.test(out) || !running(), { timeoutMs: 900_000, message: 'npm start is ready' });
  assert.ok(running(), out);
  // Ctrl-C: the run stops; whatever it printed until then is all it will ever print.
  if (child.pid) process.kill(-child.pid, 'SIGINT');
  await exited;

  const lines = out.split('\n');
  const at = (re: RegExp) => lines.flatMap((l, i) => (re.test(l) ? [i] : []));
  const ready = at(/^The dev cluster is up \(/);
  assert.equal(ready.length, 1, `one ready line:\n${out}`);
  const readyAt = ready[0] ?? -1;
  for (const [name, script] of [
    ['control-plane', 'build-control-plane.sh'],
    ['prometheus', 'build-prometheus.sh'],
  ] as const) {
    const estimates = lines.filter((l) => l.startsWith(`[${name}] this takes about`));
    assert.deepEqual(estimates, [`[${name}] ${estimate(script)}`], `one estimate for ${name}, its script's:\n${out}`);
    const done = at(new RegExp(`^\\[${name}\\] done in \\d+s`));
    assert.ok(done.length === 1 && (done[0] ?? Infinity) < readyAt, `${name} is built once, before the ready line:\n${out}`);
  }
  // One progress display: each step of the control plane once, in order, and nobody else's build.
  const steps = lines.flatMap((l) => /^\[control-plane\] (building|built) (\S+)/.exec(l)?.slice(1, 3).join(' ') ?? []);
  assert.deepEqual(
    steps,
    ['etcd', 'etcdutl', 'kube-apiserver', 'kube-scheduler', 'kube-controller-manager', 'kubectl', 'kwok'].flatMap((b) => [
      `building ${b}`,
      `built ${b}`,
    ]),
  );
  assert.deepEqual(at(/^\[other build\]/), [], 'no other build was waited for');
  const late = lines.slice(readyAt + 1).filter((l) => /^\[(control-plane|prometheus|other build)\]/.test(l));
  assert.deepEqual(late, [], 'no build line after the ready line');
});
