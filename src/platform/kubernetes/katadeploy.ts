import { createHash } from 'node:crypto';
import type { LogLevel } from '../../api/names.ts';
import { KATA_DEPLOY_SCC, REQUIRED_SCC_ANNOTATION } from '../../api/scc.ts';
import type { DaemonSet } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { CONTAINERD_CONFIG_DIR, type KubernetesFlavour } from './flavour.ts';

/**
 * What osc knows about kata-deploy, the installer that puts Kata Containers on plain Kubernetes nodes,
 * and the objects osc runs it through (docs/kubernetes.md, "kata-deploy"). Pure: names, the
 * configuration id, and the desired installer objects.
 */

/** The pinned Kata Containers release whose kata-deploy image osc runs by default. */
export const KATA_RELEASE = '4.1.0';
export const DEFAULT_KATA_DEPLOY_IMAGE = `quay.io/kata-containers/kata-deploy:${KATA_RELEASE}`;
/** The image, as OLM passes related images to an operator (RELATED_IMAGE_*). */
export const KATA_DEPLOY_IMAGE_ENV = 'RELATED_IMAGE_KATA_DEPLOY';

/** kata-deploy's node label: `false` once it has claimed the node, `true` once kata runs there. */
export const KATA_RUNTIME_LABEL = 'katacontainers.io/kata-runtime';
/** kata-deploy's per-install marker (an install without MULTI_INSTALL_SUFFIX is `default`). */
export const KATA_DEPLOY_INSTANCE_LABEL = 'kata-deploy.katacontainers.io/default';

/**
 * osc's own node label (`true`): the installer DaemonSet's node selector. A plain equality selector, as
 * kata-deploy reads it to decide whether its DaemonSet still selects the node on termination.
 */
export const INSTALL_LABEL = 'kataconfiguration.openshift.io/kata-deploy';
/**
 * On each installer pod (from its template): the configuration id it installs; on each labelled node,
 * written with the label: the configuration osc assigned to it.
 */
export const CONFIG_ANNOTATION = 'kataconfiguration.openshift.io/kata-deploy-config';
/**
 * On each node osc gave a configuration or took kata off, written with the label and CONFIG_ANNOTATION:
 * the rollout's memory of the node (JSON of RolloutMemory): since when it is in flight, what it ran then
 * and its last known good configuration. The rollout reads it back from the node, and nothing else.
 */
export const ROLLOUT_ANNOTATION = 'kataconfiguration.openshift.io/kata-deploy-rollout';
/**
 * On the DaemonSet: its configuration's settings, then those of the few before it (JSON list), so that a
 * node can be rolled back to a configuration the template no longer carries.
 */
export const CONFIG_SPEC_ANNOTATION = 'kataconfiguration.openshift.io/kata-deploy-settings';

/** The installer objects, all named alike; DAEMONSET_NAME tells kata-deploy which DaemonSet is its own. */
export const INSTALLER_NAME = 'osc-kata-deploy';
export const INSTALLER_POD_LABELS = {
  name: INSTALLER_NAME,
  'app.kubernetes.io/name': 'kata-deploy',
  'app.kubernetes.io/managed-by': 'osc-operator',
};
const HEALTH_PORT = 8090;

/** The shims osc offers and kata-deploy's published pod overhead for each (its chart's RuntimeClass defaults). */
export const SHIM_OVERHEAD: Record<string, { memory: string; cpu: string }> = {
  qemu: { memory: '320Mi', cpu: '250m' },
  'qemu-runtime-rs': { memory: '320Mi', cpu: '250m' },
  clh: { memory: '130Mi', cpu: '250m' },
  'clh-runtime-rs': { memory: '130Mi', cpu: '250m' },
  dragonball: { memory: '130Mi', cpu: '250m' },
  fc: { memory: '130Mi', cpu: '250m' },
};
export const DEFAULT_SHIM = 'qemu';

/** The containerd/CRI-O runtime handler kata-deploy registers for a shim (its RuntimeClasses use it too). */
export const handlerFor = (shim: string): string => `kata-${shim}`;

/** The architectures kata-deploy reads per-arch variables for, as `uname -m` names them. */
const ARCHES: Record<string, string[]> = {
  X86_64: ['qemu', 'qemu-runtime-rs', 'clh', 'clh-runtime-rs', 'dragonball', 'fc'],
  AARCH64: ['qemu', 'qemu-runtime-rs'],
  S390X: ['qemu', 'qemu-runtime-rs'],
  PPC64LE: ['qemu', 'qemu-runtime-rs'],
};

/** One installer configuration: everything that changes what kata-deploy puts on a node. */
export interface InstallerConfig {
  image: string;
  shim: string;
  /** kata-deploy's DEBUG: host-side debug logging and a `kata-<shim>-debug` handler. */
  debug: boolean;
  /** kata-deploy's K8S_DISTRIBUTION, where containerd is not plain Kubernetes's (absent: `k8s`). */
  flavour?: KubernetesFlavour;
  /** Shims installed beside `shim` (the confidential RuntimeClasses' TEE shims), sorted; absent: none. */
  extraShims?: string[];
}

/** The architectures kata-deploy ships the TEE and GPU shims for. */
const EXTRA_SHIM_ARCHES: Record<string, string[]> = {
  'qemu-tdx': ['X86_64'],
  'qemu-snp': ['X86_64'],
  'qemu-se': ['S390X'],
  'qemu-nvidia-gpu': ['X86_64'],
  'qemu-nvidia-gpu-tdx': ['X86_64'],
  'qemu-nvidia-gpu-snp': ['X86_64'],
};

/** logLevel maps to kata-deploy's one switch: debug and trace turn DEBUG on, anything else leaves it off. */
export const debugFor = (logLevel: LogLevel | undefined): boolean => logLevel === 'debug' || logLevel === 'trace';

export function installerConfig(
  image: string,
  shim: string,
  logLevel: LogLevel | undefined,
  flavour: KubernetesFlavour = 'k8s',
  extraShims: readonly string[] = [],
): InstallerConfig {
  const extra = [...new Set(extraShims)].filter((s) => s !== shim).sort();
  return {
    image,
    shim,
    debug: debugFor(logLevel),
    ...(flavour !== 'k8s' ? { flavour } : {}),
    ...(extra.length ? { extraShims: extra } : {}),
  };
}

/**
 * A stable id of a configuration (a label value): the same settings always give the same id. The flavour
 * counts only where it is not plain `k8s`, so that the ids of configurations made before it was known stay.
 */
export function configId(c: InstallerConfig): string {
  const flavour = c.flavour && c.flavour !== 'k8s' ? { flavour: c.flavour } : {};
  const extra = c.extraShims?.length ? { extraShims: c.extraShims } : {};
  const canonical = JSON.stringify({ debug: c.debug, image: c.image, shim: c.shim, ...flavour, ...extra });
  return createHash('sha256').update(canonical).digest('hex').slice(0, 12);
}

/** The environment kata-deploy reads (its chart's common environment, for one shim). */
export function installerEnv(c: InstallerConfig): { name: string; value?: string; valueFrom?: unknown }[] {
  const env: { name: string; value?: string; valueFrom?: unknown }[] = [
    { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    { name: 'DAEMONSET_NAME', value: INSTALLER_NAME },
    { name: 'DEBUG', value: c.debug ? 'true' : 'false' },
  ];
  for (const [arch, shims] of Object.entries(ARCHES)) {
    if (!shims.includes(c.shim)) continue;
    const extra = (c.extraShims ?? []).filter((s) => EXTRA_SHIM_ARCHES[s]?.includes(arch));
    env.push({ name: `SHIMS_${arch}`, value: [c.shim, ...extra].join(' ') }, { name: `DEFAULT_SHIM_${arch}`, value: c.shim });
  }
  env.push(
    { name: 'INSTALLATION_PREFIX', value: '' },
    { name: 'MULTI_INSTALL_SUFFIX', value: '' },
    { name: 'K8S_DISTRIBUTION', value: c.flavour ?? 'k8s' },
    { name: 'HEALTH_PORT', value: String(HEALTH_PORT) },
  );
  return env;
}

const hostPath = (name: string, path: string, mountPath: string, opts: { type?: string; readOnly?: boolean } = {}) => ({
  volume: { name, hostPath: { path, ...(opts.type ? { type: opts.type } : {}) } },
  mount: { name, mountPath, ...(opts.readOnly ? { readOnly: true } : {}) },
});

/**
 * The host paths kata-deploy's chart mounts (install directory, runtime configuration, systemd, tools);
 * containerd's configuration directory is where the flavour keeps it.
 */
const hostMounts = (flavour: KubernetesFlavour = 'k8s') => [
  hostPath('crio-conf', '/etc/crio/', '/etc/crio/'),
  hostPath('containerd-conf', CONTAINERD_CONFIG_DIR[flavour], '/etc/containerd/'),
  hostPath('kata-install', '/opt/kata', '/opt/kata', { type: 'DirectoryOrCreate' }),
  hostPath('systemd-system', '/etc/systemd/system', '/etc/systemd/system', { type: 'DirectoryOrCreate' }),
  hostPath('systemd-private', '/run/systemd/private', '/run/systemd/private', { type: 'Socket' }),
  hostPath('boot', '/boot', '/boot', { readOnly: true }),
  hostPath('host-machine-id', '/etc/machine-id', '/host-machine-id', { type: 'File', readOnly: true }),
  hostPath('host-run-lock', '/run/lock', '/host-run-lock', { type: 'DirectoryOrCreate' }),
  hostPath('host-usr-bin', '/usr/bin', '/host-usr/bin', { readOnly: true }),
  hostPath('host-usr-sbin', '/usr/sbin', '/host-usr/sbin', { readOnly: true }),
  hostPath('host-usr-local-bin', '/usr/local/bin', '/host-usr-local/bin', { readOnly: true }),
  hostPath('host-usr-local-sbin', '/usr/local/sbin', '/host-usr-local/sbin', { readOnly: true }),
  hostPath('host-bin', '/bin', '/host-bin', { readOnly: true }),
  hostPath('host-sbin', '/sbin', '/host-sbin', { readOnly: true }),
];

/**
 * The installer DaemonSet. It selects the nodes carrying osc's INSTALL_LABEL, and never
 * replaces a pod by itself (OnDelete): osc alone decides when a node's pod is replaced, one node at a
 * time. Its template is the configuration osc is putting on nodes now; a pod keeps the configuration of
 * the template it was created from (CONFIG_ANNOTATION).
 */
export function desiredInstallerDaemonSet(
  namespace: string,
  c: InstallerConfig,
  owner?: OwnerReference,
  earlier: readonly InstallerConfig[] = [],
): DaemonSet {
  const id = configId(c);
  const settings = [c, ...earlier.filter((e) => configId(e) !== id)].slice(0, SETTINGS_KEPT);
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {
      name: INSTALLER_NAME,
      namespace,
      labels: { ...INSTALLER_POD_LABELS },
      annotations: { [CONFIG_ANNOTATION]: id, [CONFIG_SPEC_ANNOTATION]: JSON.stringify(settings) },
      ...(owner ? { ownerReferences: [owner] } : {}),
    },
    spec: {
      selector: { matchLabels: { name: INSTALLER_NAME } },
      updateStrategy: { type: 'OnDelete' },
      template: {
        metadata: {
          labels: { ...INSTALLER_POD_LABELS },
          // On OpenShift (deploymentMode DaemonSet) its pods are admitted under osc's own SCC alone, never a
          // broader one an administrator adds later; elsewhere the annotation means nothing.
          annotations: { [CONFIG_ANNOTATION]: id, [REQUIRED_SCC_ANNOTATION]: KATA_DEPLOY_SCC },
        },
        spec: {
          serviceAccountName: INSTALLER_NAME,
          nodeSelector: { [INSTALL_LABEL]: 'true' },
          priorityClassName: 'system-node-critical',
          // kata-deploy's cleanup on SIGTERM restarts the container runtime and waits for the node.
          terminationGracePeriodSeconds: 600,
          containers: [
            {
              name: 'kube-kata',
              image: c.image,
              imagePullPolicy: 'IfNotPresent',
              command: ['/usr/bin/kata-deploy', ...(c.debug ? ['--log-level', 'debug'] : []), 'install'],
              env: installerEnv(c),
              securityContext: { privileged: false, readOnlyRootFilesystem: true },
              // kata-deploy writes no termination message: the tail of its log ("Error: ...") becomes one.
              terminationMessagePolicy: 'FallbackToLogsOnError',
              startupProbe: {
                httpGet: { path: '/readyz', port: HEALTH_PORT },
                initialDelaySeconds: 1,
                periodSeconds: 10,
                failureThreshold: 60,
                timeoutSeconds: 3,
              },
              livenessProbe: {
                httpGet: { path: '/healthz', port: HEALTH_PORT },
                periodSeconds: 30,
                failureThreshold: 3,
                timeoutSeconds: 3,
              },
              readinessProbe: {
                httpGet: { path: '/readyz', port: HEALTH_PORT },
                periodSeconds: 10,
                failureThreshold: 3,
                timeoutSeconds: 3,
              },
              resources: { requests: { cpu: '25m', memory: '16Mi' } },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }, ...hostMounts(c.flavour).map((m) => m.mount)],
            },
          ],
          volumes: [{ name: 'tmp', emptyDir: {} }, ...hostMounts(c.flavour).map((m) => m.volume)],
        },
      },
    },
  };
}

const SETTINGS_KEPT = 5;

/** The settings a DaemonSet records, its own first (an unreadable annotation records none). */
export function recordedSettings(ds: DaemonSet | undefined): InstallerConfig[] {
  const raw = ds?.metadata.annotations?.[CONFIG_SPEC_ANNOTATION];
  if (!raw) return [];
  try {
    const v = JSON.parse(raw) as unknown;
    const list = Array.isArray(v) ? v : [v];
    return list.filter(
      (c): c is InstallerConfig =>
        !!c && typeof c === 'object' && typeof c.image === 'string' && typeof c.shim === 'string' && typeof c.debug === 'boolean',
    );
  } catch {
    return [];
  }
}

/** The configuration a DaemonSet's template installs (undefined for one osc did not write). */
export const templateConfigId = (ds: DaemonSet | undefined): string | undefined =>
  ds?.spec.template.metadata?.annotations?.[CONFIG_ANNOTATION];

/**
 * What the installer may do through the API (kata-deploy's own chart grants the same, but for one rule):
 * label its node, and find its DaemonSet (and any other kata-deploy's, cluster-wide) to decide whether to
 * clean up on termination. Its chart also grants `nodes/proxy get`, only to read the kubelet's /configz for
 * an advisory check of runtimeRequestTimeout; kata-deploy logs a warning when that read is refused and goes
 * on. `nodes/proxy` reaches every kubelet endpoint, exec into any container included: not worth a warning.
 * The objects carrying these rules ship with the install (src/install/katadeploy-rbac.ts).
 */
export const INSTALLER_RULES = [
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] },
  { apiGroups: ['apps'], resources: ['daemonsets'], verbs: ['get', 'list', 'watch'] },
];
