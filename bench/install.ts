/**
 * Benchmark: install kata on N simulated workers and measure the operator.
 *
 *   node bench/install.ts [--workers 1000,5000] [--reboot-ms 100] [--max-unavailable 10%] [--lease-seconds 40] [--idle-s 60] [--no-build]
 *
 * The operator runs compiled (dist/, built first unless --no-build), in a process of its own, as the image
 * runs it. Prints, per size: the install time; how long after a node's Machine Config Operator state
 * changes the KataConfig status shows it (p50, p99: both observed by the watches of one observer process,
 * on one clock); the KataConfig status writes and how many failed, the 409 Conflicts among all the
 * operator's requests; node patches and API requests per node; the operator's CPU seconds during the
 * install and during an idle window after it, and its API writes in that window; its peak RSS (getrusage
 * maxRSS) and peak V8 heap (sampled); and what the whole cluster costs: each component's peak RSS and the
 * CPU it spent during the install (etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok,
 * and this process, which runs the simulators).
 */
import { fork, spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { KataConfigs } from '../src/api/kataconfig.ts';
import { MachineConfigPools } from '../src/api/openshift.ts';
import type { ProcessUsage } from '../src/devcluster/controlplane/usage.ts';
import { DevCluster } from '../src/devcluster/devcluster.ts';
import { desiredKataPool } from '../src/platform/openshift/machineconfig.ts';
import { silentLogger } from '../src/runtime/log.ts';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1000,5000' },
    'reboot-ms': { type: 'string', default: '100' },
    'max-unavailable': { type: 'string', default: '10%' },
    'lease-seconds': { type: 'string', default: '40' },
    'idle-s': { type: 'string', default: '60' },
    'no-build': { type: 'boolean', default: false },
  },
});
const sizes = (values.workers ?? '')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const rebootMs = Number(values['reboot-ms']);
const maxUnavailable = values['max-unavailable'] ?? '10%';
const leaseSeconds = Number(values['lease-seconds']);
const idleS = Number(values['idle-s']);

interface Requests {
  byVerb: Record<string, number>;
  total: number;
  writes: number;
  /** Writes by "VERB resource". */
  writesBy: Record<string, number>;
  nodePatches: number;
  conflicts: number;
}
interface Mark {
  cpuSeconds: number;
  requests: Requests;
}
interface Report {
  importRSSKiB: number;
  maxRSSKiB: number;
  rssNowKiB: number;
  peakHeapUsedMiB: number;
  peakHeapTotalMiB: number;
  requests: Requests;
  statusWrites: number;
  statusWriteErrors: number;
  reconciles: number;
  reconcileErrors: number;
}

if (!values['no-build']) {
  // What the image runs: the compiled build, fresh.
  const tsc = new URL('../node_modules/typescript/bin/tsc', import.meta.url).pathname;
  const root = new URL('..', import.meta.url).pathname;
  const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed: the benchmark runs the compiled operator');
}

/** A benchmark helper process with a request/answer channel over IPC. */
function spawnChild(script: string, args: string[]) {
  const child = fork(new URL(script, import.meta.url).pathname, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting: ((m: unknown) => void)[] = [];
  const early: unknown[] = [];
  child.on('message', (m) => {
    const w = waiting.shift();
    if (w) w(m);
    else early.push(m);
  });
  const next = () => (early.length ? Promise.resolve(early.shift()) : new Promise<unknown>((r) => waiting.push(r)));
  return { child, next };
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
};

async function runOnce(workers: number) {
  const t0 = Date.now();
  const dev = await DevCluster.start({ workers, rebootMs, nodeLeaseDurationSeconds: leaseSeconds, log: silentLogger() });
  const clusterReady = Date.now() - t0;
  // A pool made ahead with a larger maxUnavailable keeps a 1,000-node rollout brief; the operator keeps it.
  const pool = desiredKataPool();
  await dev.client.create(MachineConfigPools, { ...pool, spec: { ...pool.spec, maxUnavailable } });

  const operator = spawnChild('operator-process.js', [dev.controlPlane.kubeconfigPath]);
  const observer = spawnChild('observer-process.ts', [dev.controlPlane.kubeconfigPath, String(workers)]);
  await Promise.all([operator.next(), observer.next()]); // both ready
  const mark = async () => {
    operator.child.send({ cmd: 'mark' });
    return (await operator.next()) as Mark;
  };
  const usageBefore = await clusterUsage(dev);
  const m0 = await mark();
  const tInstall = Date.now();
  await dev.client.create(KataConfigs, { metadata: { name: 'bench' }, spec: {} });
  await observer.next(); // done: every node installed, InProgress False
  const installMs = Date.now() - tInstall;
  const m1 = await mark();
  const usageAfter = await clusterUsage(dev);
  // Idle: installed, nothing changes but the heartbeats (node leases) and whatever the cluster does on its own.
  await new Promise((r) => setTimeout(r, idleS * 1000));
  const m2 = await mark();
  const cluster = Object.fromEntries(
    Object.entries(usageAfter).map(([c, u]) => [
      c,
      { peakRssMiB: +u.peakRssMiB.toFixed(0), installCpuS: +(u.cpuSeconds - (usageBefore[c]?.cpuSeconds ?? 0)).toFixed(1) },
    ]),
  );
  operator.child.send({ cmd: 'report' });
  const report = (await operator.next()) as Report;
  observer.child.send({ cmd: 'report' });
  const { delays } = (await observer.next()) as { delays: number[] };
  for (const c of [operator, observer]) {
    c.child.send({ cmd: 'stop' });
    await new Promise((r) => c.child.once('exit', r));
  }
  await dev.stop();
  // The install's requests: from the KataConfig's creation to the end of the install.
  const installRequests = m1.requests.total - m0.requests.total;
  return {
    workers,
    clusterReadyS: +(clusterReady / 1000).toFixed(1),
    installS: +(installMs / 1000).toFixed(1),
    transitionsMeasured: delays.length,
    delayP50Ms: +pct(delays, 50).toFixed(1),
    delayP99Ms: +pct(delays, 99).toFixed(1),
    statusWrites: report.statusWrites,
    statusWriteErrors: report.statusWriteErrors,
    statusWritesPerNode: +(report.statusWrites / workers).toFixed(2),
    conflicts409: report.requests.conflicts,
    nodePatchesPerNode: +((m1.requests.nodePatches - m0.requests.nodePatches) / workers).toFixed(2),
    apiRequests: installRequests,
    apiRequestsPerNode: +(installRequests / workers).toFixed(2),
    requestsByVerb: report.requests.byVerb,
    reconciles: report.reconciles,
    reconcileErrors: report.reconcileErrors,
    installCpuS: +(m1.cpuSeconds - m0.cpuSeconds).toFixed(2),
    idleS,
    idleCpuS: +(m2.cpuSeconds - m1.cpuSeconds).toFixed(2),
    idleWrites: m2.requests.writes - m1.requests.writes,
    idleRequests: m2.requests.total - m1.requests.total,
    idleWritesBy: Object.fromEntries(
      Object.entries(m2.requests.writesBy)
        .map(([k, n]) => [k, n - (m1.requests.writesBy[k] ?? 0)])
        .filter(([, n]) => Number(n) > 0),
    ),
    operatorPeakRSSMiB: +(report.maxRSSKiB / 1024).toFixed(1),
    operatorRSSAfterImportsMiB: +(report.importRSSKiB / 1024).toFixed(1),
    operatorPeakHeapUsedMiB: +report.peakHeapUsedMiB.toFixed(1),
    operatorPeakHeapTotalMiB: +report.peakHeapTotalMiB.toFixed(1),
    cluster,
  };
}

/** Each control plane component's usage, and this process's (the simulators run here). */
async function clusterUsage(dev: DevCluster): Promise<Record<string, ProcessUsage>> {
  const r = process.resourceUsage();
  const self: ProcessUsage = {
    rssMiB: process.memoryUsage.rss() / 2 ** 20,
    peakRssMiB: r.maxRSS / 1024,
    cpuSeconds: (r.userCPUTime + r.systemCPUTime) / 1e6,
  };
  return { ...(await dev.controlPlane.usage()), simulators: self } as Record<string, ProcessUsage>;
}

console.log(`# install benchmark: reboot ${rebootMs} ms, kata-oc maxUnavailable ${maxUnavailable}, node leases of ${leaseSeconds} s`);
for (const n of sizes) {
  const r = await runOnce(n);
  console.log(JSON.stringify(r));
  console.log(
    [
      `workers=${r.workers}`,
      `install=${r.installS}s`,
      `status delay p50=${r.delayP50Ms}ms p99=${r.delayP99Ms}ms (${r.transitionsMeasured} transitions)`,
      `status writes=${r.statusWrites} (${r.statusWritesPerNode}/node, ${r.statusWriteErrors} failed; 409s of all requests: ${r.conflicts409})`,
      `node patches/node=${r.nodePatchesPerNode}`,
      `API requests/node=${r.apiRequestsPerNode}`,
    ].join('  '),
  );
  console.log(
    [
      `  operator CPU install=${r.installCpuS}s idle(${r.idleS}s)=${r.idleCpuS}s`,
      `API writes while idle=${r.idleWrites} ${JSON.stringify(r.idleWritesBy)} (requests ${r.idleRequests})`,
      `peak RSS=${r.operatorPeakRSSMiB}MiB (${r.operatorRSSAfterImportsMiB}MiB once built, before its caches filled)`,
      `peak heap used=${r.operatorPeakHeapUsedMiB}MiB (total ${r.operatorPeakHeapTotalMiB}MiB)`,
    ].join('  '),
  );
  console.log(
    `  cluster cost during install (peak RSS, CPU): ${Object.entries(r.cluster)
      .map(([c, u]) => `${c} ${u.peakRssMiB}MiB ${u.installCpuS}s`)
      .join(', ')}`,
  );
}
