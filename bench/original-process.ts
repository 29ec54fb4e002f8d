/**
 * The original Go operator (github.com/openshift/sandboxed-containers-operator, built by
 * tools/build-original-operator.sh) for bench/install.ts --operator original: this process starts its
 * binary and answers install.ts over IPC as operator-process.js does for osc ({cmd: 'mark'}, 'report',
 * 'idle', 'profile', 'stop'), with what can be measured from outside the binary:
 *
 * - CPU seconds and peak RSS: the kernel's (/proc/PID/stat utime+stime, /proc/PID/status VmHWM; RssAnon and
 *   RssFile sampled every 250 ms, which costs the operator nothing);
 * - API requests: client-go's own count (rest_client_requests_total, by method and code, scraped from the
 *   operator's metrics endpoint at each mark), which counts what osc's client counts: every request
 *   the process made, watches and leader election included. It does not say which resource (nodes,
 *   KataConfig status...), so the per-resource figures are absent. Its leader election Lease is followed
 *   by a watch of this process: each renewal is one change of the Lease, and two requests (client-go 0.29
 *   reads the Lease before each update);
 * - reconciles: controller-runtime's controller_runtime_reconcile_total for the kataconfig controller.
 *
 * The binary runs as its ClusterServiceVersion runs it: the CSV's args and env (the metrics address moved to
 * a free port), its webhook server on 9443 with a self-signed certificate (no webhook configuration points
 * at it: the bundle's comes with OLM, and osc's benchmark runs none either). Credentials:
 *
 * - `--in-cluster DIR` (the default of install.ts): the service account token and CA in DIR, as in a pod.
 *   client-go reads them from /var/run/secrets/kubernetes.io/serviceaccount, a fixed path: the binary runs
 *   in a mount namespace of its own (unshare, as root) where a tmpfs over /run holds them and the namespace
 *   file, so that leader election finds its namespace and runs as in the CSV (--leader-elect);
 * - a kubeconfig path: the operator runs with it (KUBECONFIG), without leader election, which needs the
 *   namespace file of a pod (controller-runtime: "unable to find leader election namespace").
 *
 *   forked with: BUILD_DIR (in-cluster SA_DIR | kubeconfig KUBECONFIG) ADMIN_KUBECONFIG
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { OPERATOR_NAMESPACE } from '../src/api/names.ts';
import { KubeClient } from '../src/kube/client.ts';
import { type Lease, Leases } from '../src/kube/resources.ts';
import { Informer } from '../src/runtime/informer.ts';

const [buildDir = '', mode, credentialsPath = '', adminKubeconfig = ''] = process.argv.slice(2);
if (!buildDir || !['in-cluster', 'kubeconfig'].includes(mode ?? '') || !credentialsPath || !adminKubeconfig || !process.send)
  throw new Error('usage: forked with BUILD_DIR (in-cluster SA_DIR | kubeconfig KUBECONFIG) ADMIN_KUBECONFIG');
const inCluster = mode === 'in-cluster';

/** The original's leader election Lease: its LeaderElectionID, in the namespace of its pod. */
const ORIGINAL_LEASE = '290f4947.kataconfiguration.openshift.io';

/** The manager container of the bundle's ClusterServiceVersion: its args and env. */
function csvManager(bundle: string): { args: string[]; env: Record<string, string> } {
  const csv = parseYaml(readFileSync(join(bundle, 'sandboxed-containers-operator.clusterserviceversion.yaml'), 'utf8'));
  const container = csv.spec.install.spec.deployments[0].spec.template.spec.containers.find(
    (c: { name: string }) => c.name === 'manager',
  ) as { args?: string[]; env?: { name: string; value?: string }[] };
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return { args: container.args ?? [], env };
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

const runDir = await mkdtemp(join(tmpdir(), 'osc-bench-original-'));
// controller-runtime's webhook server reads its certificate from $TMPDIR/k8s-webhook-server/serving-certs.
const certDir = join(runDir, 'k8s-webhook-server', 'serving-certs');
const cert = spawnSync('sh', [
  '-c',
  `mkdir -p "${certDir}" && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout "${certDir}/tls.key" -out "${certDir}/tls.crt"`,
]);
if (cert.status !== 0) throw new Error(`openssl: ${cert.stderr}`);

const { args: csvArgs, env: csvEnv } = csvManager(join(buildDir, 'bundle'));
const metricsPort = await freePort();
const args = csvArgs
  .filter((a) => inCluster || a !== '--leader-elect')
  .map((a) => (a.startsWith('--metrics-bind-address=') ? `--metrics-bind-address=127.0.0.1:${metricsPort}` : a));
const leaderElection = args.includes('--leader-elect');
const env: Record<string, string> = { ...(process.env as Record<string, string>), ...csvEnv, TMPDIR: runDir };
const manager = join(buildDir, 'manager');
let command: string;
let commandArgs: string[];
if (inCluster) {
  const sa = credentialsPath;
  // controller-runtime prefers a KUBECONFIG to the pod's credentials.
  delete env.KUBECONFIG;
  await copyFile(join(sa, 'token'), join(runDir, 'token'));
  await copyFile(join(sa, 'ca.crt'), join(runDir, 'ca.crt'));
  await writeFile(join(runDir, 'namespace'), OPERATOR_NAMESPACE);
  // unshare and sh exec: the process this starts is the operator's, its pid the one measured.
  const mount = 'mount -t tmpfs -o size=1m tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount';
  const copy = 'cp "$0/token" "$0/ca.crt" "$0/namespace" /run/secrets/kubernetes.io/serviceaccount/';
  command = 'unshare';
  commandArgs = ['--mount', '--propagation', 'private', 'sh', '-c', `${mount} && ${copy} && exec "$@"`, runDir, manager, ...args];
} else {
  env.KUBECONFIG = credentialsPath;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.KUBERNETES_SERVICE_PORT;
  command = manager;
  commandArgs = args;
}
// Its log (zap's development encoder, on stderr) goes straight to a file: BENCH_OPERATOR_LOG, or one that
// goes with this run.
const logPath = process.env.BENCH_OPERATOR_LOG || join(runDir, 'manager.log');
const logFd = openSync(logPath, 'w');
const child = spawn(command, commandArgs, { env, stdio: ['ignore', logFd, logFd] });
closeSync(logFd);
const pid = child.pid ?? 0;
let stopping = false;
const logTail = async () => (await readFile(logPath, 'utf8').catch(() => '')).split('\n').slice(-40).join('\n');
child.on('exit', async (code, signal) => {
  if (stopping) return;
  console.error(`the original operator exited (${signal ?? code}) before the benchmark ended; the end of its log:\n${await logTail()}`);
  await rm(runDir, { recursive: true, force: true });
  process.exit(1);
});

const clockTicks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
const cpuSeconds = () => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks; // utime, stime (fields 14 and 15)
};
const statusKiB = (field: string) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
};
let peakRssAnonKiB = 0;
let rssFileAtPeakKiB = 0;
const sampleRss = () => {
  try {
    const anon = statusKiB('RssAnon');
    if (anon > peakRssAnonKiB) {
      peakRssAnonKiB = anon;
      rssFileAtPeakKiB = statusKiB('RssFile');
    }
  } catch {
    // exited: the exit handler says so
  }
};
const sampler = setInterval(sampleRss, 250);
sampler.unref();

/** The operator's metrics, as Prometheus text: samples of `name` with their labels. */
async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  if (!res.ok) throw new Error(`metrics: HTTP ${res.status}`);
  return res.text();
}
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{ ]+(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] ?? ''] = l[2] ?? '';
    out.push({ labels, value: Number(m[2]) });
  }
  return out;
}

// The Lease's renewals, seen by a watch of that one object (the admin's credentials).
const kc = new KubeConfig();
kc.loadFromFile(adminKubeconfig);
const client = new KubeClient(kc);
const ac = new AbortController();
let leaseWrites = 0;
const leases = new Informer<Lease>(client, Leases, { namespace: OPERATOR_NAMESPACE, fieldSelector: `metadata.name=${ORIGINAL_LEASE}` });
leases.addEventHandler({
  add: () => leaseWrites++,
  update: (o, n) => {
    if (o.metadata.resourceVersion !== n.metadata.resourceVersion) leaseWrites++;
  },
});
void leases.run(ac.signal);
await leases.waitForSync();

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
async function requests() {
  const byVerb: Record<string, number> = {};
  const writesBy: Record<string, number> = {};
  const requestsBy: Record<string, number> = {};
  const conflictsBy: Record<string, number> = {};
  let total = 0;
  let writes = 0;
  let conflicts = 0;
  for (const { labels, value } of samples(await scrape(), 'rest_client_requests_total')) {
    const verb = labels.method ?? '?';
    // Resources are not in client-go's labels: "*" stands for all of them.
    const what = `${verb} *`;
    byVerb[verb] = (byVerb[verb] ?? 0) + value;
    requestsBy[what] = (requestsBy[what] ?? 0) + value;
    total += value;
    if (WRITES.has(verb)) {
      writes += value;
      writesBy[what] = (writesBy[what] ?? 0) + value;
    }
    if (labels.code === '409') {
      conflicts += value;
      conflictsBy[what] = (conflictsBy[what] ?? 0) + value;
    }
  }
  // Each renewal: a GET of the Lease and an update (the first, a create after a GET that found none).
  const leaseRequests = leaderElection ? 2 * leaseWrites : 0;
  return { byVerb, total, writes, writesBy, requestsBy, nodePatches: 0, conflicts, conflictsBy, leaseRequests, leaseWrites };
}

const reconciles = async () => {
  const text = await scrape();
  const of = (name: string) =>
    samples(text, name)
      .filter((s) => s.labels.controller === 'kataconfig')
      .reduce((a, s) => a + s.value, 0);
  return { reconciles: of('controller_runtime_reconcile_total'), reconcileErrors: of('controller_runtime_reconcile_errors_total') };
};

// Ready once the KataConfig controller runs its workers (its caches synced, and with leader election, the
// Lease taken), as osc's process is ready once it runs.
for (const deadline = Date.now() + 120_000; ; await new Promise((r) => setTimeout(r, 200))) {
  const log = await readFile(logPath, 'utf8').catch(() => '');
  if (/Starting workers.*"controller": "kataconfig"/.test(log)) break;
  if (Date.now() > deadline) throw new Error(`the original operator did not start its KataConfig controller in 120 s:\n${await logTail()}`);
}
const importRSSKiB = statusKiB('VmRSS');

process.on('message', async (msg: { cmd: string; phase?: string }) => {
  if (msg.cmd === 'idle') {
    sampleRss();
    clearInterval(sampler);
    process.send?.({ sampling: false });
  } else if (msg.cmd === 'profile') {
    process.send?.({ profiling: false });
  } else if (msg.cmd === 'mark') {
    process.send?.({ cpuSeconds: cpuSeconds(), requests: await requests(), watchEvents: {}, redundantWrites: {} });
  } else if (msg.cmd === 'report') {
    sampleRss();
    process.send?.({
      importRSSKiB,
      maxRSSKiB: statusKiB('VmHWM'),
      peakRssAnonKiB,
      rssFileAtPeakKiB,
      rssNowKiB: statusKiB('VmRSS'),
      peakHeapUsedMiB: Number.NaN,
      peakHeapTotalMiB: Number.NaN,
      requests: await requests(),
      statusWrites: Number.NaN,
      statusWriteErrors: Number.NaN,
      ...(await reconciles()),
      repeatedNodePatches: { nodes: 0, examples: [] },
      statusWriteMs: [],
      leaderElection,
      logPath: process.env.BENCH_OPERATOR_LOG ? logPath : undefined,
    });
  } else if (msg.cmd === 'stop') {
    stopping = true;
    ac.abort();
    child.kill('SIGTERM');
    const exited = await Promise.race([
      new Promise((r) => child.once('exit', () => r(true))),
      new Promise((r) => setTimeout(() => r(false), 35_000)),
    ]);
    if (!exited) child.kill('SIGKILL');
    await client.close();
    await rm(runDir, { recursive: true, force: true });
    process.exit(0);
  }
});
process.send({ ready: true, pid, metricsPort, leaderElection });
