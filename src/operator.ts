import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type KataConfig, KataConfigs } from './api/kataconfig.ts';
import { LEADER_ELECTION_LEASE, OPERATOR_FIELD_MANAGER, OPERATOR_NAMESPACE } from './api/names.ts';
import type { Credentials } from './kube/credentials.ts';

export { LEADER_ELECTION_LEASE };

import { setupKataConfigController } from './controllers/kataconfig/controller.ts';
import type { KataConfigOptions } from './controllers/kataconfig/reconciler.ts';
import { type MonitorOptions, setupMonitorController } from './controllers/monitor/controller.ts';
import { setupPeerPodsController } from './controllers/peerpods/controller.ts';
import type { PeerPodsOptions } from './controllers/peerpods/reconciler.ts';
import { KubeClient } from './kube/client.ts';
import { Manager } from './runtime/manager.ts';
import type { RuntimeMetrics } from './runtime/metrics.ts';
import { KATACONFIG_WEBHOOK_PATH, validateKataConfig } from './webhooks/kataconfig.ts';
import { peerPodAdmission } from './webhooks/peerpods.ts';
import { setupWebhookRegistration } from './webhooks/registration.ts';
import { WebhookServer } from './webhooks/server.ts';
import { loadOrCreateWebhookTLS, PEER_POD_WEBHOOK_PATH, registerWebhooks, WEBHOOK_SERVICE } from './webhooks/setup.ts';

export interface OperatorOptions {
  /** The cluster: a kubeconfig, or (in a pod) the service account's in-cluster credentials. */
  kubeConfig: KubeConfig | Credentials;
  log: Logger;
  /** Where the operator keeps its lease, webhook certificate and peer-pods configuration. */
  namespace?: string;
  /** Run only while holding the lease (default true): several replicas can run, one reconciles. */
  leaderElection?: boolean;
  /** host:port for /metrics (also /healthz, /readyz); '' to disable. Default 0.0.0.0:8080. */
  metricsAddress?: string;
  /** host:port for /healthz and /readyz; default 0.0.0.0:8081. */
  healthAddress?: string;
  /**
   * The admission webhooks: served on `address` over TLS; registered so that the API server reaches them
   * at `url` (operator outside the cluster, e.g. the dev cluster) or through the operator's Service.
   * `false` serves and registers nothing (then a second KataConfig is not refused).
   */
  webhook?: false | { address: string; url?: string; register?: boolean };
  kataConfig?: Partial<KataConfigOptions>;
  /** Peer pods: images (cloud-api-adaptor, pod VM builder) and timings. */
  peerPods?: Partial<Omit<PeerPodsOptions, 'namespace'>>;
  /** The kata monitor DaemonSet (image). */
  monitor?: Partial<Omit<MonitorOptions, 'namespace'>>;
  identity?: string;
  metrics?: RuntimeMetrics;
  /** Lease timings, for tests. */
  leaseTimings?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
}

export interface Operator {
  manager: Manager;
  /** The port the webhook server bound (useful with port 0). */
  webhookPort?: number;
  /** Runs until signal aborts, then shuts down in order. */
  run(signal: AbortSignal): Promise<void>;
}

/** Assembles the operator: the manager with its controllers, and the admission webhooks. */
export async function createOperator(opts: OperatorOptions): Promise<Operator> {
  const namespace = opts.namespace ?? OPERATOR_NAMESPACE;
  const client = new KubeClient(opts.kubeConfig, { fieldManager: OPERATOR_FIELD_MANAGER });
  const manager = new Manager({
    client,
    log: opts.log,
    metrics: opts.metrics,
    identity: opts.identity,
    metricsAddress: opts.metricsAddress === undefined ? '0.0.0.0:8080' : opts.metricsAddress || undefined,
    healthAddress: opts.healthAddress === undefined ? '0.0.0.0:8081' : opts.healthAddress || undefined,
    leaderElection: opts.leaderElection === false ? undefined : { namespace, name: LEADER_ELECTION_LEASE, ...opts.leaseTimings },
  });
  setupKataConfigController(manager, opts.kataConfig);
  setupPeerPodsController(manager, { ...opts.peerPods, namespace });
  setupMonitorController(manager, { ...opts.monitor, namespace });

  const operator: Operator = {
    manager,
    run: async (signal) => {
      try {
        await manager.start(signal);
      } finally {
        await webhooks?.close();
        await client.close();
      }
    },
  };

  let webhooks: WebhookServer | undefined;
  if (opts.webhook !== false) {
    const wh = opts.webhook ?? { address: '0.0.0.0:9443' };
    webhooks = new WebhookServer(opts.log.child({ component: 'webhook' }));
    // A live list, not the cache: two creates in quick succession must not both get through.
    webhooks.handle(KATACONFIG_WEBHOOK_PATH, async (req) =>
      validateKataConfig(req, (await client.list(KataConfigs)).items as KataConfig[]),
    );
    webhooks.handle(PEER_POD_WEBHOOK_PATH, peerPodAdmission(client, namespace));
    const tls = await loadOrCreateWebhookTLS(client, namespace, opts.log);
    operator.webhookPort = await webhooks.listen(wh.address, tls);
    if (wh.register !== false) {
      const endpoint = wh.url
        ? { url: wh.url.replace('{port}', String(operator.webhookPort)) }
        : { service: { namespace, name: WEBHOOK_SERVICE, port: 443 } };
      // A single instance registers at once, so that admission holds from the first KataConfig on. With
      // leader election only the leader registers (and keeps registering): a standby pointing the API
      // server at itself would leave it calling a dead endpoint once the standby goes.
      if (opts.leaderElection === false) await registerWebhooks(client, endpoint, tls.caPem);
      setupWebhookRegistration(manager, endpoint, tls.caPem);
    }
    manager.addReadyCheck('webhook', () => webhooks !== undefined);
  }
  return operator;
}
