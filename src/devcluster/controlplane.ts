import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeClient } from '../kube/client.ts';
import { createCA, createSigningKey, issueCert } from '../kube/pki.ts';
import { ClusterRoleBindings, ClusterRoles, ServiceAccounts } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import { binariesIn, type ControlPlaneBinaries, controlPlaneBinaries } from './controlplane/binaries.ts';
import { installCRDs } from './controlplane/crds.ts';
import { compactEtcd, etcdRevision, etcdSnapshotRevision, restoreEtcdDataDir, saveEtcdSnapshot } from './controlplane/etcd-ops.ts';
import {
  apiserverArgs,
  type ControllerManagerTiming,
  controllerManagerArgs,
  etcdArgs,
  KUBERNETES_SERVICE_IP,
  kwokArgs,
  type Pki,
  schedulerArgs,
  schedulerConfig,
} from './controlplane/flags.ts';
import { kubeconfigText, runKubectl } from './controlplane/kubectl.ts';
import {
  dropManagedNodeLeases,
  KWOK_NODE_LABEL,
  KWOK_NODE_VALUE,
  type KwokStageOptions,
  kwokStages,
  POD_CIDR,
} from './controlplane/kwok.ts';
import { KWOK_LOGS_CRD, NodeLogsPlayer } from './controlplane/nodelogs-player.ts';
import { logTails, StartError } from './controlplane/start-error.ts';
import { freePort, isRunning, spawnSupervised, stopProcess } from './controlplane/supervise.ts';
import { type ProcessUsage, processUsage, supervisedPid } from './controlplane/usage.ts';
import { NodeJournal } from './journal.ts';

export { KWOK_MANAGED } from './controlplane/kwok.ts';
export { binariesIn, type ControlPlaneBinaries, controlPlaneBinaries, freePort, kubeconfigText, runKubectl };

export interface ControlPlaneOptions extends ControllerManagerTiming {
  log?: Logger;
  /** Keep the data directory somewhere known (e.g. for `osc dev`); a temporary one otherwise. */
  dataDir?: string;
  /** Where the components write their logs; the data directory by default (removed with it). */
  logDir?: string;
  /** Extra kube-apiserver flags, e.g. --feature-gates. */
  apiserverArgs?: string[];
  /** What kwok does with pods (which Job pods a simulator finishes itself). */
  kwok?: KwokStageOptions;
  /** Where etcd's and the API server's ports come from (a test hands out a taken one). */
  freePort?: () => Promise<number>;
}

export type Component = 'etcd' | 'kube-apiserver' | 'kube-scheduler' | 'kube-controller-manager' | 'kwok';

/** The user kwok acts as, and what it may do: what a kubelet does for its node and pods. */
const KWOK_USER = 'osc-dev:kwok';

/**
 * A real Kubernetes control plane on free loopback ports with freshly generated certificates: etcd,
 * kube-apiserver, kube-scheduler and kube-controller-manager, and kwok as every node's kubelet (Leases
 * and the pod lifecycle). Each component has its own identity and log file.
 */
export class ControlPlane {
  readonly dataDir: string;
  readonly logDir: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  readonly client: KubeClient;
  readonly binaries: ControlPlaneBinaries;
  readonly apiserverUrl: string;
  /** etcd's client URL (plain HTTP on loopback), for fault injection such as compaction. */
  readonly etcdUrl: string;
  readonly version = '';
  readonly caPem: string;
  /** The simulated nodes' journals: simulators write them, must-gather's node-log pods read them. */
  readonly journal: NodeJournal;
  private readonly nodeLogs: NodeLogsPlayer;
  private readonly nodeLogsStop = new AbortController();
  private readonly procs = new Map<Component, ChildProcess>();
  private readonly starters: Record<Component, () => ChildProcess>;
  private readonly etcd: EtcdMember;
  private readonly log: Logger | undefined;
  private stopped = false;
  private readonly onExit: () => void;

  private constructor(init: {
    dataDir: string;
    logDir: string;
    kubeconfigPath: string;
    kubeConfig: KubeConfig;
    binaries: ControlPlaneBinaries;
    apiserverUrl: string;
    etcdUrl: string;
    etcd: EtcdMember;
    caPem: string;
    starters: Record<Component, () => ChildProcess>;
    log: Logger | undefined;
  }) {
    this.dataDir = init.dataDir;
    this.logDir = init.logDir;
    this.kubeconfigPath = init.kubeconfigPath;
    this.kubeConfig = init.kubeConfig;
    this.client = new KubeClient(init.kubeConfig);
    this.binaries = init.binaries;
    this.apiserverUrl = init.apiserverUrl;
    this.etcdUrl = init.etcdUrl;
    this.etcd = init.etcd;
    this.caPem = init.caPem;
    this.journal = new NodeJournal(join(init.dataDir, 'journal'));
    this.nodeLogs = new NodeLogsPlayer(this.client, this.journal, init.log?.child({ component: 'node-logs' }));
    this.starters = init.starters;
    this.log = init.log;
    // Closing our end of the watchdog pipes on exit is enough: the watchdogs do the rest.
    this.onExit = () => {
      for (const p of this.procs.values()) p.stdin?.destroy();
    };
    process.once('exit', this.onExit);
  }

  /**
   * Starts a control plane. Its ports are found free and then handed to etcd and the API server, so another
   * process (a parallel test's cluster) can take one in between: a start that failed on a taken port is
   * tried again with new ports.
   */
  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await ControlPlane.startOnce(opts);
      } catch (e) {
        if (!(e instanceof StartError && e.portTaken) || attempt >= 3) throw e;
        opts.log?.warn({ attempt }, 'a control plane port was taken before etcd or the API server bound it; trying new ports');
      }
    }
  }

  private static async startOnce(opts: ControlPlaneOptions): Promise<ControlPlane> {
    const log = opts.log;
    const started = performance.now();
    const binaries = await controlPlaneBinaries(log);
    const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'osc-control-plane-')));
    const logDir = opts.logDir ?? dataDir;
    // A temporary data directory goes with etcd, even if we are killed; a given one keeps its files.
    const etcdCleanup = opts.dataDir ? join(dataDir, 'etcd') : dataDir;
    await mkdir(join(dataDir, 'pki'), { recursive: true });
    await mkdir(logDir, { recursive: true });
    const file = (f: string) => join(dataDir, f);
    const pkiFile = (f: string) => join(dataDir, 'pki', f);

    const ca = await createCA('osc-dev-ca');
    const serving = await issueCert(ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
      ipAddresses: ['127.0.0.1', KUBERNETES_SERVICE_IP],
    });
    const client = (commonName: string, organizations?: string[]) => issueCert(ca, { commonName, organizations, usage: 'client' });
    const [admin, scheduler, controllerManager, kwok, sa, kubeletServing] = await Promise.all([
      client('osc-admin', ['system:masters']),
      client('system:kube-scheduler'),
      client('system:kube-controller-manager'),
      client(KWOK_USER),
      createSigningKey(),
      issueCert(ca, { commonName: 'kwok-kubelet', usage: 'server', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] }),
    ]);
    const pki: Pki = {
      ca: pkiFile('ca.crt'),
      caKey: pkiFile('ca.key'),
      apiserverCert: pkiFile('apiserver.crt'),
      apiserverKey: pkiFile('apiserver.key'),
      saKey: pkiFile('sa.key'),
      saPub: pkiFile('sa.pub'),
    };
    const port = opts.freePort ?? freePort;
    const [etcdPort, etcdPeerPort, securePort, kubeletPort] = [await port(), await port(), await port(), await port()];
    const apiserverUrl = `https://127.0.0.1:${securePort}`;
    const kubeconfigOf = (c: { certPem: string; keyPem: string }, user: string) =>
      kubeconfigText(apiserverUrl, ca.certPem, c.certPem, c.keyPem, user);
    const kubeconfigYaml = kubeconfigOf(admin, 'osc-admin');
    const kubeconfigPath = file('kubeconfig');
    const secret = { mode: 0o600 };
    await Promise.all([
      writeFile(pki.ca, ca.certPem),
      writeFile(pki.caKey, ca.keyPem, secret),
      writeFile(pki.apiserverCert, serving.certPem),
      writeFile(pki.apiserverKey, serving.keyPem, secret),
      writeFile(pki.saKey, sa.privatePem, secret),
      writeFile(pki.saPub, sa.publicPem),
      writeFile(pkiFile('kubelet.crt'), kubeletServing.certPem),
      writeFile(pkiFile('kubelet.key'), kubeletServing.keyPem, secret),
      writeFile(kubeconfigPath, kubeconfigYaml, secret),
      writeFile(file('scheduler.kubeconfig'), kubeconfigOf(scheduler, 'system:kube-scheduler'), secret),
      writeFile(file('controller-manager.kubeconfig'), kubeconfigOf(controllerManager, 'system:kube-controller-manager'), secret),
      writeFile(file('kwok.kubeconfig'), kubeconfigOf(kwok, KWOK_USER), secret),
      writeFile(file('scheduler.yaml'), schedulerConfig(file('scheduler.kubeconfig'))),
      writeFile(file('kwok.yaml'), kwokStages(opts.kwok)),
    ]);

    const supervised =
      (component: Component, command: string, args: string[], cleanup = join(dataDir, `${component}-scratch`)) =>
      () =>
        spawnSupervised(command, args, cleanup, join(logDir, `${component}.log`));
    const starters: Record<Component, () => ChildProcess> = {
      etcd: supervised(
        'etcd',
        binaries.etcd,
        etcdArgs({ dataDir: file('etcd'), clientPort: etcdPort, peerPort: etcdPeerPort }),
        etcdCleanup,
      ),
      'kube-apiserver': supervised(
        'kube-apiserver',
        binaries.kubeApiserver,
        apiserverArgs({ etcdPort, securePort, certDir: file('pki'), pki, extra: opts.apiserverArgs }),
      ),
      'kube-scheduler': supervised('kube-scheduler', binaries.kubeScheduler, schedulerArgs({ config: file('scheduler.yaml') })),
      'kube-controller-manager': supervised(
        'kube-controller-manager',
        binaries.kubeControllerManager,
        controllerManagerArgs({ kubeconfig: file('controller-manager.kubeconfig'), pki, ...opts }),
      ),
      kwok: supervised(
        'kwok',
        binaries.kwok,
        kwokArgs({
          kubeconfig: file('kwok.kubeconfig'),
          config: file('kwok.yaml'),
          podCidr: POD_CIDR,
          nodeSelector: `${KWOK_NODE_LABEL}=${KWOK_NODE_VALUE}`,
          nodeLeaseDurationSeconds: opts.nodeLeaseDurationSeconds,
          server: { port: kubeletPort, cert: pkiFile('kubelet.crt'), key: pkiFile('kubelet.key') },
        }),
      ),
    };
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfigYaml);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd: EtcdMember = { dataDir: file('etcd'), peerPort: etcdPeerPort, cleanupDir: etcdCleanup };
    const cp = new ControlPlane({
      etcd,
      dataDir,
      logDir,
      kubeconfigPath,
      kubeConfig,
      binaries,
      apiserverUrl,
      etcdUrl,
      caPem: ca.certPem,
      starters,
      log,
    });
    try {
      cp.launch('etcd');
      cp.launch('kube-apiserver');
      await cp.waitReady(120_000);
      const version = await cp.client.request<{ gitVersion: string }>('GET', '/version');
      (cp as { version: string }).version = version.gitVersion;
      // The controller-manager exits when the API server does not answer yet: start it (and the others,
      // which depend on it for Leases and tokens) only now.
      await cp.grantKwok();
      await installCRDs(cp.client, [KWOK_LOGS_CRD as KubeObject]);
      for (const c of ['kube-controller-manager', 'kube-scheduler', 'kwok'] as const) cp.launch(c);
      void cp.nodeLogs.run(cp.nodeLogsStop.signal);
      // Pods are refused until their namespace has its default ServiceAccount, which the
      // controller-manager creates: a cluster is usable once `default` has one.
      await cp.waitFor(async () => !!(await cp.client.find(ServiceAccounts, 'default', 'default')), 120_000, 'the default ServiceAccount');
      log?.info(
        { kubernetes: version.gitVersion, apiserver: apiserverUrl, startupMs: Math.round(performance.now() - started) },
        'control plane ready',
      );
      return cp;
    } catch (e) {
      // Read before stop(): a temporary log directory goes with the data.
      const logs = await logTails(logDir);
      await cp.stop();
      throw new StartError(e, logs);
    }
  }

  private launch(c: Component): void {
    this.procs.set(c, this.starters[c]());
  }

  private proc(c: Component): ChildProcess {
    const p = this.procs.get(c);
    if (!p) throw new Error(`${c} was never started`);
    return p;
  }

  /** Memory and CPU of each running component (for benchmarks: what the whole cluster costs). */
  async usage(): Promise<Partial<Record<Component, ProcessUsage>>> {
    const out: Partial<Record<Component, ProcessUsage>> = {};
    for (const [c, p] of this.procs) {
      const pid = p.pid && isRunning(p) ? await supervisedPid(p.pid) : undefined;
      const u = pid ? await processUsage(pid) : undefined;
      if (u) out[c] = u;
    }
    return out;
  }

  /** The log file of a component. */
  logFile(c: Component): string {
    return join(this.logDir, `${c}.log`);
  }

  private async waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      for (const [name, p] of this.procs) {
        if (!isRunning(p)) throw new Error(`${name} exited with ${p.exitCode ?? p.signalCode}; see ${this.logFile(name)}`);
      }
      try {
        if (await check()) return;
      } catch (e) {
        last = e;
      }
      if (Date.now() > deadline) throw new Error(`${what} not ready after ${timeoutMs}ms${last ? `: ${String(last)}` : ''}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Polls /readyz until it answers ok; the API server has no push for readiness. */
  async waitReady(timeoutMs: number): Promise<void> {
    await this.waitFor(
      async () => (await this.client.request<string>('GET', '/readyz', { signal: AbortSignal.timeout(5000) })) !== undefined,
      timeoutMs,
      'kube-apiserver',
    );
  }

  /** kwok gets what a kubelet may do for its nodes, by RBAC. */
  private async grantKwok(): Promise<void> {
    const rules = [
      {
        apiGroups: [''],
        resources: ['nodes', 'nodes/status', 'pods', 'pods/status'],
        verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
      },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'] },
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'update', 'patch'] },
      { apiGroups: ['kwok.x-k8s.io'], resources: ['logs', 'logs/status'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
    ];
    const name = 'osc-dev:kwok';
    await this.client.create(ClusterRoles, { metadata: { name }, rules } as KubeObject);
    await this.client.create(ClusterRoleBindings, {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: KWOK_USER }],
    } as KubeObject);
  }

  /** Stops kube-apiserver (etcd keeps the data) and starts it again on the same port. */
  async restartApiServer(downtimeMs = 0): Promise<void> {
    await stopProcess(this.proc('kube-apiserver'), true);
    if (downtimeMs) await new Promise((r) => setTimeout(r, downtimeMs));
    this.launch('kube-apiserver');
    await this.waitReady(120_000);
  }

  /**
   * Crashes kube-apiserver (SIGKILL, no graceful shutdown: the harshest outage for clients); etcd keeps
   * the data and startApiServer brings it back. The other components retry until it is back.
   */
  async stopApiServer(): Promise<void> {
    await stopProcess(this.proc('kube-apiserver'), true);
  }

  async startApiServer(): Promise<void> {
    if (isRunning(this.proc('kube-apiserver'))) return;
    this.launch('kube-apiserver');
    await this.waitReady(120_000);
  }

  /**
   * Compacts etcd's history up to its current revision: a watch that resumes from an older resource version
   * than that then gets 410 Gone from etcd. Answers the revision.
   */
  compactEtcd(): Promise<number> {
    return compactEtcd(this.etcdUrl);
  }

  /** Saves a snapshot of etcd to `file`, as `etcdctl snapshot save` does. Answers the revision it holds. */
  snapshotEtcd(file: string): Promise<number> {
    return saveEtcdSnapshot(this.etcdUrl, file);
  }

  /**
   * Restores etcd from a snapshot the way the Kubernetes documentation tells an administrator to recover a
   * cluster from a backup: kube-apiserver and etcd stopped, `etcdutl snapshot restore` into a fresh data
   * directory with the revision bumped past every revision a client has seen and marked compacted, then etcd
   * and kube-apiserver started again. Without the bump, resource versions would go back in time and a
   * client's watch could resume from a version that now names other writes; with it, every watch and every
   * list from an older version gets 410 Gone and lists again. Answers the bump.
   */
  async restoreEtcd(file: string, downtimeMs = 0): Promise<{ bumpedBy: number }> {
    const etcdutl = this.binaries.etcdutl;
    if (!existsSync(etcdutl))
      throw new Error(`no etcdutl in ${this.binaries.dir}: build the control plane again (bash tools/build-control-plane.sh)`);
    // Killed, as restartApiServer does: its graceful shutdown waits out the watchdog's 10 s on open watches,
    // and what clients see is the same (connections cut, then refused).
    const t0 = performance.now();
    await stopProcess(this.proc('kube-apiserver'), true);
    // Every revision a client may have seen is at most etcd's head now that no API server writes.
    const head = await etcdRevision(this.etcdUrl);
    const snapshotRevision = await etcdSnapshotRevision(etcdutl, file);
    const bumpedBy = head - snapshotRevision + 1000;
    await stopProcess(this.proc('etcd'), false, this.etcd.cleanupDir);
    await restoreEtcdDataDir(etcdutl, file, { dataDir: this.etcd.dataDir, peerPort: this.etcd.peerPort, bumpedBy });
    if (downtimeMs) await new Promise((r) => setTimeout(r, downtimeMs));
    this.launch('etcd');
    this.launch('kube-apiserver');
    await this.waitReady(120_000);
    // As recovery says, caches start afresh (KubeClient.relistAll), the kubelets' included: kwok's kept the
    // node Leases the restore took back and renewed them forever against a UID that is gone, where a
    // kubelet's lease controller makes its Lease again (nodes went NotReady, their pods with them).
    for (const c of ['kube-controller-manager', 'kube-scheduler', 'kwok'] as const) {
      await stopProcess(this.proc(c));
      if (c === 'kwok') await dropManagedNodeLeases(this.client);
      this.launch(c);
    }
    this.client.relistAll();
    this.log?.info({ snapshotRevision, bumpedBy, downMs: Math.round(performance.now() - t0) }, 'etcd restored from a snapshot');
    return { bumpedBy };
  }

  /** Installs CRDs and waits until the API server serves them (Established). */
  async installCRDs(crds: KubeObject[]): Promise<void> {
    await installCRDs(this.client, crds);
  }

  /** Runs the pinned kubectl against this control plane. */
  async kubectl(
    args: string[],
    opts: { input?: string; kubeconfig?: string } = {},
  ): Promise<{ stdout: string; stderr: string; code: number }> {
    return runKubectl(this.binaries.kubectl, opts.kubeconfig ?? this.kubeconfigPath, args, opts.input);
  }

  /** Stops the node agent and the controllers first (they would only log the API server's absence), then the store. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.nodeLogsStop.abort();
    process.removeListener('exit', this.onExit);
    const order: Component[][] = [['kwok', 'kube-scheduler', 'kube-controller-manager'], ['kube-apiserver'], ['etcd']];
    for (const group of order) {
      await Promise.all(group.map((c) => (this.procs.has(c) ? stopProcess(this.proc(c)) : undefined)));
    }
    await rm(this.dataDir, { recursive: true, force: true });
    this.log?.info('control plane stopped');
  }
}

/** etcd's member: where its data lives, its peer port (a restore names the member again) and what its watchdog cleans up. */
interface EtcdMember {
  dataDir: string;
  peerPort: number;
  cleanupDir: string;
}
