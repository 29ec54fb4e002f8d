/**
 * The documented procedure on plain Kubernetes, as a user runs it: `osc start --distribution kubernetes
 * --workers 2` in one process, then the real kubectl with the printed kubeconfig: create the KataConfig,
 * watch the documented transitions (one node at a time), `kubectl get katanodes`, a sandboxed pod that
 * lands on a kata node, `kubectl kata status`, then the guarded uninstall, one node at a time.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { messages } from '../../src/api/kataconfig.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');

const KATACONFIG = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: cluster-kataconfig
spec:
  logLevel: info
`;

const POD = `apiVersion: v1
kind: Pod
metadata:
  name: sandboxed
spec:
  runtimeClassName: kata
  containers:
  - name: app
    image: registry.example/app:1
`;

interface Status {
  inProgress?: { status?: string; reason?: string; message?: string };
  kataNodes?: Record<string, unknown>;
}

describe('plain Kubernetes: osc start --distribution kubernetes, then kubectl', () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-e2e-k8s-home-'));
  const work = mkdtempSync(join(tmpdir(), 'osc-e2e-k8s-work-'));
  let osc: ChildProcess;
  let out = '';
  let kubeconfig = '';
  let kubectlPath = '';

  // kubectl finds the kata plugin on the PATH (as `npm install -g` would put it), and its Node 24 first.
  const pluginDir = join(work, 'plugins');
  const run = (cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      // A discovery cache of its own: one left in ~/.kube/cache by an earlier cluster on the same port would
      // claim the MachineConfigPool API.
      const env = {
        ...process.env,
        KUBECONFIG: kubeconfig,
        KUBECACHEDIR: join(work, 'kube-cache'),
        PATH: [pluginDir, dirname(process.execPath), process.env.PATH].join(':'),
      };
      execFile(cmd, args, { cwd: work, env }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  const ok = async (args: string[]) => {
    const r = await run(kubectlPath, args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const status = async (): Promise<Status | undefined> => {
    const r = await run(kubectlPath, ['get', 'kataconfig', 'cluster-kataconfig', '-o', 'json']);
    if (r.code !== 0) return undefined;
    const kc = JSON.parse(r.stdout) as { status?: { conditions?: Status['inProgress'][]; kataNodes?: Record<string, unknown> } };
    const inProgress = kc.status?.conditions?.find((c) => (c as { type?: string })?.type === 'InProgress');
    return { ...(inProgress ? { inProgress } : {}), ...(kc.status?.kataNodes ? { kataNodes: kc.status.kataNodes } : {}) };
  };
  /** Every distinct status, polled with kubectl as a user's `watch` would. */
  const follow = async (done: (s: Status | undefined) => boolean, message: string): Promise<Status[]> => {
    const seen: Status[] = [];
    await waitFor(
      async () => {
        const s = await status();
        if (s && JSON.stringify(seen.at(-1)) !== JSON.stringify(s)) seen.push(s);
        return done(s);
      },
      { timeoutMs: 180_000, intervalMs: 100, message },
    );
    return seen;
  };
  const list = (s: Status, k: string) => (s.kataNodes?.[k] as string[] | undefined) ?? [];
  const busy = (s: Status) => list(s, 'installing').length + list(s, 'uninstalling').length;

  before(async () => {
    osc = spawn(
      process.execPath,
      [join(root, 'src', 'cli', 'main.ts'), 'start', '--distribution', 'kubernetes', '--workers', '2', '--no-console'],
      { cwd: root, env: { ...process.env, OSC_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    osc.stdout?.on('data', (d) => (out += String(d)));
    osc.stderr?.on('data', (d) => (out += String(d)));
    await waitFor(() => out.includes('Press Ctrl-C to stop') || osc.exitCode !== null, {
      timeoutMs: 180_000,
      message: 'osc start to be up',
    });
    assert.equal(osc.exitCode, null, out);
    kubeconfig = /^ {2}export KUBECONFIG=(\S+)$/m.exec(out)?.[1] ?? '';
    kubectlPath = /alias kubectl=(\S+)$/m.exec(out)?.[1] ?? '';
    assert.ok(kubeconfig && kubectlPath, out);
    writeFileSync(join(work, 'cluster-kataconfig.yaml'), KATACONFIG);
    writeFileSync(join(work, 'sandboxed.yaml'), POD);
    mkdirSync(pluginDir);
    symlinkSync(join(root, 'bin', 'kubectl-kata.js'), join(pluginDir, 'kubectl-kata'));
  });
  after(async () => {
    if (osc?.pid && osc.exitCode === null && osc.signalCode === null) {
      process.kill(-osc.pid, 'SIGINT');
      await waitFor(() => osc.exitCode !== null || osc.signalCode !== null, { timeoutMs: 60_000 }).catch(() => osc.kill('SIGKILL'));
    }
    rmSync(work, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  test('a plain cluster: no MachineConfigPool API', async () => {
    const r = await run(kubectlPath, ['get', 'machineconfigpools']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the server doesn't have a resource type "machineconfigpools"/);
  });

  test('create the KataConfig: the documented transitions, one node at a time', async () => {
    assert.match(await ok(['create', '-f', 'cluster-kataconfig.yaml']), /kataconfig.* created/);
    const seen = await follow(
      (s) => s?.inProgress?.status === 'False' && s.inProgress.reason === '' && s.kataNodes?.readyNodeCount === 2,
      'kata installed on both workers',
    );
    const trace = JSON.stringify(seen, null, 1);
    assert.ok(
      seen.some((s) => s.inProgress?.reason === 'Installing' && s.inProgress.message === messages.installing('kata')),
      trace,
    );
    const w0 = seen.findIndex((s) => list(s, 'installing')[0] === 'worker-0' && list(s, 'waitingToInstall')[0] === 'worker-1');
    const w1 = seen.findIndex((s) => list(s, 'installing')[0] === 'worker-1' && list(s, 'installed')[0] === 'worker-0');
    assert.ok(w0 >= 0 && w1 > w0, `worker-0, then worker-1: ${trace}`);
    assert.ok(
      seen.every((s) => busy(s) <= 1),
      trace,
    );
    assert.match(await ok(['get', 'kataconfig']), /^cluster-kataconfig\s+False\s+2\s+2\s+/m);
    assert.match(await ok(['get', 'runtimeclass']), /^kata\s+kata-qemu\s+/m);
    // KataNodes are written beside the KataConfig status: they may be a moment behind it.
    const nodes = await waitFor(
      async () => {
        const out = await ok(['get', 'katanodes']);
        return (out.match(/^worker-\d\s+Installed\s/gm) ?? []).length === 2 ? out : undefined;
      },
      { message: 'both KataNodes Installed' },
    );
    assert.match(nodes, /^NAME\s+PHASE\s+ASSIGNED\s+ACTIVE\s+LAST KNOWN GOOD\s+ERROR\s+AGE/);
    assert.match(nodes, /^worker-0\s+Installed\s+([0-9a-f]{12})\s+\1\s/m);
    assert.match(nodes, /^worker-1\s+Installed\s+([0-9a-f]{12})\s+\1\s/m);
    assert.match(
      await ok(['get', 'nodes', '-l', 'katacontainers.io/kata-runtime=true', '-o', 'name']),
      /^node\/worker-0\nnode\/worker-1\n$/,
    );
  });

  test('a sandboxed pod lands on a kata node', async () => {
    await ok(['create', '-f', 'sandboxed.yaml']);
    const node = await waitFor(async () => (await ok(['get', 'pod', 'sandboxed', '-o', 'jsonpath={.spec.nodeName}'])) || undefined, {
      message: 'the pod scheduled',
    });
    assert.match(node, /^worker-[01]$/);
    assert.equal(await ok(['get', 'node', node, '-o', 'jsonpath={.metadata.labels.katacontainers\\.io/kata-runtime}']), 'true');
  });

  test('kubectl kata status shows it at a glance', async () => {
    const r = await run(kubectlPath, ['kata', 'status']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /cluster-kataconfig/);
    assert.match(r.stdout, /worker-0/);
  });

  test('delete the KataConfig: blocked by the pod, then nodes leave one at a time, and nothing is left', async () => {
    await ok(['delete', 'kataconfig', 'cluster-kataconfig', '--wait=false']);
    await follow((s) => s?.inProgress?.reason === 'BlockedByExistingKataPods', 'the uninstall blocked');
    assert.equal((await status())?.inProgress?.message, messages.blocked(['kata']));
    await ok(['delete', 'pod', 'sandboxed']);
    const seen = await follow((s) => s === undefined, 'the KataConfig gone');
    const trace = JSON.stringify(seen, null, 1);
    assert.ok(
      seen.some((s) => s.inProgress?.reason === 'Uninstalling' && s.inProgress.message === messages.uninstalling('kata')),
      trace,
    );
    assert.ok(
      seen.every((s) => busy(s) <= 1),
      trace,
    );
    assert.equal(await ok(['get', 'katanodes', '-o', 'name']), '');
    assert.equal(await ok(['get', 'runtimeclass', '-o', 'name']), '');
    assert.equal(
      await ok([
        'get',
        'daemonset',
        '-n',
        'openshift-sandboxed-containers-operator',
        'osc-kata-deploy',
        '--ignore-not-found',
        '-o',
        'name',
      ]),
      '',
    );
    assert.equal(await ok(['get', 'nodes', '-l', 'katacontainers.io/kata-runtime', '-o', 'name']), '');
  });
});
