/**
 * `osc start` and its home directory, as a user meets it in two terminals: a second start in the same home
 * is refused and leaves the first run's kubeconfig and log alone; the lock of a run killed with SIGKILL is
 * taken over; Ctrl-C while another build of the control plane is awaited stops quietly.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { childrenOf, processesMentioning } from '../support/processes.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');

/** `osc ARGS` in a process group of its own, as a terminal runs it (Ctrl-C reaches the whole group). */
class Osc {
  readonly child: ChildProcess;
  out = '';
  readonly exited: Promise<number | null>;
  constructor(args: string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), ...args], {
      cwd: root,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (d) => (this.out += String(d)));
    this.child.stderr?.on('data', (d) => (this.out += String(d)));
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  /** The signal to the process group, as a terminal sends Ctrl-C. */
  signalGroup(sig: NodeJS.Signals): void {
    if (this.running && this.child.pid) process.kill(-this.child.pid, sig);
  }
}

const procs: Osc[] = [];
const dirs: string[] = [];
after(() => {
  for (const p of procs) if (p.running) p.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
const start = (args: string[], env?: NodeJS.ProcessEnv, withConsole = false) => {
  const p = new Osc(['start', ...(withConsole ? [] : ['--no-console']), '--quiet', '--workers', '1', ...args], env);
  procs.push(p);
  return p;
};
const READY = /Press Ctrl-C to stop/;

describe('osc start and its home directory', () => {
  /**
   * Ctrl-C while another build holds the build lock. `buildFirst`: the signal reaches the build script, and
   * the script has ended, before it reaches osc, as a loaded machine can deliver one group signal.
   */
  async function ctrlCWhileWaitingForABuild(buildFirst: boolean) {
    const cache = tempDir('osc-cache-');
    mkdirSync(join(cache, 'control-plane'), { recursive: true });
    // Another build holds the build lock for as long as this test needs (a process group: flock and its sleep).
    const holder = spawn('flock', [join(cache, 'control-plane', '.lock'), 'sleep', '600'], { stdio: 'ignore', detached: true });
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, OSC_CACHE_DIR: cache };
      delete env.OSC_CONTROL_PLANE_DIR;
      const osc = start(['--home', join(tempDir('osc-home-'), 'home')], env);
      await waitFor(() => /another build of the control plane is running; waiting for it/.test(osc.out) || !osc.running, {
        timeoutMs: 120_000,
        message: 'osc start waits for the other build',
      });
      assert.ok(osc.running, osc.out);
      if (buildFirst) {
        const script = childrenOf(osc.child.pid ?? 0).find((c) => c.cmd.includes('build-control-plane.sh'));
        assert.ok(script, 'the build script runs under osc');
        process.kill(script.pid, 'SIGINT');
        await waitFor(() => !childrenOf(osc.child.pid ?? 0).some((c) => c.pid === script.pid), { message: 'the build script ended' });
        // The group's signal reaches osc a moment later.
        await new Promise((r) => setTimeout(r, 300));
      }
      osc.signalGroup('SIGINT');
      assert.equal(await osc.exited, 130, osc.out);
      assert.match(osc.out, /SIGINT: stopping/);
      assert.doesNotMatch(osc.out, /null|error:/, 'an interrupted wait is no failure');
      await waitFor(() => processesMentioning(cache).length === 0, {
        timeoutMs: 30_000,
        message: 'the build script leaves nothing behind (it followed the other build with tail and sleep)',
      });
    } finally {
      if (holder.pid) process.kill(-holder.pid, 'SIGKILL');
    }
  }

  test('Ctrl-C while waiting for another build of the control plane stops quietly', () => ctrlCWhileWaitingForABuild(false));

  test('Ctrl-C that ends the build before osc sees it is still the stop asked for, not a failed start', () =>
    ctrlCWhileWaitingForABuild(true));

  test('a second start in the same home is refused; the lock of a SIGKILLed start is taken over', async () => {
    const home = join(tempDir('osc-home-'), '.osc');
    const first = start(['--home', home]);
    await waitFor(() => READY.test(first.out) || !first.running, { timeoutMs: 900_000, message: 'the first start is ready' });
    assert.ok(first.running, first.out);
    const kubeconfig = readFileSync(join(home, 'kubeconfig'), 'utf8');
    const log = readFileSync(join(home, 'osc.log'));
    assert.ok(log.length > 0, 'the first run has logged');

    const second = start(['--home', home]);
    await waitFor(() => !second.running || /Starting the dev cluster/.test(second.out), { message: 'the second start decides' });
    assert.doesNotMatch(second.out, /Starting the dev cluster/, 'the second start does not start a cluster');
    assert.equal(await second.exited, 1, second.out);
    assert.match(second.out, new RegExp(`error: ${home} is in use by another osc start \\(pid ${first.child.pid}, since `));
    assert.match(second.out, new RegExp(`--home ${home}-2\\n$`), 'it says how to run a second cluster');
    assert.equal(readFileSync(join(home, 'kubeconfig'), 'utf8'), kubeconfig, "the first run's kubeconfig is untouched");
    const logNow = readFileSync(join(home, 'osc.log'));
    assert.ok(logNow.subarray(0, log.length).equals(log), "the first run's log is neither truncated nor rewritten");
    assert.ok(!logNow.includes(0), 'no NUL bytes in the log');

    // Killed without a chance to clean up: its lock stays behind, naming a pid that is gone.
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(existsSync(join(home, 'osc.lock')));
    const third = start(['--home', home]);
    await waitFor(() => READY.test(third.out) || !third.running, { timeoutMs: 600_000, message: 'the third start is ready' });
    assert.ok(third.running, third.out);
    assert.match(third.out, new RegExp(`osc\\.lock was left behind by osc start pid ${first.child.pid}, which no longer runs: taken over`));
    assert.notEqual(readFileSync(join(home, 'kubeconfig'), 'utf8'), kubeconfig, 'the kubeconfig is the new cluster’s');

    third.signalGroup('SIGINT');
    assert.equal(await third.exited, 0, third.out);
    assert.equal(existsSync(join(home, 'osc.lock')), false, 'a run that ends releases the home');
    assert.equal(existsSync(join(home, 'kubeconfig')), false);
  });

  test('the ready banner comes once everything it names is up, and its metrics lines work as printed', async () => {
    const home = join(tempDir('osc-home-'), '.osc');
    const osc = start(['--home', home], process.env, true);
    await waitFor(() => READY.test(osc.out) || !osc.running, { timeoutMs: 900_000, message: 'osc start is ready' });
    assert.ok(osc.running, osc.out);
    const banner = osc.out.slice(osc.out.indexOf('The dev cluster is up'));
    const consoleUrl = /^Web console: (\S+)$/m.exec(banner)?.[1];
    assert.ok(consoleUrl, banner);
    assert.match(banner, new RegExp(`^ {2}its metrics page: ${consoleUrl.replace(/[.?]/g, '\\$&')}#/metrics$`, 'm'));

    // Prometheus, behind the console's metrics page, is already up: no "starting" note.
    const login = await fetch(consoleUrl, { redirect: 'manual' });
    const cookie = login.headers.get('set-cookie')?.split(';')[0] ?? '';
    const info = (await (await fetch(new URL('/console/info', consoleUrl), { headers: { cookie } })).json()) as { prometheus: string };
    assert.match(info.prometheus, /^http:\/\/127\.0\.0\.1:\d+$/, 'Prometheus serves when the banner shows');

    // The metrics command, run as printed after the banner's two export lines.
    const exports = [...banner.matchAll(/^ {2}(export \S+=.*?)(?: {2,}#.*)?$/gm)].map((m) => m[1]);
    const curl = /^The operator's metrics.*:\n {2}(curl .*)$/m.exec(banner)?.[1];
    assert.equal(exports.length, 2, banner);
    assert.ok(curl, banner);
    const r = spawnSync('bash', ['-c', [...exports, `${curl} --fail --silent --show-error`].join('\n')], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, `${curl}\n${r.stderr}`);
    assert.match(r.stdout, /^# (HELP|TYPE) /m, 'Prometheus text from the operator');

    osc.signalGroup('SIGINT');
    assert.equal(await osc.exited, 0, osc.out);
    assert.doesNotMatch(osc.out.slice(osc.out.indexOf('The dev cluster is up')), /\[prometheus\]/, 'no build line after the banner');
  });
});
