import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { CCO_NAMESPACE } from '../api/cloudcredential.ts';
import { objectName } from '../api/meta.ts';
import { NFD_KATA_LABEL, OPERATOR_NAMESPACE } from '../api/names.ts';
import { Infrastructures, type MachineConfig, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../api/openshift.ts';
import { applyAll } from '../install/apply.ts';
import { kataDeployIdentity } from '../install/katadeploy-rbac.ts';
import { oscSecurityIdentity } from '../install/scc.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/errors.ts';
import { MutatingWebhookConfigurations, Namespaces, type Node, Nodes } from '../kube/resources.ts';
import { platformCluster } from '../platform/index.ts';
import { INSTALLER_NAME } from '../platform/kubernetes/katadeploy.ts';
import { mapLimit } from '../runtime/concurrency.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import type { CloudCredentialOperator } from './cco/index.ts';
import type { CloudAPIServer } from './cloudapi/server.ts';
import type { AwsAccount } from './clouds/aws-account.ts';
import { CLOUD_JOBS } from './clouds/image-jobs.ts';
import type { PeerPodsCloud } from './clouds/index.ts';
import { initialNodes, pollUntil, poolsUpdated, workerIndex } from './cluster-layout.ts';
import { KWOK_NODE_LABEL, KWOK_NODE_VALUE } from './controlplane/kwok.ts';
import { ControlPlane } from './controlplane.ts';
import { seedHardware, teeLabelOf } from './hardware.ts';
import { DEFAULT_INSTALLER_REPOSITORIES, installerPodQuery, KataDeploySimulator } from './katadeploy/index.ts';
import { FAIL_NEXT_UPDATE_ANNOTATION, type MachineConfigOperator } from './mco/index.ts';
import { NodeFeatureDiscovery, VIRTUALIZATION_CAPABLE_ANNOTATION } from './nfd/index.ts';
import { CPU_SECURITY_ANNOTATION as CPU_SECURITY } from './nfd/rules.ts';
import { type Distribution, type NodeInit, registerNode } from './nodes.ts';
import { openshiftSimulators, servedCRDs } from './openshift/index.ts';
import { baseMachineConfigs, basePools, infrastructureOf } from './openshift/seed.ts';
import type { DevClusterOptions } from './options.ts';
import { PEER_POD_QUERY, type SimulatedPodVMs } from './podvms.ts';
import { KataSandboxes } from './sandboxes.ts';
import { SCC_WEBHOOK_CONFIGURATION, type SccAdmission, startSccAdmission } from './scc/index.ts';

export { baseMachineConfigs, basePools } from './openshift/seed.ts';
export type { DevClusterOptions, Distribution };
export { FAIL_NEXT_UPDATE_ANNOTATION, VIRTUALIZATION_CAPABLE_ANNOTATION };

/** osc's kata-deploy installer pods (its DaemonSet's template label). */
const INSTALLER_POD_SELECTOR = `name=${INSTALLER_NAME}`;

const PART_NAMES = {
  mco: 'Machine Config Operator',
  nfd: 'Node Feature Discovery',
  cloud: 'peer-pods cloud',
  cco: 'Cloud Credential Operator',
  account: 'AWS account',
} as const;

/** The taint every node registers with until the node lifecycle controller sees it Ready. */
const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';

/** The namespaces an OpenShift cluster has that osc uses. */
export const DEV_NAMESPACES = [OPERATOR_NAMESPACE, 'openshift-machine-config-operator', 'openshift-config', 'openshift-nfd', CCO_NAMESPACE];

/**
 * A simulated OpenShift cluster (docs/devcluster.md): a real etcd and kube-apiserver, the OpenShift API types as
 * CRDs, Node objects for masters and workers, the `master` and `worker` MachineConfigPools with their base
 * MachineConfigs, the `cluster` Infrastructure, and simulators for the Machine Config Operator and Node
 * Feature Discovery. `start` answers once both pools are rendered and Updated.
 *
 * Failure injection: annotate a node with `osc.dev/fail-next-update: "<reason>"` (FAIL_NEXT_UPDATE_ANNOTATION)
 * and its next machine config update goes Degraded with that reason until the annotation is removed.
 */
export class DevCluster {
  readonly controlPlane: ControlPlane;
  readonly client: KubeClient;
  readonly kubeconfigPath: string;
  readonly distribution: Distribution;
  /**
   * kata-deploy's host side (src/devcluster/katadeploy/): on the kubernetes distribution for every pod of
   * its image, on openshift for osc's installer pods (deploymentMode DaemonSet).
   */
  readonly kataDeploy: KataDeploySimulator;
  private readonly openshift?: {
    mco: MachineConfigOperator;
    cloud: PeerPodsCloud;
    cco: CloudCredentialOperator;
    account: AwsAccount;
  };
  /** The nodes' container runtime and kata shim, as their journals show them (src/devcluster/sandboxes.ts). */
  readonly sandboxes: KataSandboxes;
  /** openshift distribution: the cloud's pod VMs and the adaptor's part in their life (src/devcluster/podvms.ts). */
  readonly podVMs?: SimulatedPodVMs;
  /**
   * openshift distribution: the simulated cloud's API endpoint (src/devcluster/cloudapi/), which osc's cloud
   * clients reach through their endpoint override.
   */
  readonly cloudAPIServer?: CloudAPIServer;
  /** Node Feature Discovery (src/devcluster/nfd/): on openshift, and on kubernetes with a TEE (its add-on there). */
  private readonly nfdSim?: NodeFeatureDiscovery;
  /** The Infrastructure's infrastructureName, which the simulated clouds name their resources after. */
  private readonly infrastructureName = `osc-dev-${randomBytes(3).toString('hex').slice(0, 5)}`;
  /** openshift distribution, unless turned off: the simulated SCC admission (src/devcluster/scc/). */
  sccAdmission?: SccAdmission;
  /** The shared informers the simulators run on (tests may read them; do not mutate their objects). */
  readonly informers: { nodes: Informer<Node>; pools: Informer<MachineConfigPool>; machineConfigs: Informer<MachineConfig> };
  readonly options: Readonly<DevClusterOptions> & { workers: number; masters: number; compact: boolean };
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private stopped = false;
  /** The highest `worker-<n>` this cluster has had: a new machine never takes a lost one's name. */
  private lastWorkerIndex = -1;

  private constructor(controlPlane: ControlPlane, opts: DevClusterOptions) {
    this.controlPlane = controlPlane;
    this.client = controlPlane.client;
    this.kubeconfigPath = controlPlane.kubeconfigPath;
    this.log = (opts.log ?? silentLogger()).child({ component: 'devcluster' });
    const compact = opts.compact ?? false;
    const workers = opts.workers ?? (compact ? 0 : 2);
    if (compact && workers > 0) throw new Error('a compact cluster has no worker nodes: leave workers unset or 0');
    this.options = { ...opts, compact, workers, masters: opts.masters ?? (compact ? 3 : 1) };
    this.distribution = opts.distribution ?? 'openshift';
    const log = opts.log ?? silentLogger();
    this.informers = {
      nodes: new Informer(this.client, Nodes, { log }),
      pools: new Informer(this.client, MachineConfigPools, { log }),
      machineConfigs: new Informer(this.client, MachineConfigs, { log }),
    };
    const { repositories, ...timing } = opts.kataDeploy ?? {};
    const journal = controlPlane.journal;
    // Where kata-deploy is the platform's node installer every pod of its image is played; elsewhere (OpenShift,
    // with deploymentMode DaemonSet) only osc's installer runs it: its pods alone are watched.
    const cluster = platformCluster(this.distribution);
    const podLabelSelector = cluster.nodeInstaller ? undefined : INSTALLER_POD_SELECTOR;
    this.kataDeploy = new KataDeploySimulator({
      client: this.client,
      log,
      nodes: this.informers.nodes,
      repositories,
      timing,
      journal,
      ...(podLabelSelector ? { podLabelSelector } : {}),
    });
    // Node Feature Discovery: OpenShift's operator always; on plain Kubernetes the add-on, where a TEE asks for it.
    if (cluster.nodeFeatureDiscovery || opts.hardware?.tee)
      this.nfdSim = new NodeFeatureDiscovery({ client: this.client, log, nodes: this.informers.nodes, rules: true });
    if (this.distribution === 'kubernetes') {
      this.sandboxes = new KataSandboxes({ client: this.client, log, journal, pods: this.kataDeploy.pods, nodes: this.informers.nodes });
      return;
    }
    const sims = openshiftSimulators({
      client: this.client,
      log,
      options: opts,
      informers: this.informers,
      journal,
      infrastructureName: this.infrastructureName,
    });
    this.openshift = { account: sims.account, cco: sims.cco, mco: sims.mco, cloud: sims.cloud };
    this.podVMs = sims.podVMs;
    this.cloudAPIServer = sims.cloudAPIServer;
    this.sandboxes = new KataSandboxes({ client: this.client, log, journal, pods: sims.podVMs.pods, nodes: this.informers.nodes });
  }

  /** Where osc's cloud clients reach the simulated cloud (`osc run --cloud-api-endpoint`, its CA). */
  get cloudAPI(): { url: string; ca: string } {
    const s = this.cloudAPIServer;
    if (!s?.url) throw new Error(`the ${this.distribution} dev cluster has no cloud API endpoint`);
    return { url: s.url, ca: s.ca };
  }

  private openshiftPart<K extends 'mco' | 'cloud' | 'cco' | 'account'>(k: K): NonNullable<DevCluster['openshift']>[K] {
    if (!this.openshift) throw new Error(`the ${this.distribution} dev cluster has no ${PART_NAMES[k]}`);
    return this.openshift[k];
  }

  /** The simulated Machine Config Operator (openshift distribution). */
  get mco(): MachineConfigOperator {
    return this.openshiftPart('mco');
  }

  /** The simulated Node Feature Discovery (openshift distribution). */
  get nfd(): NodeFeatureDiscovery {
    if (!this.nfdSim)
      throw new Error(`the ${this.distribution} dev cluster has no ${PART_NAMES.nfd} (plain Kubernetes: start it with a TEE)`);
    return this.nfdSim;
  }

  /** The simulated Cloud Credential Operator (src/devcluster/cco/; openshift distribution). */
  get cco(): CloudCredentialOperator {
    return this.openshiftPart('cco');
  }

  /** The simulated AWS account behind the cloud and the CCO (src/devcluster/clouds/aws-account.ts; openshift distribution). */
  get awsAccount(): AwsAccount {
    return this.openshiftPart('account');
  }

  /** The peer-pod cloud: pod VM image jobs and DaemonSet status (src/devcluster/clouds/; openshift distribution). */
  get cloud(): PeerPodsCloud {
    return this.openshiftPart('cloud');
  }

  static async start(opts: DevClusterOptions = {}): Promise<DevCluster> {
    const started = performance.now();
    const plain = opts.distribution === 'kubernetes';
    const controlPlane = await ControlPlane.start({
      log: opts.log,
      dataDir: opts.dataDir,
      logDir: opts.logDir,
      apiserverArgs: opts.apiserverArgs,
      nodeMonitorGracePeriodSeconds: opts.nodeMonitorGracePeriodSeconds,
      nodeLeaseDurationSeconds: opts.nodeLeaseDurationSeconds,
      kwok: {
        // kata-deploy's pods are played by its simulator (on OpenShift, for deploymentMode DaemonSet).
        hostSimulatedPods: eitherQuery(
          installerPodQuery(opts.kataDeploy?.repositories ?? DEFAULT_INSTALLER_REPOSITORIES),
          opts.callerPlayedPods,
        ),
        // A peer pod starts once the adaptor has made its VM (podvms.ts).
        ...(plain ? {} : { simulatedJobs: CLOUD_JOBS, sandboxGatedPods: PEER_POD_QUERY }),
      },
    });
    let dc: DevCluster | undefined;
    try {
      await controlPlane.installCRDs(servedCRDs(opts));
      dc = new DevCluster(controlPlane, opts);
      await dc.seed();
      dc.log.info(
        {
          distribution: dc.distribution,
          workers: dc.options.workers,
          masters: dc.options.masters,
          compact: dc.options.compact,
          startupMs: Math.round(performance.now() - started),
        },
        'dev cluster ready',
      );
      return dc;
    } catch (e) {
      if (dc) await dc.stop();
      else await controlPlane.stop();
      throw e;
    }
  }

  private get signal(): AbortSignal {
    return this.abort.signal;
  }

  private poll<T>(fn: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    return pollUntil(fn, timeoutMs, what, this.signal);
  }

  private async seed(): Promise<void> {
    if (this.distribution === 'kubernetes') return this.seedKubernetes();
    // Admission comes first: no pod of this cluster is created without it, as on OpenShift.
    if (this.options.sccAdmission !== false) this.sccAdmission = await startSccAdmission(this.client, this.log, this.signal);
    // A data directory kept from a run with admission must not keep its registration, whose server is gone.
    else await this.client.delete(MutatingWebhookConfigurations, SCC_WEBHOOK_CONFIGURATION);
    for (const ns of DEV_NAMESPACES) await this.createIfAbsent(this.client.create(Namespaces, { metadata: { name: ns } }));
    if (this.options.oscSecurityIdentity !== false)
      await applyAll(this.client, oscSecurityIdentity(OPERATOR_NAMESPACE), undefined, 'osc-devcluster');
    if (this.options.kataDeployIdentity !== false)
      await applyAll(this.client, kataDeployIdentity(OPERATOR_NAMESPACE), undefined, 'osc-devcluster');
    await this.createInfrastructure();
    await seedHardware(this.client, this.options.hardware ?? {}, true);
    for (const role of ['master', 'worker'] as const) {
      for (const mc of baseMachineConfigs(role)) await this.createIfAbsent(this.client.create(MachineConfigs, mc));
    }
    for (const pool of basePools()) await this.createIfAbsent(this.client.create(MachineConfigPools, pool));

    await this.mco.start(this.signal);
    await this.nfd.start(this.signal);
    await this.kataDeploy.start(this.signal);
    await this.cloud.start(this.signal);
    await this.podVMs?.start(this.signal);
    await this.sandboxes.start(this.signal);
    await this.cloudAPIServer?.start();
    if (this.options.cloudCredentialOperator !== false) {
      // Root credentials on a cloud platform, as its installer leaves them (none on bare metal).
      const onCloud = ['AWS', 'Azure', 'GCP'].includes(this.options.platform ?? '');
      await this.cco.install(this.options.credentialsMode ?? '', onCloud, this.signal);
    }
    const rendered = await this.poll(
      () => {
        const m = this.informers.pools.get('master')?.spec?.configuration?.name;
        const w = this.informers.pools.get('worker')?.spec?.configuration?.name;
        return m && w ? { master: m, worker: w } : undefined;
      },
      60_000,
      'the master and worker pools to be rendered',
    );

    // Nodes boot with their pool's rendered config, as the Machine Config Server serves it, and NFD has
    // already labelled them (nodes added later are labelled by the NFD simulator after they join).
    const inits = initialNodes(this.options, (role) => ({ bootConfig: rendered[role] })).map((n) => ({
      ...n,
      virtualizationCapable: this.isCapable(n.name),
      nfdLabelled: true,
    }));
    const deadline = await this.registerNodes(inits);
    await this.waitForPoolsUpdated(120_000 + 50 * inits.length);
    await this.poll(
      () => inits.every((n) => !n.virtualizationCapable || this.informers.nodes.get(n.name)?.metadata.labels?.[NFD_KATA_LABEL] === 'true'),
      deadline,
      'Node Feature Discovery to label the virtualization-capable nodes',
    );
    await this.waitForTeeLabels(deadline);
  }

  /** The TEE nodes labelled (and their key slots advertised) by NFD's rule, as an administrator would see them. */
  private async waitForTeeLabels(deadline: number): Promise<void> {
    const hardware = this.options.hardware ?? {};
    const teeLabel = teeLabelOf(hardware);
    if (!teeLabel) return;
    const inits = initialNodes(this.options, () => ({}));
    await this.poll(
      () => inits.every((n) => !n.annotations?.[CPU_SECURITY] || this.informers.nodes.get(n.name)?.metadata.labels?.[teeLabel] === 'true'),
      deadline,
      'Node Feature Discovery to label the TEE nodes',
    );
  }

  /**
   * A plain cluster: osc's namespace (and kata-deploy's identity, which the install ships), the nodes, and
   * kata-deploy's host side; no OpenShift API, no NFD.
   */
  private async seedKubernetes(): Promise<void> {
    await this.createIfAbsent(this.client.create(Namespaces, { metadata: { name: OPERATOR_NAMESPACE } }));
    if (this.options.kataDeployIdentity !== false)
      await applyAll(this.client, kataDeployIdentity(OPERATOR_NAMESPACE), undefined, 'osc-devcluster');
    void this.informers.nodes.run(this.signal);
    await this.kataDeploy.start(this.signal);
    await this.sandboxes.start(this.signal);
    const hardware = this.options.hardware ?? {};
    if (hardware.tee) {
      await seedHardware(this.client, hardware, false);
      await this.nfd.start(this.signal);
    }
    const deadline = await this.registerNodes(initialNodes(this.options, () => ({ distribution: 'kubernetes' })));
    await this.waitForTeeLabels(deadline);
  }

  /**
   * Registers nodes and waits until they are usable, i.e. schedulable: the node lifecycle controller lifts
   * the not-ready taint every node registers with once kwok reports it Ready. Answers the deadline used,
   * generous and growing with the cluster (kwok, the controllers and the simulators each go through every
   * node once), for the caller's own waits.
   */
  private async registerNodes(inits: NodeInit[]): Promise<number> {
    await mapLimit(inits, 16, (n) => registerNode(this.client, n));
    const deadline = 60_000 + 100 * inits.length;
    await this.poll(() => inits.every((n) => this.informers.nodes.get(n.name)), deadline, 'the nodes to be registered');
    await this.poll(
      () => inits.every((n) => !this.informers.nodes.get(n.name)?.spec?.taints?.some((t) => t.key === NOT_READY_TAINT)),
      deadline,
      'the controller-manager to find the nodes Ready',
    );
    return deadline;
  }

  private isCapable(name: string): boolean {
    const v = this.options.virtualizationCapable ?? 'all';
    return v === 'all' ? true : v === 'none' ? false : v.includes(name);
  }

  private async createInfrastructure(): Promise<void> {
    const { spec, status } = infrastructureOf({
      platform: this.options.platform ?? 'None',
      masters: this.options.masters,
      schedulable: this.options.compact ? this.options.masters : this.options.workers,
      apiserverUrl: this.controlPlane.apiserverUrl,
      name: this.infrastructureName,
      awsRegion: this.options.awsRegion ?? 'us-east-2',
      cloudStatus: 'infrastructureStatus' in this.cloud ? this.cloud.infrastructureStatus() : {},
    });
    await this.createIfAbsent(this.client.create(Infrastructures, { metadata: { name: 'cluster' }, spec }));
    await this.client.patch(Infrastructures, 'cluster', { status }, { subresource: 'status' });
  }

  private async createIfAbsent(p: Promise<unknown>): Promise<void> {
    try {
      await p;
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }

  /**
   * Answers once every pool has rendered its configuration and rolled it out: Updated, status caught up
   * with spec, and its machine count equal to the nodes that belong to it.
   */
  async waitForPoolsUpdated(timeoutMs = 120_000): Promise<void> {
    await this.poll(
      () => poolsUpdated(this.informers.pools.list(), (pool) => this.mco.nodesOf(pool).length),
      timeoutMs,
      'all machine config pools to be Updated',
    );
  }

  /**
   * Adds a worker that boots with the worker pool's configuration: `worker-<n>` past every worker this
   * cluster has had unless named. A replacement machine gets a name of its own, as on a cloud (a new
   * instance, a new host name): given a lost node's name it would inherit that node's pods, which the pod
   * garbage collector only deletes while no node of their node's name exists. opts.pool: see below.
   */
  async addWorker(name?: string, opts: { virtualizationCapable?: boolean; pool?: string } = {}): Promise<Node> {
    let nodeName = name;
    if (!nodeName) {
      const nodes = await this.client.list(Nodes);
      const used = nodes.items.map((n) => workerIndex(objectName(n))).filter((x): x is number => x !== undefined);
      nodeName = `worker-${Math.max(this.lastWorkerIndex, ...used) + 1}`;
    }
    this.lastWorkerIndex = Math.max(this.lastWorkerIndex, workerIndex(nodeName) ?? -1);
    const index = Number(/(\d+)$/.exec(nodeName)?.[1] ?? 0);
    if (this.distribution === 'kubernetes')
      return registerNode(this.client, { name: nodeName, role: 'worker', index, distribution: 'kubernetes' });
    // A machine of a MachineSet that labels its nodes for a custom pool (opts.pool) registers with that role
    // and boots with the pool's configuration, as the Machine Config Server serves it: nothing to drain for.
    const pool = await this.client.find(MachineConfigPools, opts.pool ?? 'worker');
    const capable = opts.virtualizationCapable ?? this.isCapable(nodeName);
    const node = await registerNode(this.client, {
      name: nodeName,
      role: 'worker',
      index,
      virtualizationCapable: capable,
      bootConfig: pool?.spec.configuration?.name,
      labels: opts.pool ? { [`node-role.kubernetes.io/${opts.pool}`]: '' } : undefined,
    });
    this.log.info({ node: nodeName }, 'worker added');
    return node;
  }

  /**
   * Stops (or resumes) a node's heartbeat, as when its kubelet dies or the machine loses its network: kwok
   * stops renewing the node's Lease, and the controller-manager marks it Unknown after the grace period.
   */
  async setHeartbeat(name: string, alive: boolean): Promise<void> {
    await this.client.patch(Nodes, name, { metadata: { labels: { [KWOK_NODE_LABEL]: alive ? KWOK_NODE_VALUE : null } } });
    this.log.info({ node: name, alive }, alive ? 'node heartbeat resumed' : 'node heartbeat stopped');
  }

  /**
   * Deletes a node, as when a machine is removed from the cluster. Its pods stay until the controller-manager's
   * pod garbage collector deletes them, 40 to 60 s later (it waits that long for the node to come back).
   */
  async removeNode(name: string): Promise<void> {
    this.lastWorkerIndex = Math.max(this.lastWorkerIndex, workerIndex(name) ?? -1);
    await this.client.delete(Nodes, name);
    this.log.info({ node: name }, 'node removed');
  }

  /** Stops the simulators, then etcd and kube-apiserver (their data goes with them unless dataDir was given). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    await this.cloudAPIServer?.stop();
    await this.controlPlane.stop();
    await this.sccAdmission?.stop();
  }
}

/** Two jq queries for pods some process plays: true when either is. */
function eitherQuery(a: string, b: string | undefined): string {
  return b ? `((${a}) or (${b}))` : a;
}
