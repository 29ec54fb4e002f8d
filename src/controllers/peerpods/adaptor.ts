/**
 * The cloud-api-adaptor DaemonSet (osc-caa-ds), pure: the object osc wants, the digest of the
 * configuration its pods started with, the cluster's TLS profile as the adaptor takes it, and the condition
 * saying how many of its pods run an older configuration (docs/peerpods.md, "Adaptor updates").
 */
import { createHash } from 'node:crypto';
import type { CaaUpdateStrategy } from '../../api/featuregates.ts';
import { ADAPTOR_OUTDATED } from '../../api/kataconfig.ts';
import { CAA_DAEMONSET, PEER_PODS_CM, PEER_PODS_SECRET } from '../../api/names.ts';
import type { TLSSecurityProfile } from '../../api/openshift.ts';
import { ADAPTOR_OUTDATED_REASON, adaptorOutdatedMessage } from '../../api/peerpods-conditions.ts';
import { CAA_SCC, CAA_SERVICE_ACCOUNT, REQUIRED_SCC_ANNOTATION } from '../../api/scc.ts';
import type { ConfigMap, DaemonSet, Secret } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { adaptorData } from '../../peerpods/adaptor-keys.ts';
import { type CredentialsWiring, credentialsWiring } from '../../peerpods/credentials.ts';
import type { Toleration } from '../../platform/platform.ts';
import type { ConditionInput } from '../../runtime/conditions.ts';
import { goTLSProfile } from '../../runtime/tlsprofile.ts';

const P = 'peerpods.kataconfiguration.openshift.io';
/** On the DaemonSet's pod template: a digest of what the adaptor reads; a change of it rolls the pods. */
export const CONFIG_HASH_ANNOTATION = `${P}/config-hash`;
/** On the DaemonSet: a digest of what osc wants it to be, so that a change of the desired spec is seen. */
export const SPEC_HASH_ANNOTATION = `${P}/spec-hash`;
export const CAA_APP_LABEL = 'app';
/** The label selector of the adaptor's pods. */
export const CAA_POD_SELECTOR = `${CAA_APP_LABEL}=${CAA_DAEMONSET}`;

export const digest = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex').slice(0, 16);
export const sortedEntries = (r: Record<string, string> | undefined) => Object.entries(r ?? {}).sort(([a], [b]) => a.localeCompare(b));

/**
 * A digest of the configuration the adaptor reads: the keys of peer-pods-cm it reads (adaptor-keys.ts) and
 * the Secret it gets its credentials from, whole. It goes on the DaemonSet's pod template, so that an edit
 * the adaptor would see restarts it and any other edit (PEERPODS_LIMIT_PER_NODE, an annotation, a key only
 * osc reads) restarts nothing. It reveals nothing of the values.
 */
export function adaptorConfigHash(cm: ConfigMap | undefined, secret: Secret | undefined): string {
  return digest({
    cm: sortedEntries(adaptorData(cm?.data)),
    secret: sortedEntries(secret?.data),
    secretString: sortedEntries(secret?.stringData),
  });
}

/** One variable of the adaptor's container. */
export interface EnvVar {
  name: string;
  value: string;
}

/**
 * The cluster's TLS security profile as the adaptor's TLS_MIN_VERSION and TLS_CIPHER_SUITES (the channel
 * to the agent protocol forwarder in each pod VM). The adaptor refuses TLS 1.0 and 1.1, cipher suites with
 * TLS 1.3, and suites Go lacks, and then does not start; so the profile's minimum is raised to TLS 1.2
 * (Old), its suites are the TLS 1.2 ones Go has, and a profile none of whose TLS 1.2 suites Go has allows
 * TLS 1.3 only (the list itself rules TLS 1.2 out). A profile osc cannot read keeps what the DaemonSet
 * has (`current`), else Intermediate.
 */
export function adaptorTLSEnv(profile: TLSSecurityProfile | undefined, current?: readonly EnvVar[]): EnvVar[] {
  let p: ReturnType<typeof goTLSProfile>;
  try {
    p = goTLSProfile(profile);
  } catch {
    const kept = (current ?? []).filter((e) => e.name === 'TLS_MIN_VERSION' || e.name === 'TLS_CIPHER_SUITES');
    if (kept.length) return kept;
    p = goTLSProfile(undefined);
  }
  const tls13 = p.minTLSVersion === 'VersionTLS13' || p.cipherSuites.length === 0;
  if (tls13) return [{ name: 'TLS_MIN_VERSION', value: 'VersionTLS13' }];
  return [
    { name: 'TLS_MIN_VERSION', value: 'VersionTLS12' },
    { name: 'TLS_CIPHER_SUITES', value: p.cipherSuites.join(',') },
  ];
}

/** The adaptor container's variables as the DaemonSet has them (plain values only). */
export function adaptorEnvOf(ds: DaemonSet | undefined): EnvVar[] {
  const containers = (ds?.spec?.template?.spec as { containers?: { env?: { name: string; value?: string }[] }[] } | undefined)?.containers;
  return (containers?.[0]?.env ?? []).flatMap((e) => (typeof e.value === 'string' ? [{ name: e.name, value: e.value }] : []));
}

/**
 * Where peer pods run: the kata nodes, as the platform selects them (on OpenShift the kata-oc nodes, or
 * the masters of a compact cluster, whose taint the adaptor tolerates).
 */
export interface KataNodePlacement {
  nodeSelector: Record<string, string>;
  tolerations: Toleration[];
}

const ownedLabels = (component: string) => ({
  'app.kubernetes.io/name': 'osc',
  'app.kubernetes.io/component': component,
  'app.kubernetes.io/managed-by': 'osc-operator',
});

/** The DaemonSet's updateStrategy for the feature gate caaUpdateStrategy. */
export function updateStrategy(strategy: CaaUpdateStrategy): Record<string, unknown> {
  return strategy === 'OnDelete' ? { type: 'OnDelete' } : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } };
}

/**
 * The cloud-api-adaptor DaemonSet: one pod per kata node, its environment straight from peer-pods-cm and
 * peer-pods-secret (envFrom: the values never pass through osc) plus the cluster's TLS profile, restarted
 * when what it reads changes (the config-hash annotation on the pod template), as caaUpdateStrategy says:
 * RollingUpdate (one node at a time) or OnDelete (each pod when someone deletes it). The adaptor plumbs
 * pod networking into the node's network namespaces over VXLAN, which needs the host network and a
 * privileged container: it cannot run as non-root; nothing else is given to it.
 */
export function desiredDaemonSet(opts: {
  namespace: string;
  image: string;
  configHash: string;
  placement: KataNodePlacement;
  owner: OwnerReference;
  /** How the adaptor gets its cloud credentials; default peer-pods-secret, whole. */
  credentials?: CredentialsWiring;
  /** The feature gate caaUpdateStrategy; RollingUpdate when not given. */
  strategy?: CaaUpdateStrategy;
  /** TLS_MIN_VERSION and TLS_CIPHER_SUITES (adaptorTLSEnv); Intermediate's when not given. */
  tlsEnv?: readonly EnvVar[];
  /**
   * The adaptor's TAGS, when osc sets them (peer-pods-cm's and the cluster's tag): they win over
   * peer-pods-cm's, which reach the adaptor through envFrom.
   */
  tags?: string;
}): DaemonSet {
  const creds = opts.credentials ?? credentialsWiring({ kind: 'secret' }, PEER_PODS_SECRET);
  const labels = { [CAA_APP_LABEL]: CAA_DAEMONSET };
  const spec: DaemonSet['spec'] = {
    selector: { matchLabels: labels },
    updateStrategy: updateStrategy(opts.strategy ?? 'RollingUpdate'),
    template: {
      metadata: {
        labels: { ...labels, ...ownedLabels('cloud-api-adaptor') },
        // Pinned: an administrator's SCC of higher priority must not change what the adaptor runs with.
        annotations: { [CONFIG_HASH_ANNOTATION]: opts.configHash, [REQUIRED_SCC_ANNOTATION]: CAA_SCC },
      },
      spec: {
        serviceAccountName: CAA_SERVICE_ACCOUNT,
        nodeSelector: opts.placement.nodeSelector,
        ...(opts.placement.tolerations.length ? { tolerations: opts.placement.tolerations } : {}),
        hostNetwork: true,
        priorityClassName: 'system-node-critical',
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 30,
        containers: [
          {
            name: 'cloud-api-adaptor',
            image: opts.image,
            imagePullPolicy: 'IfNotPresent',
            command: ['/usr/local/bin/entrypoint.sh'],
            envFrom: [...creds.envFrom, { configMapRef: { name: PEER_PODS_CM } }],
            // `env` wins over envFrom: the cluster's TLS profile over TLS_* keys in peer-pods-cm.
            env: [
              ...creds.env,
              ...(opts.tags !== undefined ? [{ name: 'TAGS', value: opts.tags }] : []),
              { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              ...(opts.tlsEnv ?? adaptorTLSEnv(undefined)),
            ],
            securityContext: { privileged: true, readOnlyRootFilesystem: true },
            resources: { requests: { cpu: '10m', memory: '64Mi' } },
            volumeMounts: [
              { name: 'pods-dir', mountPath: '/run/peerpod' },
              { name: 'netns', mountPath: '/run/netns', mountPropagation: 'HostToContainer' },
              ...creds.volumeMounts,
            ],
          },
        ],
        volumes: [
          { name: 'pods-dir', hostPath: { path: '/run/peerpod', type: 'DirectoryOrCreate' } },
          { name: 'netns', hostPath: { path: '/run/netns', type: 'DirectoryOrCreate' } },
          ...creds.volumes,
        ],
      },
    },
  };
  return {
    metadata: {
      name: CAA_DAEMONSET,
      namespace: opts.namespace,
      labels: { ...labels, ...ownedLabels('cloud-api-adaptor') },
      annotations: { [SPEC_HASH_ANNOTATION]: digest(spec) },
      ownerReferences: [opts.owner],
    },
    spec,
  };
}

/** How many of the DaemonSet's pods run an older pod template, once its controller has seen the latest spec. */
export function outdatedAdaptorPods(ds: DaemonSet): { outdated: number; total: number } | undefined {
  const s = ds.status as
    | { observedGeneration?: number; desiredNumberScheduled?: number; currentNumberScheduled?: number; updatedNumberScheduled?: number }
    | undefined;
  const generation = ds.metadata.generation;
  if (s?.observedGeneration === undefined || generation === undefined || s.observedGeneration < generation) return undefined;
  const total = s.currentNumberScheduled ?? s.desiredNumberScheduled ?? 0;
  return { outdated: Math.max(0, total - (s.updatedNumberScheduled ?? 0)), total };
}

/**
 * PeerPodsAdaptorOutdated for the DaemonSet's status: the condition while some pods run an older pod
 * template, null when none does (the condition goes), undefined when its status does not tell yet (the
 * condition stays as it is).
 */
export function adaptorOutdatedCondition(ds: DaemonSet | undefined, namespace: string): ConditionInput | null | undefined {
  if (!ds) return null;
  const n = outdatedAdaptorPods(ds);
  // The strategy the DaemonSet has (the gate's, once osc has applied it).
  const strategy: CaaUpdateStrategy =
    (ds.spec?.updateStrategy as { type?: string } | undefined)?.type === 'OnDelete' ? 'OnDelete' : 'RollingUpdate';
  if (!n) return undefined;
  // A rolling update needs nobody: the DaemonSet's own status shows it, and the KataConfig's status is not
  // rewritten for each pod it replaces (an operator upgrade that brings a new adaptor image changes no status).
  if (n.outdated === 0 || strategy === 'RollingUpdate') return null;
  return {
    type: ADAPTOR_OUTDATED,
    status: 'True',
    reason: ADAPTOR_OUTDATED_REASON.OnDelete,
    message: adaptorOutdatedMessage(n.outdated, n.total, namespace),
  };
}
