/**
 * The README walkthrough, replayed as a newcomer would: `osc start` (what `npm start` runs) in one
 * process, then the documented procedure with the printed kubeconfig and the real kubectl, the manifests
 * taken from the README itself. Ctrl-C (SIGINT to the terminal's whole process group) must end it all,
 * the operator first: no control plane process survives.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The files the README writes with `cat > NAME <<'EOF'`. */
function readmeFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const m of readme.matchAll(/cat > (\S+) <<'EOF'\n([\s\S]*?)\nEOF\n/g)) files.set(m[1] ?? '', `${m[2]}\n`);
  return files;
}

/** pid -> [ppid, comm] for every process, from /proc. */
function processTable(): Map<number, { ppid: number; comm: string; state: string }> {
  const table = new Map<number, { ppid: number; comm: string; state: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const [state, ppid] = stat
        .slice(close + 2)
        .split(' ')
        .slice(0, 2);
      table.set(Number(entry), { ppid: Number(ppid), comm, state: state ?? '' });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

function descendants(pid: number): { pid: number; comm: string }[] {
  const table = processTable();
  const out: { pid: number; comm: string }[] = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift() as number;
    for (const [child, info] of table) {
      if (info.ppid === p) {
        out.push({ pid: child, comm: info.comm });
        queue.push(child);
      }
    }
  }
  return out;
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

describe('README walkthrough: npm start, then the documented procedure with kubectl', () => {
  const home = mkdtempSync(join(tmpdir(), 'osc-e2e-home-'));
  const work = mkdtempSync(join(tmpdir(), 'osc-e2e-work-'));
  let osc: ChildProcess;
  let out = '';
  let exited: Promise<number | null>;
  let kubeconfig = '';
  let kubectlPath = '';

  const kubectl = (args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      // Its own discovery cache: ~/.kube/cache may hold one of an earlier cluster on the same port.
      const env = { ...process.env, KUBECONFIG: kubeconfig, KUBECACHEDIR: join(work, 'kube-cache') };
      execFile(kubectlPath, args, { cwd: work, env }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  const ok = async (args: string[]) => {
    const r = await kubectl(args);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  /** What `kubectl describe kataconfig | sed -n /^Status:/,/^Events/p` shows. */
  const describeStatus = async () => {
    const d = await ok(['describe', 'kataconfig']);
    const start = d.indexOf('\nStatus:');
    return start < 0 ? '' : d.slice(start + 1, d.indexOf('\nEvents:', start) + 1);
  };

  before(async () => {
    // The README's command is `npm start`, i.e. `node src/cli/main.ts start` with the project's Node.
    // A process group of its own, as a terminal gives the command it runs: Ctrl-C signals the group.
    osc = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), 'start', '--workers', '2', '--reboot-ms', '500'], {
      cwd: root,
      env: { ...process.env, OSC_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    osc.stdout?.on('data', (d) => (out += String(d)));
    osc.stderr?.on('data', (d) => (out += String(d)));
    exited = new Promise((resolve) => osc.on('exit', (code) => resolve(code)));
    const t0 = Date.now();
    await waitFor(() => out.includes('Press Ctrl-C to stop') || osc.exitCode !== null, {
      timeoutMs: 180_000,
      message: 'osc start to be up',
    });
    assert.equal(osc.exitCode, null, out);
    console.log(`# osc start: up in ${Date.now() - t0} ms`);
    kubeconfig = /^ {2}export KUBECONFIG=(\S+)$/m.exec(out)?.[1] ?? '';
    kubectlPath = /alias kubectl=(\S+)$/m.exec(out)?.[1] ?? '';
    assert.ok(kubeconfig && kubectlPath, out);
    for (const [name, text] of readmeFiles()) writeFileSync(join(work, name), text);
  });
  after(() => {
    if (osc?.exitCode === null && osc.signalCode === null) osc.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  test('the printed kubeconfig and kubectl reach the dev cluster', async () => {
    assert.equal(kubeconfig, join(home, 'kubeconfig'));
    assert.ok(existsSync(kubeconfig));
    const nodes = await ok(['get', 'nodes']);
    for (const n of ['master-0', 'worker-0', 'worker-1']) assert.match(nodes, new RegExp(`^${n}\\s`, 'm'));
    const pools = await ok(['get', 'machineconfigpools']);
    assert.match(pools, /^master\s+rendered-master-\S+\s+True\s+False\s+False/m);
    assert.match(pools, /^worker\s+rendered-worker-\S+\s+True\s+False\s+False/m);
  });

  test("the banner's KataConfig file exists and is the README's", () => {
    const named = /^ {2}kubectl create -f (\S+)/m.exec(out)?.[1] ?? '';
    assert.ok(named, out);
    const path = resolve(root, named);
    assert.ok(existsSync(path), `the banner names ${named}, which does not exist`);
    const sample = parse(readFileSync(path, 'utf8'));
    assert.deepEqual(sample, parse(readmeFiles().get('cluster-kataconfig.yaml') ?? ''));
  });

  test("create the KataConfig from the README (the documentation's) and watch the documented transitions", async () => {
    assert.ok(readme.includes('kubectl create -f cluster-kataconfig.yaml'));
    assert.match(readFileSync(join(work, 'cluster-kataconfig.yaml'), 'utf8'), /name: cluster-kataconfig\n/);
    assert.match(
      await ok(['create', '-f', 'cluster-kataconfig.yaml']),
      /kataconfig\.kataconfiguration\.openshift\.io\/cluster-kataconfig created/,
    );

    // `watch "kubectl describe kataconfig | sed -n /^Status:/,/^Events/p"`, until done.
    const seen: string[] = [];
    const final = await waitFor(
      async () => {
        const s = await describeStatus();
        if (s && seen.at(-1) !== s) seen.push(s);
        const done = /Installed:\s+worker-0\s+worker-1/.test(s) && /Reason:\s*\n\s+Status:\s+False\s+Type:\s+InProgress/.test(s);
        return done ? s : undefined;
      },
      { timeoutMs: 180_000, intervalMs: 100, message: 'kata installed on both workers' },
    );
    assert.match(final, /Node Count:\s+2\s+Ready Node Count:\s+2/);
    assert.ok(
      seen.some((s) => /Message:\s+Performing initial installation of kata on cluster\s+Reason:\s+Installing\s+Status:\s+True/.test(s)),
      `an Installing state was seen:\n${seen.join('\n---\n')}`,
    );
    // The same, by jsonpath.
    const jp = await ok([
      'get',
      'kataconfig',
      'cluster-kataconfig',
      '-o',
      'jsonpath={.status.kataNodes.readyNodeCount}/{.status.kataNodes.nodeCount}',
    ]);
    assert.equal(jp, '2/2');
    // osc start printed each transition.
    assert.match(out, /KataConfig cluster-kataconfig: Installing — 0\/2 nodes ready — waiting to install: worker-0, worker-1/);
    assert.match(out, /KataConfig cluster-kataconfig: Installed — 2\/2 nodes ready — installed: worker-0, worker-1/);

    const list = await ok(['get', 'kataconfig']);
    assert.match(list, /^NAME\s+IN PROGRESS\s+COMPLETED\s+TOTAL\s+AGE\ncluster-kataconfig\s+False\s+2\s+2\s+\S+\n$/);
    assert.match(await ok(['get', 'mcp', 'kata-oc']), /^kata-oc\s+rendered-kata-oc-\S+\s+True\s+False\s+False\s+2\s+2\s+2\s+0/m);
    assert.match(await ok(['get', 'runtimeclass']), /^NAME\s+HANDLER\s+AGE\nkata\s+kata\s+\S+\n$/);
  });

  test('osc status shows it at a glance', async () => {
    const status = await new Promise<string>((resolve) =>
      execFile(
        process.execPath,
        [join(root, 'src', 'cli', 'main.ts'), 'status', '--watch'],
        { env: { ...process.env, KUBECONFIG: kubeconfig } },
        (_e, stdout) => resolve(stdout),
      ),
    );
    assert.match(
      status,
      /^KataConfig cluster-kataconfig: Installed — kata is installed on 2 node\(s\); pods can use runtimeClassName: kata\n\[##########\] 2\/2 nodes\n/,
    );
  });

  test('run hello-openshift with runtimeClassName: kata', async () => {
    assert.ok(readme.includes('kubectl create -f hello-openshift.yaml'));
    assert.match(await ok(['create', '-f', 'hello-openshift.yaml']), /pod\/hello-openshift created/);
    const rc = await ok([
      'get',
      'pod',
      'hello-openshift',
      '-o',
      'jsonpath={.spec.runtimeClassName} {.spec.overhead.memory} {.spec.nodeSelector}',
    ]);
    assert.equal(rc, 'kata 350Mi {"node-role.kubernetes.io/kata-oc":""}');
    // The scheduler places it on a node with kata, and kwok (the node's kubelet here) runs it.
    const wide = await waitFor(
      async () => {
        const r = await ok(['get', 'pod', 'hello-openshift', '-o', 'wide', '--no-headers']);
        return /\sRunning\s/.test(r) ? r : undefined;
      },
      { timeoutMs: 60_000, message: 'hello-openshift Running' },
    );
    assert.match(wide, /^hello-openshift\s+1\/1\s+Running\s+0\s+\S+\s+10\.(12[89]|13[01])\.\d+\.\d+\s+worker-[01]\s/);
  });

  test('delete the KataConfig: blocked by the pod, then clean once it is gone', async () => {
    assert.ok(readme.includes('kubectl delete kataconfig cluster-kataconfig --wait=false'));
    await ok(['delete', 'kataconfig', 'cluster-kataconfig', '--wait=false']);
    const blocked = await waitFor(
      async () => {
        const s = await describeStatus();
        return s.includes('BlockedByExistingKataPods') ? s : undefined;
      },
      { timeoutMs: 60_000, message: 'the uninstall to be blocked' },
    );
    assert.match(
      blocked,
      /Message:\s+Existing pods using "kata" RuntimeClass found\. Please delete the pods manually for KataConfig deletion to proceed\s+Reason:\s+BlockedByExistingKataPods\s+Status:\s+False/,
    );
    assert.ok(await ok(['get', 'kataconfig', 'cluster-kataconfig']), 'still there');

    await ok(['delete', 'pod', 'hello-openshift']);
    assert.ok(readme.includes('kubectl wait --for=delete kataconfig/cluster-kataconfig --timeout=5m'));
    const waited = await kubectl(['wait', '--for=delete', 'kataconfig/cluster-kataconfig', '--timeout=5m']);
    assert.equal(waited.code, 0, waited.stderr);
    const rcs = await kubectl(['get', 'runtimeclass']);
    assert.match(rcs.stderr, /No resources found/);
    const pool = await kubectl(['get', 'mcp', 'kata-oc']);
    assert.match(pool.stderr, /NotFound/);
    const labelled = await ok(['get', 'nodes', '-l', 'node-role.kubernetes.io/kata-oc', '-o', 'name']);
    assert.equal(labelled, '');
    assert.match(out, /KataConfig cluster-kataconfig: deleted/);
  });

  test('Ctrl-C stops the operator, then the cluster; nothing survives', async () => {
    const pid = osc.pid ?? 0;
    // comm is cut at 15 characters: kube-controller-manager shows as kube-controller.
    const components = ['etcd', 'kube-apiserver', 'kube-controller', 'kube-scheduler', 'kwok'];
    const procs = descendants(pid).filter((p) => components.includes(p.comm));
    assert.deepEqual(procs.map((p) => p.comm).sort(), components, 'osc start runs one of each control plane component');
    process.kill(-pid, 'SIGINT'); // Ctrl-C: the whole process group
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('timeout'), 60_000).unref())]);
    assert.equal(code, 0, out);
    assert.match(out, /SIGINT: stopping the operator, then the cluster\.\.\.\noperator stopped\ncluster stopped/);
    await waitFor(() => procs.every((p) => !alive(p.pid)), { timeoutMs: 20_000, message: 'the control plane gone' });
    assert.ok(!existsSync(kubeconfig), 'the kubeconfig of a stopped cluster is removed');
    // The API server was still up when the operator stopped: it handed its lease back.
    const log = readFileSync(join(home, 'osc.log'), 'utf8');
    assert.match(log, /"msg":"released the lease"/);
    assert.doesNotMatch(log, /could not release the lease/);
    for (const c of ['etcd', 'kube-apiserver', 'kube-scheduler', 'kube-controller-manager', 'kwok'])
      assert.ok(existsSync(join(home, 'logs', `${c}.log`)), `${c}'s log stays in the dev cluster's home`);
  });
});
