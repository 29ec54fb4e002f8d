import { createWriteStream } from 'node:fs';
import { chmod, copyFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import { oneLine, summarize } from '../../api/summary.ts';
import { BuildInterruptedError } from '../../devcluster/controlplane/binaries.ts';
import { DevCluster } from '../../devcluster/devcluster.ts';
import { DISTRIBUTIONS, type Distribution, isSimulated } from '../../devcluster/nodes.ts';
import { projectOperatorToken } from '../../devcluster/operator-token.ts';
import { errorMessage } from '../../kube/errors.ts';
import { createOperator, type Operator, runRestartingOnLostLease } from '../../operator.ts';
import { DEFAULT_PLATFORM, platformCluster } from '../../platform/index.ts';
import type { PlatformName } from '../../platform/platform.ts';
import { Informer } from '../../runtime/informer.ts';
import { quickLeaderElection } from '../../runtime/leasetimings.ts';
import { createLogger, type Logger } from '../../runtime/log.ts';
import {
  CliError,
  type CliIO,
  type DevCloud,
  displayPath,
  onShutdownSignal,
  prepareDirectory,
  SAMPLE_KATACONFIG,
  write,
} from '../common.ts';
import { lockHome } from '../homelock.ts';
import { devHardware, type HardwareFlags } from './hardware-flags.ts';

export interface DevFlags extends HardwareFlags {
  workers?: number;
  masters?: number;
  compact?: boolean;
  rebootMs: number;
  eligible: string;
  /** What the OpenShift Infrastructure reports as the cloud. */
  cloud: DevCloud;
  /** --cloud's deprecated spelling. */
  platform?: DevCloud;
  /** openshift (default) or kubernetes (docs/devcluster.md). */
  distribution?: PlatformName;
  home?: string;
  logLevel: string;
}

export interface StartFlags extends DevFlags {
  metricsBindAddress: string;
  quiet?: boolean;
  /** The web console (and the Prometheus it queries); on unless --no-console. */
  console?: boolean;
}

/** --cloud, or what its deprecated spelling --platform says, with a warning. */
function cloudOf(flags: DevFlags, io: CliIO): DevCloud {
  if (flags.platform === undefined) return flags.cloud;
  write(
    io.stderr,
    'warning: --platform is deprecated: use --cloud (the cloud the OpenShift Infrastructure reports; --distribution chooses the platform)\n',
  );
  if (flags.cloud !== 'None' && flags.cloud !== flags.platform)
    throw new CliError(`--platform ${flags.platform} and --cloud ${flags.cloud} disagree: drop --platform`);
  return flags.platform;
}

/** `$OSC_HOME`, else `.osc` in the current directory (the repository when run with `npm start`). */
export function oscHome(flag?: string): string {
  return resolve(flag ?? process.env.OSC_HOME ?? '.osc');
}

/** The node names the dev cluster will have (as DevCluster names them), for checking --eligible. */
export function devNodeNames(flags: Pick<DevFlags, 'workers' | 'masters' | 'compact'>): string[] {
  const masters = flags.masters ?? (flags.compact ? 3 : 1);
  const workers = flags.workers ?? (flags.compact ? 0 : 2);
  return [...Array.from({ length: masters }, (_, i) => `master-${i}`), ...Array.from({ length: workers }, (_, i) => `worker-${i}`)];
}

/**
 * --eligible: all, none, or node names, each of which must be a node of this dev cluster (a typo would
 * otherwise leave no node eligible and checkNodeEligibility would wait for NFD forever).
 */
export function virtualizationCapable(eligible: string, nodes: readonly string[]): 'all' | 'none' | string[] {
  const v = eligible.trim();
  if (v === 'all' || v === 'none') return v;
  const names = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new CliError('--eligible is empty: give all, none, or a comma-separated list of node names');
  const unknown = names.filter((n) => !nodes.includes(n));
  if (unknown.length)
    throw new CliError(
      `--eligible names ${unknown.length === 1 ? 'a node' : 'nodes'} this dev cluster does not have: ${unknown.join(', ')} (its nodes: ${nodes.join(', ')})`,
    );
  return names;
}

const display = displayPath;

/** How the user runs osc: through npm in a checkout, or the installed command. */
const oscCommand = (name: string) => (process.env.npm_lifecycle_event ? 'npm run osc --' : name);

/**
 * `osc dev` and `osc start`: the dev cluster (and, for start, the operator in this process), until Ctrl-C;
 * then the operator stops, then the cluster, and the kubeconfig goes with them.
 */
export async function runDevEnvironment(
  flags: StartFlags,
  io: CliIO,
  opts: { withOperator: boolean; programName: string },
): Promise<number> {
  if (flags.compact && flags.workers) throw new CliError('--compact clusters have no worker nodes: drop --workers (or set it to 0)');
  const distribution = flags.distribution ?? DEFAULT_PLATFORM;
  if (!isSimulated(distribution))
    throw new CliError(`the dev cluster does not simulate the ${distribution} platform: use --distribution ${DISTRIBUTIONS.join(' or ')}`);
  const cluster = platformCluster(distribution);
  if (!cluster.nodeFeatureDiscovery && flags.eligible.trim() !== 'all')
    throw new CliError(`--eligible needs Node Feature Discovery, which the ${distribution} distribution does not have: drop --eligible`);
  const cloud = cloudOf(flags, io);
  if (!cluster.clusterConfig && cloud !== 'None')
    throw new CliError(`--cloud sets the OpenShift Infrastructure, which the ${distribution} distribution does not have: drop --cloud`);
  const eligible = virtualizationCapable(flags.eligible, devNodeNames(flags));
  const hardware = devHardware(flags, devNodeNames(flags), !cluster.clusterConfig);
  const home = await prepareDirectory(
    flags.home !== undefined ? '--home' : process.env.OSC_HOME ? 'OSC_HOME' : 'the home directory',
    oscHome(flags.home),
  );
  // Before anything in the home is touched: it may belong to a run that is still going.
  const command = opts.withOperator ? 'start' : 'dev';
  const rerun =
    process.env.npm_lifecycle_event === 'start' && opts.withOperator ? 'npm start --' : `${oscCommand(opts.programName)} ${command}`;
  const lock = await lockHome(home, { command: `osc ${command}`, secondHomeHint: `${rerun} --home ${display(home)}-2` });
  if (lock.tookOverFrom)
    write(
      io.stdout,
      `(${display(lock.path)} was left behind by ${lock.tookOverFrom.command} pid ${lock.tookOverFrom.pid}, which no longer runs: taken over)`,
    );
  try {
    return await runLocked(flags, io, opts, { home, eligible, distribution, cloud, hardware });
  } finally {
    await lock.release();
  }
}

async function runLocked(
  flags: StartFlags,
  io: CliIO,
  opts: { withOperator: boolean; programName: string },
  checked: {
    home: string;
    eligible: ReturnType<typeof virtualizationCapable>;
    distribution: Distribution;
    cloud: DevCloud;
    hardware: ReturnType<typeof devHardware>;
  },
): Promise<number> {
  const { home, eligible, distribution, cloud, hardware } = checked;
  // A cluster whose nodes get kata from osc's own installer: the dev cluster simulates kata-deploy's host side.
  const plain = !!platformCluster(distribution).nodeInstaller;
  const logPath = resolve(home, 'osc.log');
  const logStream = createWriteStream(logPath, { flags: 'w' });
  const log: Logger = createLogger({ level: flags.logLevel, destination: logStream });
  const kubeconfigPath = resolve(home, 'kubeconfig');

  const ac = new AbortController();
  const signals = onShutdownSignal((sig) => {
    write(io.stdout, `\n${sig}: stopping${opts.withOperator ? ' the operator, then' : ''} the cluster...`);
    ac.abort();
  });

  let dev: DevCluster | undefined;
  let operator: Operator | undefined;
  let operatorRun: Promise<void> | undefined;
  let watcher: Informer<KataConfig> | undefined;
  let webConsole: { url: string; metricsReady: Promise<void>; stop(): Promise<void> } | undefined;
  const operatorAbort = new AbortController();
  const watchAbort = new AbortController();
  let code = 0;
  try {
    const started = Date.now();
    write(
      io.stdout,
      `Starting the dev cluster: a Kubernetes control plane, kwok nodes and ${plain ? "kata-deploy's simulated host side" : 'a simulated OpenShift'} (a first run builds the control plane${opts.withOperator && flags.console !== false ? ' and Prometheus' : ''} from source and shows its progress; logs: ${display(logPath)})...`,
    );
    dev = await DevCluster.start({
      distribution,
      workers: flags.workers,
      masters: flags.masters,
      compact: flags.compact,
      rebootMs: flags.rebootMs,
      virtualizationCapable: eligible,
      platform: cloud,
      hardware,
      logDir: resolve(home, 'logs'),
      log,
    });
    if (ac.signal.aborted) return 130;
    await copyFile(dev.kubeconfigPath, kubeconfigPath);
    await chmod(kubeconfigPath, 0o600);

    let metricsUrl = '';
    let metricsCurl = '';
    if (opts.withOperator) {
      const kubeConfig = dev.controlPlane.kubeConfig;
      // The projected ServiceAccount token its Deployment would mount (a workload identity for the collector).
      const tokenFile = resolve(home, 'operator-token');
      if (dev.cloudAPIServer) await projectOperatorToken(dev.client, tokenFile, log, operatorAbort.signal);
      const make = (metricsCert?: Operator['metricsCert']) =>
        createOperator({
          kubeConfig,
          log,
          leaderElection: true,
          // Alone, and restarted often (a laptop's Ctrl-C, a crash): a lease left by the last run is taken
          // within seconds, not the two minutes the production timings wait.
          leaseTimings: quickLeaderElection,
          metricsAddress: flags.metricsBindAddress,
          metricsCert,
          healthAddress: '',
          // Outside the cluster: the API server reaches the webhooks by URL on loopback.
          webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}' },
          // Leaked pod VMs are found and deleted through the cloud's API, as in production, here the
          // simulated cloud's endpoint (osc run --cloud-api-endpoint).
          ...(dev?.cloudAPIServer ? { leakedVMs: { endpoint: dev.cloudAPI, tokenFile } } : {}),
        });
      operator = await make();
      // A replica that lost its lease stops (as controller-runtime's do): in a pod its Deployment restarts
      // it; here this process does, with the same metrics certificate, so the dev Prometheus keeps scraping.
      const runUntilStopped = (first: Operator) =>
        runRestartingOnLostLease(first, operatorAbort.signal, async (previous, lost) => {
          write(io.stderr, `warning: ${lost.message}; restarting the operator, as its Deployment would`);
          operator = await make(previous.metricsCert);
          return operator;
        });
      const op = operator;
      operatorRun = runUntilStopped(op).catch((e) => {
        write(io.stderr, `error: the operator stopped: ${errorMessage(e)}`);
        code = 1;
        ac.abort();
      });
      // Ready once its caches have synced (a second or so); not an event the manager publishes.
      const deadline = Date.now() + 60_000;
      while (!op.manager.isReady && !ac.signal.aborted && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (!op.manager.isReady && !ac.signal.aborted) throw new CliError(`the operator did not become ready within 60s; see ${logPath}`);
      const metrics = op.manager.metricsEndpoint;
      const addr = metrics?.address;
      if (metrics) metricsUrl = `${metrics.secure ? 'https' : 'http'}://${metrics.address}/metrics`;
      if (metrics?.secure && op.metricsCA) metricsCurl = await metricsCurlCommand(dev, home, op.metricsCA, metricsUrl);
      else if (metrics) metricsCurl = `curl ${metricsUrl}`;
      if (flags.console !== false) {
        const { startDevConsole } = await import('./console.ts');
        webConsole = await startDevConsole({
          kubeConfig: dev.controlPlane.kubeConfig,
          home,
          metricsAddress: addr,
          metricsCA: op.metricsCA,
          operator: {
            where: `in this osc start process (pid ${process.pid})`,
            get identity() {
              return (operator ?? op).manager.identity;
            },
            ready: () => (operator ?? op).manager.isReady,
            metricsUrl,
          },
          log,
          onWarning: (m) => write(io.stderr, `warning: ${m}`),
        });
      }
    }
    // The banner names the console's metrics page: Prometheus (built on the first run) is up before it shows.
    if (webConsole) await Promise.race([webConsole.metricsReady, aborted(ac.signal)]);
    if (ac.signal.aborted) return code || 130;

    const { workers, masters, compact } = dev.options;
    const nodes = compact
      ? `${masters} masters that also run workloads`
      : `${masters} master${masters === 1 ? '' : 's'}, ${workers} worker${workers === 1 ? '' : 's'}`;
    const kubectl = dev.controlPlane.binaries.kubectl;
    const osc = oscCommand(opts.programName);
    // Azure and Google Cloud: the values and credentials a peer pods walkthrough needs from the simulated cloud.
    const simulated = plain ? undefined : dev.cloud;
    const cloudLines = simulated && 'handOut' in simulated ? [...(await simulated.handOut(home)), ''] : [];
    const lines = [
      '',
      ...(plain
        ? [
            `The dev cluster is up (${((Date.now() - started) / 1000).toFixed(1)}s): Kubernetes ${dev.controlPlane.version}, plain (containerd nodes, no OpenShift API) with ${nodes};`,
            `kata-deploy pods install on their node in ${dev.kataDeploy?.timing.installMs} ms.${opts.withOperator ? ' The operator is running.' : ''}`,
          ]
        : [
            `The dev cluster is up (${((Date.now() - started) / 1000).toFixed(1)}s): Kubernetes ${dev.controlPlane.version}, a simulated OpenShift with ${nodes};`,
            `nodes "reboot" in ${flags.rebootMs} ms when their machine config changes.${opts.withOperator ? ' The operator is running.' : ''}`,
          ]),
      '',
      'Point kubectl at it (in another terminal):',
      '',
      `  export KUBECONFIG=${kubeconfigPath}`,
      `  export PATH=${dirname(kubectl)}:$PATH    # the matching kubectl; or: alias kubectl=${kubectl}`,
      '',
      'Then try:',
      '',
      plain ? '  kubectl get nodes -L katacontainers.io/kata-runtime' : '  kubectl get nodes',
      ...(plain ? [] : ['  kubectl get machineconfigpools']),
      ...(opts.withOperator
        ? [`  kubectl create -f ${display(SAMPLE_KATACONFIG)}     # the KataConfig of the README walkthrough`, `  ${osc} status --watch`]
        : [
            `  ${osc} run --kubeconfig ${kubeconfigPath} --no-leader-elect --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 0 --webhook-bind-address 127.0.0.1:0 --webhook-url 'https://127.0.0.1:{port}'`,
          ]),
      '',
      ...cloudLines,
      `Logs: ${logPath}`,
      ...(webConsole ? [`Web console: ${webConsole.url}`, `  its metrics page: ${webConsole.url}#/metrics`] : []),
      ...(metricsCurl
        ? [`The operator's metrics${metricsUrl.startsWith('https') ? ' (HTTPS, for a ServiceAccount token)' : ''}:`, `  ${metricsCurl}`]
        : []),
      'Press Ctrl-C to stop; the cluster and everything in it go away.',
      '',
    ];
    write(io.stdout, lines.join('\n'));

    if (opts.withOperator && !flags.quiet) {
      // One line per KataConfig state, so that the transitions show here too.
      watcher = new Informer(dev.client, KataConfigs, {});
      let last = '';
      const show = (kc: KataConfig) => {
        const line = oneLine(summarize(kc));
        if (line === last) return;
        last = line;
        write(io.stdout, `${new Date().toTimeString().slice(0, 8)}  ${line}`);
      };
      watcher.addEventHandler({
        add: show,
        update: (_, kc) => show(kc),
        delete: (kc) => {
          last = '';
          write(io.stdout, `${new Date().toTimeString().slice(0, 8)}  KataConfig ${kc.metadata.name}: deleted`);
        },
      });
      void watcher.run(watchAbort.signal);
    }

    await aborted(ac.signal);
    return code;
  } catch (e) {
    // Ctrl-C during the start-up (a build, say) stops what was under way: that is the stop asked for, not a failure.
    // Ctrl-C reaches the build too, and on a busy machine its end can be seen before our own handler runs.
    if (e instanceof BuildInterruptedError) await Promise.race([aborted(ac.signal), delay(BUILD_STOP_SIGNAL_GRACE_MS)]);
    if (ac.signal.aborted) return code || 130;
    if (e instanceof CliError) throw e;
    throw new CliError(`${opts.withOperator ? 'osc start' : 'osc dev'} failed: ${errorMessage(e)} (logs: ${logPath})`);
  } finally {
    signals.dispose();
    watchAbort.abort();
    await webConsole?.stop();
    operatorAbort.abort();
    if (operatorRun) {
      await operatorRun;
      write(io.stdout, 'operator stopped');
    }
    if (dev) {
      await dev.stop();
      write(io.stdout, 'cluster stopped (the control plane and kwok are gone)');
    }
    await rm(kubeconfigPath, { force: true });
    await new Promise<void>((r) => logStream.end(() => r()));
  }
}

/**
 * How long a build stopped by a signal waits for that signal to reach osc as well (a terminal's Ctrl-C goes to
 * the whole process group at once): only a build stopped on its own, by someone else, is a failed start.
 */
const BUILD_STOP_SIGNAL_GRACE_MS = 2_000;
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const aborted = (signal: AbortSignal) =>
  new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true })));

/**
 * A command that reads the operator's HTTPS /metrics as printed: its CA in the home, and a token of the
 * ServiceAccount the dev Prometheus scrapes with (bound to osc-metrics-reader; made here when there is no
 * console), for the kubectl the banner points at.
 */
async function metricsCurlCommand(dev: DevCluster, home: string, caPem: string, url: string): Promise<string> {
  const { DEV_PROMETHEUS_SERVICE_ACCOUNT, metricsScraperToken } = await import('../../devcluster/prometheus.ts');
  await metricsScraperToken(dev.client, OPERATOR_NAMESPACE, 1);
  const caFile = resolve(home, 'metrics-ca.crt');
  await writeFile(caFile, caPem);
  return `curl --cacert ${display(caFile)} -H "Authorization: Bearer $(kubectl -n ${OPERATOR_NAMESPACE} create token ${DEV_PROMETHEUS_SERVICE_ACCOUNT})" ${url}`;
}
