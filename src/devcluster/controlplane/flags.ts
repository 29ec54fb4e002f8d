/**
 * The command lines of the dev cluster's control plane, as pure functions of ports and paths, so that a
 * unit test can read what each component is told. Values follow a small production cluster; where they
 * differ it is for a throwaway cluster on one machine (no fsync, no leader election between replicas that
 * do not exist) or for scale (client rate limits that let the controllers keep up with thousands of nodes).
 */

export interface Pki {
  ca: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  saKey: string;
  saPub: string;
}

/** OpenShift's default service network (kubernetes.default is its first address). */
export const SERVICE_CIDR = '172.30.0.0/16';
export const KUBERNETES_SERVICE_IP = '172.30.0.1';

/** Client rate limits for the controllers: the defaults (20/30) would throttle a 1,000-node rollout. */
export const CONTROLLER_QPS = 1000;
export const CONTROLLER_BURST = 2000;

export function etcdArgs(o: { dataDir: string; clientPort: number; peerPort: number }): string[] {
  return [
    '--name=osc',
    `--data-dir=${o.dataDir}`,
    `--listen-client-urls=http://127.0.0.1:${o.clientPort}`,
    `--advertise-client-urls=http://127.0.0.1:${o.clientPort}`,
    `--listen-peer-urls=http://127.0.0.1:${o.peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${o.peerPort}`,
    `--initial-cluster=osc=http://127.0.0.1:${o.peerPort}`,
    '--unsafe-no-fsync', // a throwaway store: durability buys nothing and costs a lot on slow disks
    '--quota-backend-bytes=2147483648',
    '--log-level=warn',
  ];
}

export function apiserverArgs(o: { etcdPort: number; securePort: number; certDir: string; pki: Pki; extra?: string[] }): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${o.etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${o.securePort}`,
    `--cert-dir=${o.certDir}`,
    `--tls-cert-file=${o.pki.apiserverCert}`,
    `--tls-private-key-file=${o.pki.apiserverKey}`,
    `--client-ca-file=${o.pki.ca}`,
    `--service-account-key-file=${o.pki.saPub}`,
    `--service-account-signing-key-file=${o.pki.saKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--authorization-mode=Node,RBAC',
    '--allow-privileged=true',
    // Every simulated node's kubelet is kwok on this host: nodes carry it as their InternalDNS address.
    '--kubelet-preferred-address-types=InternalDNS,InternalIP,Hostname,ExternalDNS,ExternalIP',
    '--v=1',
    ...(o.extra ?? []),
  ];
}

export function schedulerConfig(kubeconfig: string): string {
  return [
    'apiVersion: kubescheduler.config.k8s.io/v1',
    'kind: KubeSchedulerConfiguration',
    'clientConnection:',
    `  kubeconfig: ${JSON.stringify(kubeconfig)}`,
    `  qps: ${CONTROLLER_QPS}`,
    `  burst: ${CONTROLLER_BURST}`,
    'leaderElection:',
    '  leaderElect: false',
    '',
  ].join('\n');
}

export function schedulerArgs(o: { config: string }): string[] {
  // No serving port: nothing scrapes it here, and a fixed port would collide between parallel clusters.
  return [`--config=${o.config}`, '--secure-port=0', '--v=1'];
}

export interface ControllerManagerTiming {
  /** How long a node may go without a Lease renewal before it is marked Unknown; default 40s. */
  nodeMonitorGracePeriodSeconds?: number;
  /**
   * The node Leases' duration; a kubelet renews at a quarter of it. Default 40s, a kubelet's: every node
   * writes its Lease every 10s, 500 writes a second at 5,000 nodes, which a large cluster's control plane
   * takes and a laptop's barely does; a benchmark of thousands of nodes may lengthen it (the grace period
   * is kept at least half of it, twice the renewal interval, so that healthy nodes never look dead).
   */
  nodeLeaseDurationSeconds?: number;
}

export const leaseDuration = (t: ControllerManagerTiming) => t.nodeLeaseDurationSeconds ?? 40;
/** At least twice the renewal interval (a quarter of the lease): a healthy node never looks dead. */
export const gracePeriod = (t: ControllerManagerTiming) => Math.max(t.nodeMonitorGracePeriodSeconds ?? 40, Math.ceil(leaseDuration(t) / 2));

export function controllerManagerArgs(o: { kubeconfig: string; pki: Pki } & ControllerManagerTiming): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--secure-port=0',
    '--leader-elect=false',
    // Each controller acts as its own service account (system:serviceaccount:kube-system:<controller>),
    // as on a production cluster: what it may do is what its bootstrap role grants.
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${o.pki.saKey}`,
    `--root-ca-file=${o.pki.ca}`,
    `--cluster-signing-cert-file=${o.pki.ca}`,
    `--cluster-signing-key-file=${o.pki.caKey}`,
    `--kube-api-qps=${CONTROLLER_QPS}`,
    `--kube-api-burst=${CONTROLLER_BURST}`,
    `--node-monitor-grace-period=${gracePeriod(o)}s`,
    '--node-monitor-period=2s',
    '--v=1',
  ];
}

export function kwokArgs(
  o: {
    kubeconfig: string;
    config: string;
    podCidr: string;
    nodeSelector: string;
    /** Where kwok serves the kubelet API (pod logs) over TLS. */
    server: { port: number; cert: string; key: string };
  } & ControllerManagerTiming,
): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    `--config=${o.config}`,
    `--manage-nodes-with-label-selector=${o.nodeSelector}`,
    `--cidr=${o.podCidr}`,
    `--node-lease-duration-seconds=${leaseDuration(o)}`,
    `--server-address=127.0.0.1:${o.server.port}`,
    `--node-port=${o.server.port}`,
    `--tls-cert-file=${o.server.cert}`,
    `--tls-private-key-file=${o.server.key}`,
    '--enable-crds=Logs',
  ];
}
