/**
 * tools/build-control-plane.sh while another build holds its lock (a second `npm start` or test run
 * during a first build): the waiting run shows the other build's progress instead of minutes of silence.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, describe, test } from 'node:test';
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
          `mkdir -p ${dest} && for b in etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok; do printf '#!/bin/sh\\n' > ${dest}/$b; chmod +x ${dest}/$b; done; ` +
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
  });
});
