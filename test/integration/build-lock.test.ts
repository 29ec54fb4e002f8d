/**
 * tools/build-control-plane.sh while another build holds its lock (a second `npm start` or test run
 * during a first build): the waiting run shows the other build's progress instead of minutes of silence, and
 * Ctrl-C stops the wait at once, leaving nothing behind.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { processesMentioning } from '../support/processes.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('control plane build lock', () => {
  const cache = mkdtempSync(join(tmpdir(), 'osc-build-lock-'));
  after(() => rmSync(cache, { recursive: true, force: true }));

  test("a run waiting for another build shows that build's progress", { skip: !process.env.OSC_CONTROL_PLANE_DIR }, async () => {
    // The same versions and key as the real build: only the cache root differs.
    const dest = join(cache, 'control-plane', basename(process.env.OSC_CONTROL_PLANE_DIR ?? ''));
    const dir = join(cache, 'control-plane');
    mkdirSync(dir, { recursive: true });
    const progress = join(dir, '.progress');
    // Another build: holds the lock, reports progress, then finishes (fake binaries) and lets go.
    const holder = run(
      'flock',
      [
        join(dir, '.lock'),
        'bash',
        '-c',
        `echo "[control-plane] building kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) ..." >> ${progress}; sleep 3; ` +
          `mkdir -p ${dest} && for b in etcd etcdutl kube-apiserver kube-scheduler kube-controller-manager kubectl kwok; do printf '#!/bin/sh\\n' > ${dest}/$b; chmod +x ${dest}/$b; done; ` +
          `echo "[control-plane] built kubectl in 1s" >> ${progress}; sleep 1`,
      ],
      process.env,
    );
    await waitFor(() => existsSync(progress), { message: 'the other build started' });
    const env: NodeJS.ProcessEnv = { ...process.env, OSC_CACHE_DIR: cache };
    delete env.OSC_CONTROL_PLANE_DIR;
    const waiting = await run('bash', [join(root, 'tools', 'build-control-plane.sh')], env);
    await holder;
    assert.equal(waiting.code, 0, waiting.stderr);
    assert.equal(waiting.stdout.trim(), dest);
    assert.match(waiting.stderr, /another build of the control plane is running; waiting for it/);
    assert.match(waiting.stderr, /\[other build\] \[control-plane\] building kube-apiserver/);
    assert.doesNotMatch(waiting.stderr, /first build of/, 'the waiting run uses what the other build made');
  });

  test('Ctrl-C stops the wait at once, even when the lock wait missed the signal, and leaves nothing behind', async () => {
    // The window this covers: SIGINT reaching a lock wait between fork and exec, where the child still has
    // bash's handler and so lives on. A flock that ignores SIGINT makes that moment last.
    const own = mkdtempSync(join(tmpdir(), 'osc-build-lock-int-'));
    const dir = join(own, 'control-plane');
    mkdirSync(dir, { recursive: true });
    const bin = join(own, 'bin');
    mkdirSync(bin);
    const realFlock = spawnSync('bash', ['-c', 'command -v flock'], { encoding: 'utf8' }).stdout.trim();
    writeFileSync(join(bin, 'flock'), `#!/bin/sh\ntrap '' INT\nexec ${realFlock} "$@"\n`);
    chmodSync(join(bin, 'flock'), 0o755);
    const holder = spawn(realFlock, [join(dir, '.lock'), 'sleep', '600'], { stdio: 'ignore', detached: true });
    try {
      await waitFor(() => spawnSync(realFlock, ['-n', join(dir, '.lock'), 'true']).status === 1, {
        message: 'the other build holds the lock',
      });
      const env: NodeJS.ProcessEnv = { ...process.env, OSC_CACHE_DIR: own, PATH: `${bin}:${process.env.PATH}` };
      delete env.OSC_CONTROL_PLANE_DIR;
      // A process group of its own, as a terminal runs it: Ctrl-C reaches the script and its children.
      const script = spawn('bash', [join(root, 'tools', 'build-control-plane.sh')], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let stderr = '';
      script.stderr.on('data', (d) => (stderr += String(d)));
      const ended = new Promise<NodeJS.Signals | number | null>((resolve) => script.on('exit', (code, signal) => resolve(signal ?? code)));
      const stdoutClosed = new Promise<void>((resolve) => script.stdout.on('close', () => resolve()));
      script.stdout.resume();
      await waitFor(() => /waiting for it/.test(stderr), { timeoutMs: 120_000, message: 'the script waits for the other build' });
      process.kill(-(script.pid ?? 0), 'SIGINT');
      let end: NodeJS.Signals | number | null | undefined;
      void ended.then((e) => (end = e));
      await waitFor(() => end !== undefined, { timeoutMs: 30_000, message: 'the script ends on Ctrl-C (not a minute later, not never)' });
      assert.equal(end, 'SIGINT', `ended by the signal, as the caller tells a Ctrl-C from a failure; stderr: ${stderr}`);
      await stdoutClosed; // nothing left holds the pipe its caller reads the built path from
      await waitFor(() => processesMentioning(own).length === 0, {
        timeoutMs: 30_000,
        message: 'no tail or sed following the progress file is left',
      });
    } finally {
      if (holder.pid) process.kill(-holder.pid, 'SIGKILL');
      rmSync(own, { recursive: true, force: true });
    }
  });
});
