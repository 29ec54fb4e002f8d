/**
 * Benchmark: install kata on N simulated workers and measure the operator.
 *
 *   node bench/install.ts [--workers 100,1000] [--reboot-ms 100] [--max-unavailable 10%]
 *
 * Prints, per size: how long after a node's Machine Config Operator state changes the KataConfig status
 * shows it (p50, p99: both observed by watches in this process, on one clock), status writes and API
 * requests per node, and the operator's peak memory (its own process: getrusage maxRSS).
 */
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import { type KataConfig, KataConfigs } from '../src/api/kataconfig.ts';
import { KATA_POOL, MCO_CURRENT_CONFIG, MCO_STATE } from '../src/api/names.ts';
import { MachineConfigPools } from '../src/api/openshift.ts';
import { DevCluster } from '../src/devcluster/devcluster.ts';
import { type Node, Nodes } from '../src/kube/resources.ts';
import { desiredKataPool } from '../src/platform/machineconfig.ts';
import { Informer } from '../src/runtime/informer.ts';
import { silentLogger } from '../src/runtime/log.ts';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '100,1000' },
    'reboot-ms': { type: 'string', default: '100' },
    'max-unavailable': { type: 'string', default: '10%' },
  },
});
const sizes = (values.workers ?? '')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const rebootMs = Number(values['reboot-ms']);
const maxUnavailable = values['max-unavailable'] ?? '10%';

interface Report {
  importRSSKiB: number;
  maxRSSKiB: number;
  rssNowKiB: number;
  requests: Record<string, number>;
  statusWrites: number;
  reconciles: number;
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
};

async function runOnce(workers: number) {
  const t0 = Date.now();
  const dev = await DevCluster.start({ workers, rebootMs, log: silentLogger() });
  const clusterReady = Date.now() - t0;
  // A pool made ahead with a larger maxUnavailable keeps a 1,000-node rollout brief; the operator keeps it.
  const pool = desiredKataPool();
  await dev.client.create(MachineConfigPools, { ...pool, spec: { ...pool.spec, maxUnavailable } });

  const ac = new AbortController();
  // When each node entered a state, as seen by a watch: "installing" (Working) and "installed" (Done on kata).
  const nodeSeen = new Map<string, number>();
  const statusSeen = new Map<string, number>();
  const nodes = new Informer<Node>(dev.client, Nodes);
  const onNode = (n: Node) => {
    const a = n.metadata.annotations ?? {};
    const name = n.metadata.name ?? '';
    if (a[MCO_STATE] === 'Working' && !nodeSeen.has(`installing/${name}`)) nodeSeen.set(`installing/${name}`, performance.now());
    if (a[MCO_STATE] === 'Done' && a[MCO_CURRENT_CONFIG]?.startsWith(`rendered-${KATA_POOL}-`) && !nodeSeen.has(`installed/${name}`))
      nodeSeen.set(`installed/${name}`, performance.now());
  };
  nodes.addEventHandler({ add: onNode, update: (_o, n) => onNode(n) });
  const kcs = new Informer<KataConfig>(dev.client, KataConfigs);
  let done = false;
  const onKc = (kc: KataConfig) => {
    const now = performance.now();
    for (const list of ['installing', 'installed'] as const)
      for (const name of kc.status?.kataNodes?.[list] ?? []) if (!statusSeen.has(`${list}/${name}`)) statusSeen.set(`${list}/${name}`, now);
    const c = kc.status?.conditions?.find((x) => x.type === 'InProgress');
    if (c?.status === 'False' && kc.status?.kataNodes?.readyNodeCount === workers) done = true;
  };
  kcs.addEventHandler({ add: onKc, update: (_o, n) => onKc(n) });
  void nodes.run(ac.signal);
  void kcs.run(ac.signal);
  await Promise.all([nodes.waitForSync(), kcs.waitForSync()]);

  const child = fork(new URL('./operator-process.ts', import.meta.url).pathname, [dev.controlPlane.kubeconfigPath], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const messages: ((m: unknown) => void)[] = [];
  child.on('message', (m) => messages.shift()?.(m));
  const next = () => new Promise<unknown>((r) => messages.push(r));
  await next(); // ready
  const tInstall = Date.now();
  await dev.client.create(KataConfigs, { metadata: { name: 'bench' }, spec: {} });
  while (!done) {
    await new Promise((r) => setTimeout(r, 100));
    if (Date.now() - tInstall > 30 * 60_000) throw new Error('install did not finish in 30 minutes');
  }
  const installMs = Date.now() - tInstall;
  child.send({ cmd: 'report' });
  const report = (await next()) as Report;
  child.send({ cmd: 'stop' });
  await new Promise((r) => child.once('exit', r));

  const delays: number[] = [];
  for (const [key, at] of nodeSeen) {
    const shown = statusSeen.get(key);
    if (shown !== undefined) delays.push(Math.max(0, shown - at));
  }
  ac.abort();
  await dev.stop();
  const totalRequests = Object.values(report.requests).reduce((a, b) => a + b, 0);
  return {
    workers,
    clusterReadyS: +(clusterReady / 1000).toFixed(1),
    installS: +(installMs / 1000).toFixed(1),
    transitionsMeasured: delays.length,
    delayP50Ms: +pct(delays, 50).toFixed(1),
    delayP99Ms: +pct(delays, 99).toFixed(1),
    statusWrites: report.statusWrites,
    statusWritesPerNode: +(report.statusWrites / workers).toFixed(2),
    apiRequests: totalRequests,
    apiRequestsPerNode: +(totalRequests / workers).toFixed(2),
    requestsByVerb: report.requests,
    reconciles: report.reconciles,
    operatorPeakRSSMiB: +(report.maxRSSKiB / 1024).toFixed(1),
    operatorRSSAfterImportsMiB: +(report.importRSSKiB / 1024).toFixed(1),
  };
}

console.log(`# install benchmark: reboot ${rebootMs} ms, kata-oc maxUnavailable ${maxUnavailable}`);
for (const n of sizes) {
  const r = await runOnce(n);
  console.log(JSON.stringify(r));
  console.log(
    [
      `workers=${r.workers}`,
      `install=${r.installS}s`,
      `status delay p50=${r.delayP50Ms}ms p99=${r.delayP99Ms}ms (${r.transitionsMeasured} transitions)`,
      `status writes/node=${r.statusWritesPerNode}`,
      `API requests/node=${r.apiRequestsPerNode}`,
      `operator peak RSS=${r.operatorPeakRSSMiB}MiB (${r.operatorRSSAfterImportsMiB}MiB after loading modules)`,
    ].join('  '),
  );
}
