/**
 * `osc dev` (the dev cluster alone, here a compact one) and `osc run` started exactly as its banner says:
 * two processes, as a developer runs them in two terminals. Then a KataConfig through kubectl, followed by
 * `osc status --watch`; SIGTERM/SIGINT end both and leave nothing running.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { runKubectl } from '../../src/devcluster/controlplane.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const main = join(root, 'src', 'cli', 'main.ts');
const timeout = (ms: number) => new Promise<string>((r) => setTimeout(() => r('timeout'), ms).unref());

class Proc {
  readonly child: ChildProcess;
  out = '';
  readonly exited: Promise<number | null>;
  constructor(args: string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [main, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (d) => (this.out += String(d)));
    this.child.stderr?.on('data', (d) => (this.out += String(d)));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
}

/** The pids of etcd and kube-apiserver processes started from a given data directory. */
function controlPlaneProcesses(dataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const exe = cmd[0]?.split('/').pop();
      if ((exe === 'etcd' || exe === 'kube-apiserver') && cmd.some((a) => a.includes(dataDir))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The argument vectors of running processes named exe. */
function processArgs(exe: string): string[][] {
  const out: string[][] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.split('/').pop() === exe) out.push(cmd);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Splits a printed command line (single-quoted words allowed). */
const words = (line: string) => [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? '');

describe('osc dev, then osc run as its banner says', () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-dev-home-'));
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) if (p.running) p.child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  test('a compact dev cluster, the operator beside it, kata on the masters, then Ctrl-C', async () => {
    const dev = new Proc(['dev', '--compact', '--reboot-ms', '200'], { OSC_HOME: home });
    procs.push(dev);
    await waitFor(() => dev.out.includes('Press Ctrl-C') || !dev.running, { timeoutMs: 180_000, message: 'osc dev up' });
    assert.ok(dev.running, dev.out);
    assert.match(dev.out, /a simulated OpenShift with 3 masters that also run workloads/);
    const kubeconfig = /^ {2}export KUBECONFIG=(\S+)$/m.exec(dev.out)?.[1] ?? '';
    const kubectl = /alias kubectl=(\S+)$/m.exec(dev.out)?.[1] ?? '';
    assert.equal(kubeconfig, join(home, 'kubeconfig'));
    const k = (args: string[], input?: string) => runKubectl(kubectl, kubeconfig, args, input);
    const nodes = await k(['get', 'nodes', '-o', 'name']);
    assert.equal(nodes.stdout, 'node/master-0\nnode/master-1\nnode/master-2\n');
    // The data directory of this cluster's etcd and kube-apiserver, to check they are gone at the end.
    const cluster = readFileSync(kubeconfig, 'utf8');
    assert.match(cluster, /server: https:\/\/127\.0\.0\.1:\d+/);

    // The banner's `osc run ...` line, run as printed (with this checkout's osc).
    const hint = dev.out.split('\n').find((l) => / run --kubeconfig /.test(l)) ?? '';
    // Under npm the banner says `npm run osc -- run ...`, else `osc run ...`: either way, from `run` on.
    const w = words(hint.trim());
    const args = w.slice(w.lastIndexOf('run'));
    assert.match(hint.trim(), /^(osc|npm run osc --) run --kubeconfig /);
    const op = new Proc(args);
    procs.push(op);
    await waitFor(() => op.out.includes('"caches synced"') || !op.running, { timeoutMs: 60_000, message: 'osc run ready' });
    assert.ok(op.running, op.out);

    const created = await k(
      ['create', '-f', '-'],
      'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: example-kataconfig\nspec:\n  logLevel: info\n',
    );
    assert.equal(created.code, 0, created.stderr);
    const watch = new Proc(['status', '--watch', '--kubeconfig', kubeconfig]);
    procs.push(watch);
    assert.equal(await Promise.race([watch.exited, timeout(120_000)]), 0, watch.out);
    assert.match(watch.out, /KataConfig example-kataconfig: Installed — kata is installed on 3 node\(s\)/);
    assert.match(watch.out, /master-0 {3}installed\nmaster-1 {3}installed\nmaster-2 {3}installed/);
    // A second KataConfig is refused by the operator's webhook, registered by URL.
    const second = await k(
      ['create', '-f', '-'],
      'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: another\n',
    );
    assert.match(second.stderr, /A KataConfig instance already exists, refusing to create a duplicate/);

    // This cluster's etcd and kube-apiserver: the API server on the kubeconfig's port names the data dir.
    const port = /server: https:\/\/127\.0\.0\.1:(\d+)/.exec(cluster)?.[1];
    const certDir = processArgs('kube-apiserver')
      .find((a) => a.includes(`--secure-port=${port}`))
      ?.find((a) => a.startsWith('--cert-dir='))
      ?.slice('--cert-dir='.length);
    assert.ok(certDir, 'the kube-apiserver of this cluster found');
    const dataDir = dirname(certDir);
    const pids = controlPlaneProcesses(dataDir);
    assert.equal(pids.length, 2, 'one etcd and one kube-apiserver');

    op.child.kill('SIGTERM');
    assert.equal(await Promise.race([op.exited, timeout(30_000)]), 0, op.out);
    dev.child.kill('SIGINT');
    assert.equal(await Promise.race([dev.exited, timeout(60_000)]), 0, dev.out);
    assert.match(dev.out, /SIGINT: stopping the cluster\.\.\.\ncluster stopped/);
    assert.ok(!existsSync(kubeconfig), 'the kubeconfig went with the cluster');
    await waitFor(() => controlPlaneProcesses(dataDir).length === 0, { timeoutMs: 20_000, message: 'no etcd/kube-apiserver left' });
    assert.ok(!existsSync(dataDir), 'the data directory is removed');
  });
});
