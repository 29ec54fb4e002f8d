/**
 * `osc must-gather` against the dev cluster of `osc start`, as the troubleshooting chapter has a user run it:
 * the operator runs in the start process, so its log (<home>/osc.log) is collected; pods on kwok's simulated
 * nodes, where no container runs, are said to be so instead of answered with the API server's raw DNS errors;
 * and the nodes' journals hold what their simulated host side wrote (a reboot, kata-deploy's runtime restart,
 * a kata pod's sandbox: the runtime, the kata shim, QEMU through the shim, virtiofsd), on OpenShift's CRI-O
 * nodes and on a plain cluster's containerd nodes.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
/** Every `osc start` of the file: one that a failed test left running would keep the test process alive. */
const starts: ChildProcess[] = [];
after(() => {
  for (const p of starts) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** `osc start` in a home of its own; answers the kubectl to use and its kubeconfig once the banner is out. */
async function startDev(
  name: string,
  args: string[],
): Promise<{ kubectl: (a: string[]) => ReturnType<typeof runKubectl>; kubeconfig: string }> {
  const home = join(dir, name);
  let out = '';
  start = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), 'start', '--home', home, '--no-console', '--quiet', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  starts.push(start);
  start.stdout?.on('data', (d) => (out += String(d)));
  start.stderr?.on('data', (d) => (out += String(d)));
  await waitFor(() => /Press Ctrl-C to stop/.test(out) || start?.exitCode !== null, { timeoutMs: 900_000, message: 'osc start is ready' });
  const kubeconfig = join(home, 'kubeconfig');
  const bin = /export PATH=(\S+):\$PATH/.exec(out)?.[1];
  assert.ok(bin, out);
  return { kubectl: (a) => runKubectl(join(bin, 'kubectl'), kubeconfig, a), kubeconfig };
}

async function stopDev(): Promise<void> {
  start?.kill('SIGINT');
  await new Promise((r) => start?.once('exit', r));
}

/** must-gather into a directory of its own; answers its output and a node's journal from the archive. */
async function mustGather(kubeconfig: string, name: string, node: string) {
  const dest = join(dir, name);
  const mg = await runOsc(['must-gather', '--kubeconfig', kubeconfig, '--dest-dir', dest]);
  assert.equal(mg.code, 0, mg.stderr);
  assert.doesNotMatch(mg.stderr, new RegExp(`node ${node}: `), 'no problem reading the node');
  const archive = readdirSync(dest).find((f) => f.endsWith('.tar.gz'));
  assert.ok(archive);
  const unpacked = join(dir, `${name}-unpacked`);
  mkdirSync(unpacked);
  await extract({ file: join(dest, archive), cwd: unpacked });
  const [top] = readdirSync(unpacked);
  return { mg, journal: readFileSync(join(unpacked, top ?? '', 'nodes', node, 'journal.log'), 'utf8') };
}

/** One section of a node's journal, by its `=== journalctl ...` header: its lines up to the next header. */
function section(journal: string, selectors: string): string[] {
  const lines = journal.split('\n');
  const at = lines.indexOf(`=== journalctl ${selectors}`);
  assert.ok(at >= 0, `no section ${selectors} in:\n${journal}`);
  const end = lines.findIndex((l, i) => i > at && l.startsWith('=== '));
  return lines.slice(at + 1, end < 0 ? undefined : end).filter(Boolean);
}

const QEMU = "-t kata -g 'qemuPid=[0-9]+'";

/** Runs a `runtimeClassName: kata` pod on a node, waits for it to run, deletes it and waits for it to go. */
async function runKataPod(kubectl: (a: string[]) => ReturnType<typeof runKubectl>, name: string): Promise<string> {
  const overrides = JSON.stringify({ spec: { runtimeClassName: 'kata' } });
  const r = await kubectl(['run', name, '--image=registry.example.com/hello:1', `--overrides=${overrides}`]);
  assert.equal(r.code, 0, r.stderr);
  let node = '';
  await waitFor(
    async () => {
      const got = (await kubectl(['get', 'pod', name, '-o', 'jsonpath={.status.phase} {.spec.nodeName}'])).stdout.split(' ');
      node = got[1] ?? '';
      return got[0] === 'Running';
    },
    { timeoutMs: 120_000, message: `the kata pod ${name} runs` },
  );
  const d = await kubectl(['delete', 'pod', name, '--wait=true', '--timeout=120s']);
  assert.equal(d.code, 0, d.stderr);
  return node;
}

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
  starts.push(start);
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
  // No kata pod has run on the node yet: QEMU (which logs through the kata runtime, with its pid) has no line.
  assert.deepEqual(section(journal, QEMU), ['-- No entries --']);
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

  // A kata pod runs on the worker and is deleted: CRI-O ran its sandbox, the kata shim started QEMU and
  // stopped it, and must-gather reads those lines where the documentation's troubleshooting chapter looks.
  const ranOn = await runKataPod((a) => runKubectl(join(kubectl, 'kubectl'), kubeconfig, a), 'kata-probe');
  assert.equal(ranOn, 'worker-0');
  const { journal: after } = await mustGather(kubeconfig, 'dest3', 'worker-0');
  const kata = section(after, '-t kata');
  assert.ok(
    kata.some((l) =>
      /^\w{3} \d{2} [\d:]{8} worker-0 kata\[\d+\]: time="\S+" level=info msg="created vm path" name=containerd-shim-v2 /.test(l),
    ),
    kata.join('\n'),
  );
  const qemu = section(after, QEMU);
  assert.match(
    qemu[0] ?? '',
    /^\w{3} \d{2} [\d:]{8} worker-0 kata\[\d+\]: time="\S+" level=info msg="Start logging QEMU \(qemuPid=\d+\)" name=containerd-shim-v2 pid=\d+ sandbox=[0-9a-f]{64} source=virtcontainers\/hypervisor subsystem=qemu$/,
  );
  assert.match(qemu.at(-1) ?? '', /msg="Stop logging QEMU \(qemuPid=\d+\)"/);
  const crio = section(after, '-u crio').join('\n');
  assert.match(crio, /crio\[\d+\]: .*msg="Running pod sandbox: default\/kata-probe\/POD"/);
  assert.match(crio, /crio\[\d+\]: .*msg="Stopped pod sandbox: [0-9a-f]{64}"/);
  assert.match(section(after, '-t virtiofsd').join('\n'), /virtiofsd\[\d+\]: Client connected, servicing requests/);

  await stopDev();
});

test('must-gather on a plain Kubernetes dev cluster reads the journals kata-deploy and a kata pod left on the node', async () => {
  const { kubectl, kubeconfig } = await startDev('home-kubernetes', ['--workers', '1', '--distribution', 'kubernetes']);
  const kc = await kubectl(['apply', '-f', join(root, 'config', 'samples', 'cluster-kataconfig.yaml')]);
  assert.equal(kc.code, 0, kc.stderr);
  await waitFor(
    async () =>
      (await kubectl(['get', 'kataconfig', 'cluster-kataconfig', '-o', 'jsonpath={.status.kataNodes.installed}'])).stdout.includes(
        'worker-0',
      ),
    { timeoutMs: 300_000, message: 'kata installed on worker-0' },
  );
  assert.equal(await runKataPod(kubectl, 'kata-probe'), 'worker-0');
  const { journal } = await mustGather(kubeconfig, 'dest-kubernetes', 'worker-0');
  // A kubeadm node runs containerd: kata-deploy restarted it to load kata's handlers, then kata ran a pod.
  assert.doesNotMatch(journal, /^=== journalctl -u crio$/m);
  const containerd = section(journal, '-u containerd').join('\n');
  assert.match(
    containerd,
    /^\w{3} \d{2} [\d:]{8} worker-0 systemd\[1\]: Started containerd\.service - containerd container runtime\.$/m,
    journal,
  );
  assert.match(
    containerd,
    /containerd\[\d+\]: .*msg="RunPodSandbox for &PodSandboxMetadata\{Name:kata-probe,Uid:[0-9a-f-]+,Namespace:default,Attempt:0,\} returns sandbox id/,
  );
  assert.match(section(journal, '-t kata').join('\n'), / worker-0 kata\[\d+\]: .*msg="created vm path"/);
  assert.match(section(journal, QEMU)[0] ?? '', /msg="Start logging QEMU \(qemuPid=\d+\)"/);
  await stopDev();
});
