import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type DeploymentMode, FEATURE_GATES_CONFIGMAP, parseFeatureGates } from './api/featuregates.ts';
import { activeKataConfig, IN_PROGRESS, type KataConfig, KataConfigs } from './api/kataconfig.ts';
import { LEADER_ELECTION_LEASE, METRICS_SERVICE, OPERATOR_FIELD_MANAGER, OPERATOR_NAMESPACE, PEER_PODS_CM } from './api/names.ts';
import type { Credentials } from './kube/credentials.ts';

/**
 * How long a watch may stay silent while work is under way before it is presumed dead: a sixth of the
 * bookmark-based idle timeout. Often it is a healthy watch of a quiet kind, and being wrong costs one watch
 * request (resumed from its last version); being right saves a minute and more of a stalled rollout.
 */
const QUIET_WATCH_WHILE_BUSY_MS = 15_000;
/** A write this recent means its consequences are still arriving through the watches. */
const RECENT_WRITE_MS = 30_000;

export { LEADER_ELECTION_LEASE };

import { CredentialsRequests } from './api/cloudcredential.ts';
import { objectName } from './api/meta.ts';
import { APIServers } from './api/openshift.ts';
import { setupKataConfigController } from './controllers/kataconfig/controller.ts';
import type { KataConfigOptions } from './controllers/kataconfig/reconciler.ts';
import { type MonitorOptions, setupMonitorController } from './controllers/monitor/controller.ts';
import { watchSetupInfo } from './controllers/monitor/setup-info.ts';
import { setupPeerPodsController } from './controllers/peerpods/controller.ts';
import type { LeakCollectorOptions } from './controllers/peerpods/leaks-controller.ts';
import type { PeerPodsOptions } from './controllers/peerpods/reconciler.ts';
import { setupSCCController } from './controllers/scc/controller.ts';
import { KubeClient } from './kube/client.ts';
import { errorMessage } from './kube/errors.ts';
import { parseWithoutNodeImages } from './kube/nodejson.ts';
import { ConfigMaps, Nodes, Secrets } from './kube/resources.ts';
import { choosePlatform, type PlatformOptions, platformCluster, servedGroups } from './platform/index.ts';
import type { Platform, PlatformName } from './platform/platform.ts';
import { apiServerConfigServed, followClusterTLS, initialClusterTLS } from './runtime/clustertls.ts';
import type { LeaseTimings } from './runtime/leasetimings.ts';
import { LeadershipLostError, Manager, parseAddress } from './runtime/manager.ts';
import type { RuntimeMetrics } from './runtime/metrics.ts';
import { apiServerReviews, DelegatingAuth } from './runtime/metricsauth.ts';
import { type MetricsCert, metricsServingCert, watchCertDir } from './runtime/servingcert.ts';
import { DEFAULT_TLS_OPTIONS } from './runtime/tlsprofile.ts';
import { WebhookCertificates } from './webhooks/certificates.ts';
import { type CertSourceFlag, chooseCertSource, discoverCertServices } from './webhooks/certsource.ts';
import { KATACONFIG_WEBHOOK_PATH, kataConfigAdmission } from './webhooks/kataconfig.ts';
import { peerPodAdmission } from './webhooks/peerpods.ts';
import { registrationsCarry, setupWebhookRegistration } from './webhooks/registration.ts';
import { WebhookServer } from './webhooks/server.ts';
import { PEER_POD_WEBHOOK_PATH, registerWebhooks, WEBHOOK_SERVICE } from './webhooks/setup.ts';

export interface OperatorOptions {
  /** The cluster: a kubeconfig, or (in a pod) the service account's in-cluster credentials. */
  kubeConfig: KubeConfig | Credentials;
  log: Logger;
  /** Where the operator keeps its lease, webhook certificate and peer-pods configuration. */
  namespace?: string;
  /** Run only while holding the lease (default true): several replicas can run, one reconciles. */
  leaderElection?: boolean;
  /** host:port for /metrics; '' to disable. Default 0.0.0.0:8443 (HTTPS). */
  metricsAddress?: string;
  /**
   * HTTPS with delegated authentication and authorisation (default true): a scraper needs a bearer token
   * the API server accepts and RBAC's `get` on the non-resource URL /metrics. false serves plain HTTP
   * with no authentication, allowed on a loopback address only.
   */
  metricsSecure?: boolean;
  /** A directory with the metrics server's tls.crt and tls.key (re-read when they change); else osc makes one. */
  metricsCertDir?: string;
  /**
   * The certificate a previous run of this operator served metrics with (`Operator.metricsCert`), for a
   * restart in the same process: scrapers that trust its CA keep working.
   */
  metricsCert?: MetricsCert;
  /** host:port for /healthz and /readyz; default 0.0.0.0:8081. */
  healthAddress?: string;
  /**
   * The admission webhooks: served on `address` over TLS; registered so that the API server reaches them
   * at `url` (operator outside the cluster, e.g. the dev cluster) or through the operator's Service.
   * `false` serves and registers nothing (then a second KataConfig is not refused).
   */
  webhook?: false | WebhookOptions;
  kataConfig?: Partial<KataConfigOptions>;
  /**
   * How kata reaches the nodes (docs/architecture.md, "The Platform seam"): a platform by name, or one
   * already made; by default the one discovery finds (OpenShift when the Machine Config Operator's API
   * group is served, else plain Kubernetes).
   */
  platform?: PlatformName | Platform;
  /** Options of the platform made by name or by discovery. */
  platformOptions?: PlatformOptions;
  /** Peer pods: images (cloud-api-adaptor, pod VM builder) and timings. */
  peerPods?: Partial<Omit<PeerPodsOptions, 'namespace'>>;
  /** The cloud's pod VMs, to find and delete leaked ones (docs/peerpods.md, "Leaked pod VMs"); off without. */
  leakedVMs?: LeakCollectorOptions;
  /**
   * On OpenShift, keep osc's SecurityContextConstraints (made, corrected, upgraded) where the install could
   * not ship them: the OLM form (`osc run --ensure-sccs`; src/controllers/scc).
   */
  ensureSCCs?: boolean;
  /** The kata monitor DaemonSet (image). */
  monitor?: Partial<Omit<MonitorOptions, 'namespace'>>;
  identity?: string;
  metrics?: RuntimeMetrics;
  /** Lease timings, for tests. */
  leaseTimings?: LeaseTimings;
}

export interface WebhookOptions {
  address: string;
  url?: string;
  register?: boolean;
  /** Where the serving certificate comes from (docs/security.md); default auto: the platform's service, else osc's own. */
  certSource?: CertSourceFlag;
  /** osc's own certificates: lifetime (default 7 days), rotated at two thirds of it. */
  certLifetimeMs?: number;
  /** How often every replica re-reads the certificate's Secret (default 30 s). */
  certPollMs?: number;
  /** How long the API server gets to load a new CA bundle before the new certificate is served (default 10 s). */
  certPropagationMs?: number;
}

export interface Operator {
  manager: Manager;
  /** The platform the operator runs on. */
  platform: Platform;
  /** The port the webhook server bound (useful with port 0). */
  webhookPort?: number;
  /** The webhook's serving certificate (its source, what it serves). */
  webhookCerts?: WebhookCertificates;
  webhookServer?: WebhookServer;
  /** The CA of the metrics server's certificate when osc made it (for a scraper to verify it). */
  metricsCA?: string;
  /** The metrics server's certificate, to hand to a restart in the same process. */
  metricsCert?: MetricsCert;
  /**
   * Runs until signal aborts, then shuts down in order. Rejects with LeadershipLostError (after the same
   * shutdown) when this replica lost its lease: its caller ends the process, or makes a new operator.
   */
  run(signal: AbortSignal): Promise<void>;
}

/** Assembles the operator: the manager with its controllers, and the admission webhooks. */
export async function createOperator(opts: OperatorOptions): Promise<Operator> {
  const namespace = opts.namespace ?? OPERATOR_NAMESPACE;
  // No controller reads a Node's container images (controllers/nodecache.ts): they are left out as parsed.
  const client = new KubeClient(opts.kubeConfig, {
    fieldManager: OPERATOR_FIELD_MANAGER,
    parsers: new Map([[Nodes, parseWithoutNodeImages]]),
  });
  const metricsAddress = opts.metricsAddress === undefined ? '0.0.0.0:8443' : opts.metricsAddress || undefined;
  const secure =
    metricsAddress && opts.metricsSecure !== false
      ? await secureMetrics(client, namespace, opts.metricsCertDir, opts.metricsCert)
      : undefined;
  if (metricsAddress && !secure && !isLoopback(parseAddress(metricsAddress).host))
    throw new Error(
      `plain-HTTP metrics may only listen on a loopback address, not ${metricsAddress}: bind it to 127.0.0.1, or drop --no-metrics-secure`,
    );
  // The cluster's TLS profile, read before anything is served: here when the webhook server listens at
  // once, else when the operator runs (its metrics server listens then), so that building an operator makes
  // no request of its own.
  let tlsProfileServed = false;
  let tlsOptions = DEFAULT_TLS_OPTIONS;
  const readClusterTLS = async () => {
    tlsProfileServed = await apiServerConfigServed(client);
    tlsOptions = await initialClusterTLS(client, tlsProfileServed, opts.log);
    opts.log.info({ profile: tlsOptions.profile, minVersion: tlsOptions.minVersion }, 'TLS security profile');
  };
  const tlsAtStart = opts.webhook !== false;
  if (tlsAtStart) await readClusterTLS();
  // Work under way: a KataConfig installing, updating or uninstalling (or not yet reported on) waits on the
  // nodes' progress, which only the watches bring, and so does whatever this process just wrote; a watch
  // silent for long then is presumed dead (see InformerOptions.quietWhileBusy).
  let kataConfigCache: { list(): KataConfig[] } | undefined;
  // Monotonic: a wall clock stepped back must not keep the process 'busy' (and its quiet watches restarting) for hours.
  let lastWrite = Number.NEGATIVE_INFINITY;
  client.onWritten((rt) => {
    // A lease renewal or an event is bookkeeping, not work whose consequences are awaited.
    if (rt.plural !== 'leases' && rt.plural !== 'events') lastWrite = performance.now();
  });
  const settled = (kc: KataConfig) =>
    !kc.metadata.deletionTimestamp && !!kc.status?.conditions?.some((c) => c.type === IN_PROGRESS && c.status === 'False');
  const busy = () => {
    if (performance.now() - lastWrite < RECENT_WRITE_MS) return true;
    // Only the KataConfig osc acts on: an ignored second one never gets a status.
    const active = kataConfigCache && activeKataConfig(kataConfigCache.list());
    return !!active && !settled(active);
  };
  const manager = new Manager({
    informerDefaults: { quietWhileBusy: { busy, afterMs: QUIET_WATCH_WHILE_BUSY_MS } },
    tlsOptions,
    client,
    log: opts.log,
    metrics: opts.metrics,
    identity: opts.identity,
    metricsAddress,
    secureMetrics: secure && { tls: secure.cert, auth: secure.auth },
    healthAddress: opts.healthAddress === undefined ? '0.0.0.0:8081' : opts.healthAddress || undefined,
    leaderElection: opts.leaderElection === false ? undefined : { namespace, name: LEADER_ELECTION_LEASE, ...opts.leaseTimings },
  });
  kataConfigCache = manager.informer(KataConfigs) as unknown as { list(): KataConfig[] };
  const chosen =
    typeof opts.platform === 'object'
      ? { platform: opts.platform, chosenBy: 'caller' }
      : await choosePlatform(
          client,
          opts.platform,
          {
            // A platform's own objects (the kubernetes platform's installer) live in the operator's namespace.
            namespace,
            ...opts.platformOptions,
          },
          opts.platform ? undefined : await deploymentModeAtStart(client, namespace, opts.log),
        );
  const { platform } = chosen;
  if ('warning' in chosen && chosen.warning) opts.log.warn(chosen.warning);
  opts.log.info({ platform: platform.name, chosenBy: chosen.chosenBy }, 'platform chosen');
  setupKataConfigController(manager, platform, { ...opts.kataConfig, namespace });
  // Where the cluster has a Cloud Credential Operator, peer pods ask it for credentials
  // (docs/cloud-credentials.md); where it has a TLS security profile, the adaptor follows it. Discovery
  // answers both, asked only when one of them is not given.
  const given = opts.peerPods ?? {};
  const groups =
    platform.supportsPeerPods && (given.cloudCredentials === undefined || given.clusterTLSProfile === undefined)
      ? await servedGroups(client)
      : undefined;
  setupPeerPodsController(manager, platform, {
    ...opts.peerPods,
    namespace,
    cloudCredentials: given.cloudCredentials ?? !!groups?.has(CredentialsRequests.group),
    clusterTLSProfile: given.clusterTLSProfile ?? (!!groups?.has(APIServers.group) && (await apiServerConfigServed(client))),
    leakedVMs: opts.leakedVMs,
  });
  setupMonitorController(manager, platform, { ...opts.monitor, namespace });
  if (opts.ensureSCCs && platformCluster(platform.name).securityContextConstraints) setupSCCController(manager);
  watchSetupInfo(manager, { namespace, clusterConfig: !!platformCluster(platform.name).clusterConfig });

  // Followed even when it was empty at start: the platform may write the certificate after the pod started.
  const certDir = opts.metricsCertDir;
  const stopWatching =
    secure && certDir
      ? watchCertDir(
          certDir,
          secure.cert.source === certDir ? secure.cert : undefined,
          (c) => {
            manager.reloadMetricsCert(c);
            secure.cert = { ...c, source: certDir };
            opts.log.info({ dir: certDir }, 'metrics serving certificate loaded from the directory');
          },
          undefined,
          (e) => opts.log.warn({ dir: certDir, err: errorMessage(e) }, 'metrics serving certificate in the directory not usable yet'),
        )
      : undefined;
  if (secure) opts.log.info({ certificate: secure.cert.source }, 'metrics served over HTTPS, authorised through the API server');
  const operator: Operator = {
    manager,
    platform,
    get metricsCA() {
      return secure?.cert.caPem;
    },
    get metricsCert() {
      return secure?.cert;
    },
    run: async (signal) => {
      if (!tlsAtStart) {
        await readClusterTLS();
        if (secure) manager.setTLSOptions(tlsOptions);
        followTLS();
      }
      try {
        await manager.start(signal);
      } finally {
        stopWatching?.();
        await webhooks?.close();
        await client.close();
      }
    },
  };

  let webhooks: WebhookServer | undefined;
  if (opts.webhook !== false) {
    const wh = opts.webhook ?? { address: '0.0.0.0:9443' };
    webhooks = new WebhookServer(opts.log.child({ component: 'webhook' }), tlsOptions);
    // Reads come from the caches the controllers share: a request costs the API server nothing.
    const kataConfigs = manager.informer(KataConfigs);
    webhooks.handle(
      KATACONFIG_WEBHOOK_PATH,
      kataConfigAdmission(
        {
          get hasSynced() {
            return kataConfigs.hasSynced;
          },
          list: () => kataConfigs.list() as KataConfig[],
          live: async () => (await client.list(KataConfigs)).items as KataConfig[],
          onCached: (cb) => kataConfigs.addEventHandler({ add: (k) => cb(objectName(k)) }),
        },
        platform,
      ),
    );
    const peerPodsCM = manager.informer(ConfigMaps, { namespace, fieldSelector: `metadata.name=${PEER_PODS_CM}` });
    webhooks.handle(PEER_POD_WEBHOOK_PATH, peerPodAdmission(client, namespace, peerPodsCM));
    const flag = wh.certSource ?? 'auto';
    const source = chooseCertSource(
      flag,
      flag === 'auto' && !wh.url ? await discoverCertServices(client) : { serviceCA: false, certManager: false },
      Boolean(wh.url),
    );
    const certs = new WebhookCertificates({
      client,
      namespace,
      service: WEBHOOK_SERVICE,
      source,
      log: opts.log.child({ component: 'webhook-cert' }),
      lifetimeMs: wh.certLifetimeMs,
      pollMs: wh.certPollMs,
      propagationMs: wh.certPropagationMs,
    });
    opts.log.info({ source, secret: `${namespace}/${certs.secretName}` }, 'webhook serving certificate source');
    // Every replica serves what the Secret holds now: its changes come through a watch of it alone.
    certs.follow(manager.informer(Secrets, { namespace, fieldSelector: `metadata.name=${certs.secretName}` }));
    const server = webhooks;
    operator.webhookPort = await server.listen(wh.address, await certs.load());
    operator.webhookCerts = certs;
    operator.webhookServer = server;
    certs.onServe((tls) => {
      server.updateTLS(tls);
      opts.log.info({ secret: `${namespace}/${certs.secretName}` }, 'webhook serving certificate reloaded');
    });
    if (wh.register !== false) {
      const endpoint = wh.url
        ? { url: wh.url.replace('{port}', String(operator.webhookPort)) }
        : { service: { namespace, name: WEBHOOK_SERVICE, port: 443 } };
      // A single instance registers at once, so that admission holds from the first KataConfig on. With
      // leader election only the leader registers (and keeps registering): a standby pointing the API
      // server at itself would leave it calling a dead endpoint once the standby goes.
      if (opts.leaderElection === false) await registerWebhooks(client, endpoint, certs.trust());
      const registration = setupWebhookRegistration(manager, endpoint, () => certs.trust());
      certs.onTrustChange(() => registration.resync());
      manager.addLeaderRunnable((signal) => certs.rotate(signal, (caPem) => registrationsCarry(client, caPem)));
    } else {
      manager.addLeaderRunnable((signal) => certs.rotate(signal));
    }
    manager.addReadyCheck('webhook', () => webhooks !== undefined);
  }
  function followTLS() {
    if (!tlsProfileServed) return;
    followClusterTLS(
      manager,
      tlsOptions,
      (o) => {
        if (secure) manager.setTLSOptions(o);
        webhooks?.setTLSOptions(o);
      },
      opts.log,
    );
  }
  if (tlsAtStart) followTLS();
  return operator;
}

/**
 * Runs an operator until `signal` aborts; when it stops because it lost its lease, asks `restart` for a
 * new one and runs that: what a Deployment does for a pod whose container exited, for an operator run in
 * a process that must outlive it (`osc start`). Any other failure is the caller's.
 */
export async function runRestartingOnLostLease(
  first: Operator,
  signal: AbortSignal,
  restart: (previous: Operator, lost: LeadershipLostError) => Promise<Operator>,
): Promise<void> {
  for (let current = first; ; ) {
    try {
      return await current.run(signal);
    } catch (e) {
      if (!(e instanceof LeadershipLostError) || signal.aborted) throw e;
      current = await restart(current, e);
    }
  }
}

async function secureMetrics(client: KubeClient, namespace: string, certDir: string | undefined, reuse: MetricsCert | undefined) {
  const svc = `${METRICS_SERVICE}.${namespace}.svc`;
  const cert = reuse ?? (await metricsServingCert({ certDir, dnsNames: [svc, `${svc}.cluster.local`] }));
  return { cert, auth: new DelegatingAuth(apiServerReviews(client)) };
}

/**
 * The deploymentMode gate as the operator starts: it chooses the platform. A value osc cannot read (the
 * KataConfig's condition says which) or a ConfigMap it cannot read leaves the choice to discovery.
 */
async function deploymentModeAtStart(client: KubeClient, namespace: string, log: Logger): Promise<DeploymentMode> {
  try {
    const cm = await client.find(ConfigMaps, FEATURE_GATES_CONFIGMAP, namespace);
    const parsed = parseFeatureGates(cm?.data, cm?.binaryData);
    if (parsed.problems.some((p) => p.key === 'deploymentMode')) return 'DaemonSetFallback';
    return parsed.gates.deploymentMode;
  } catch (e) {
    log.warn({ err: errorMessage(e) }, `cannot read ${namespace}/${FEATURE_GATES_CONFIGMAP}: the platform is chosen by discovery`);
    return 'DaemonSetFallback';
  }
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
