/**
 * `osc must-gather` against the dev cluster of `osc start`, as the troubleshooting chapter has a user run it:
 * the operator runs in the start process, so its log (<home>/osc.log) is collected; pods on kwok's simulated
 * nodes, where no container runs, are said to be so instead of answered with the API server's raw DNS errors.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { extract } from 'tar';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { runKubectl } from '../../src/devcluster/controlplane.ts';
import { runOsc } from '../support/cli.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'osc-mg-dev-'));
let start: ChildProcess | undefined;
after(() => {
  if (start && start.exitCode === null && start.signalCode === null) start.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('must-gather on the dev cluster collects the operator log, explains pods on simulated nodes and reads their journals', async () => {
  const home = join(dir, 'home');
  let out = '';
  start = spawn(
    process.execPath,
    [join(root, 'src', 'cli', 'main.ts'), 'start', '--home', home, '--no-console', '--quiet', '--workers', '1'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  start.stdout?.on('data', (d) => (out += String(d)));
  start.stderr?.on('data', (d) => (out += String(d)));
  await waitFor(() => /Press Ctrl-C to stop/.test(out) || start?.exitCode !== null, { timeoutMs: 900_000, message: 'osc start is ready' });
  const kubeconfig = join(home, 'kubeconfig');
  const kubectl = /export PATH=(\S+):\$PATH/.exec(out)?.[1];
  assert.ok(kubectl, out);
  // A pod in the operator's namespace, placed on a kwok node by the scheduler.
  const r = await runKubectl(join(kubectl, 'kubectl'), kubeconfig, [
    '-n',
    OPERATOR_NAMESPACE,
    'run',
    'probe',
    '--image=registry.example.com/probe:1',
  ]);
  assert.equal(r.code, 0, r.stderr);
  await waitFor(
    async () =>
      (
        await runKubectl(join(kubectl, 'kubectl'), kubeconfig, [
          '-n',
          OPERATOR_NAMESPACE,
          'get',
          'pod',
          'probe',
          '-o',
          'jsonpath={.status.phase}',
        ])
      ).stdout === 'Running',
    { timeoutMs: 120_000, message: 'the probe pod runs' },
  );

  const dest = join(dir, 'dest');
  const mg = await runOsc(['must-gather', '--kubeconfig', kubeconfig, '--dest-dir', dest]);
  assert.equal(mg.code, 0, mg.stderr);
  assert.doesNotMatch(mg.stderr, /no such host|dial tcp/, 'no raw DNS errors');
  assert.match(mg.stdout, /collected the operator's log .*osc\.log/);
  const archive = readdirSync(dest).find((f) => f.endsWith('.tar.gz'));
  assert.ok(archive);
  const unpacked = join(dir, 'unpacked');
  rmSync(unpacked, { recursive: true, force: true });
  (await import('node:fs')).mkdirSync(unpacked);
  await extract({ file: join(dest, archive), cwd: unpacked });
  const [top] = readdirSync(unpacked);
  const base = join(unpacked, top ?? '');
  assert.match(readFileSync(join(base, 'logs', 'operator', 'osc.log'), 'utf8'), /"msg"/, "the operator's JSON log");
  assert.match(mg.stderr, /^warning: not collected: logs of \S+\/probe\/probe: node worker-0 is simulated \(kwok, the dev cluster\)/m);
  assert.match(readFileSync(join(base, 'summary.txt'), 'utf8'), /- logs of \S+\/probe\/probe: node worker-0 is simulated/);

  // With kata installed, the worker rebooted into it: must-gather reads its journal with a node-log pod, and
  // the simulated node answers with the lines its reboot wrote.
  const kc = await runKubectl(join(kubectl, 'kubectl'), kubeconfig, [
    'apply',
    '-f',
    join(root, 'config', 'samples', 'cluster-kataconfig.yaml'),
  ]);
  assert.equal(kc.code, 0, kc.stderr);
  await waitFor(
    async () =>
      (
        await runKubectl(join(kubectl, 'kubectl'), kubeconfig, [
          'get',
          'kataconfig',
          'cluster-kataconfig',
          '-o',
          'jsonpath={.status.kataNodes.installed}',
        ])
      ).stdout.includes('worker-0'),
    { timeoutMs: 300_000, message: 'kata installed on worker-0' },
  );
  const dest2 = join(dir, 'dest2');
  const mg2 = await runOsc(['must-gather', '--kubeconfig', kubeconfig, '--dest-dir', dest2]);
  assert.equal(mg2.code, 0, mg2.stderr);
  assert.doesNotMatch(mg2.stderr, /node worker-0: /, 'no problem reading the node');
  const archive2 = readdirSync(dest2).find((f) => f.endsWith('.tar.gz'));
  assert.ok(archive2);
  const unpacked2 = join(dir, 'unpacked2');
  (await import('node:fs')).mkdirSync(unpacked2);
  await extract({ file: join(dest2, archive2), cwd: unpacked2 });
  const [top2] = readdirSync(unpacked2);
  const journal = readFileSync(join(unpacked2, top2 ?? '', 'nodes', 'worker-0', 'journal.log'), 'utf8');
  assert.match(journal, /^=== journalctl -u crio$/m);
  assert.match(journal, /^\w{3} \d{2} [\d:]{8} worker-0 systemd\[1\]: Stopped Kubernetes Kubelet\.$/m, journal);
  assert.match(journal, /worker-0 systemd\[1\]: Started Container Runtime Interface for OCI \(CRI-O\)\.$/m);
  assert.match(journal, /^=== journalctl -t qemu-kvm\n-- No entries --$/m);
  // The node-log pods go with their namespace afterwards.
  await waitFor(
    async () =>
      (
        await runKubectl(join(kubectl, 'kubectl'), kubeconfig, [
          'get',
          'pods',
          '-A',
          '-l',
          'app.kubernetes.io/component=must-gather-node-logs',
          '-o',
          'name',
        ])
      ).stdout.trim() === '',
    { timeoutMs: 120_000, message: 'the node-log pods are gone' },
  );

  start.kill('SIGINT');
  await new Promise((r) => start?.once('exit', r));
});
