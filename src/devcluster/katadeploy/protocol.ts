import type { Container, Pod } from '../../kube/resources.ts';

/**
 * kata-deploy's protocol as the API server sees it (docs/kubernetes.md: Kata Containers 4.1.0). These are
 * facts of the real installer, not choices of the simulator: the labels it writes, how its pod is told
 * which node and instance it serves, and how its command line names the action.
 */

/** The label kata-deploy puts on a node: `false` while installing (a claim), `true` once Kata is served. */
export const KATA_RUNTIME_LABEL = 'katacontainers.io/kata-runtime';
/** The per-install marker: `kata-deploy.katacontainers.io/<instance>`, same values as KATA_RUNTIME_LABEL. */
export const INSTANCE_LABEL_PREFIX = 'kata-deploy.katacontainers.io/';
/** The instance of an install without MULTI_INSTALL_SUFFIX. */
export const DEFAULT_INSTANCE = 'default';
/** The value that claims a node whose install has not finished. */
export const PENDING = 'false';
/** The binary, and the image's entrypoint. */
export const KATA_DEPLOY_BINARY = '/usr/bin/kata-deploy';
/** The DaemonSet whose presence makes cleanup a no-op (a rolling restart), when DAEMONSET_NAME is unset. */
export const DEFAULT_DAEMONSET_NAME = 'kata-deploy';

/** The shims installed when SHIMS_<ARCH> is unset, on x86_64 (every other architecture here: `qemu`). */
export const DEFAULT_SHIMS_X86_64 = [
  'clh',
  'clh-runtime-rs',
  'dragonball',
  'fc',
  'qemu',
  'qemu-coco-dev',
  'qemu-coco-dev-runtime-rs',
  'qemu-runtime-rs',
  'qemu-nvidia-cpu',
  'qemu-nvidia-cpu-runtime-rs',
  'qemu-nvidia-gpu',
  'qemu-nvidia-gpu-runtime-rs',
  'qemu-nvidia-gpu-snp',
  'qemu-nvidia-gpu-snp-runtime-rs',
  'qemu-nvidia-gpu-tdx',
  'qemu-nvidia-gpu-tdx-runtime-rs',
  'qemu-snp',
  'qemu-snp-runtime-rs',
  'qemu-tdx',
  'qemu-tdx-runtime-rs',
] as const;

/** The suffix of the per-architecture variables (SHIMS_X86_64, ...) for a node's `kubernetes.io/arch`. */
const ARCH_SUFFIX: Record<string, string> = { amd64: 'X86_64', arm64: 'AARCH64', s390x: 'S390X', ppc64le: 'PPC64LE' };

/** The image repositories the dev cluster's nodes recognise as kata-deploy (any tag or digest). */
export const DEFAULT_INSTALLER_REPOSITORIES = ['quay.io/kata-containers/kata-deploy'] as const;

/** An image reference without its `:tag` and `@digest` (a registry's `host:port/` stays). */
export function imageRepository(image: string): string {
  const noDigest = image.split('@')[0] ?? image;
  const lastSlash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > lastSlash ? noDigest.slice(0, colon) : noDigest;
}

/**
 * The same recognition as a jq expression over a Pod, for kwok's stage selectors (they can only compare
 * values): `"true"` when a container's image is one of `repositories`.
 */
export function installerPodQuery(repositories: readonly string[]): string {
  const repos = JSON.stringify([...repositories]);
  return `[.spec.containers[]?.image // "" | sub("@.*$"; "") | sub(":[^:/]*$"; "")] | any(. as $r | ${repos} | index([$r]) != null)`;
}

/** The first container running an installer image, if any. */
export function installerContainer(pod: Pod, repositories: readonly string[]): Container | undefined {
  return pod.spec?.containers?.find((c) => typeof c.image === 'string' && repositories.includes(imageRepository(c.image)));
}

export type Action = 'install' | 'cleanup' | 'reset' | 'staged' | 'missing' | 'unknown';

/**
 * The action on the container's command line: the image's entrypoint is the binary, `command` replaces it
 * and `args` follow; the action is the first word after the binary that is not the `--log-level` option.
 */
export function actionOf(c: Container): { action: Action; word?: string } {
  const command = Array.isArray(c.command) ? (c.command as string[]) : [KATA_DEPLOY_BINARY];
  const args = Array.isArray(c.args) ? (c.args as string[]) : [];
  const words = [...command.slice(1), ...args];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === '--log-level') {
      i++;
      continue;
    }
    if (w.startsWith('--log-level=')) continue;
    if (w === 'install' || w === 'cleanup' || w === 'reset') return { action: w, word: w };
    if (w.startsWith('install-stage-') || w.startsWith('cleanup-stage-')) return { action: 'staged', word: w };
    return { action: 'unknown', word: w };
  }
  return { action: 'missing' };
}

type EnvVar = { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath?: string } } };

/** An environment variable's value as the container sees it (literal values and the pod's own fields). */
export function envOf(pod: Pod, c: Container, name: string): string | undefined {
  const v = (c.env as EnvVar[] | undefined)?.find((e) => e.name === name);
  if (!v) return undefined;
  if (v.value !== undefined) return v.value;
  const field = v.valueFrom?.fieldRef?.fieldPath;
  if (field === 'spec.nodeName') return pod.spec?.nodeName;
  if (field === 'metadata.name') return pod.metadata.name;
  if (field === 'metadata.namespace') return pod.metadata.namespace;
  return undefined;
}

/** What an installer container is configured to do (the env vars kata-deploy reads that the API server sees). */
export interface InstallerConfig {
  /** NODE_NAME: the node it labels (required, not empty). */
  nodeName?: string;
  /** MULTI_INSTALL_SUFFIX, when set. */
  suffix?: string;
  /** The per-install marker label. */
  instanceLabel: string;
  /** DAEMONSET_NAME, default `kata-deploy`. */
  daemonSetName: string;
}

export function installerConfig(pod: Pod, c: Container): InstallerConfig {
  const suffix = envOf(pod, c, 'MULTI_INSTALL_SUFFIX')?.trim();
  const ds = envOf(pod, c, 'DAEMONSET_NAME')?.trim();
  const node = envOf(pod, c, 'NODE_NAME');
  return {
    nodeName: node?.trim() ? node : undefined,
    ...(suffix ? { suffix } : {}),
    instanceLabel: `${INSTANCE_LABEL_PREFIX}${suffix || DEFAULT_INSTANCE}`,
    daemonSetName: ds || DEFAULT_DAEMONSET_NAME,
  };
}

export type LabelPatch = Record<string, string | null>;

/** The claim at the start of the artifacts stage: both labels `false`, each only where absent. */
export function claimLabels(labels: Readonly<Record<string, string>>, instanceLabel: string): LabelPatch {
  const patch: LabelPatch = {};
  for (const key of [KATA_RUNTIME_LABEL, instanceLabel]) if (!(key in labels)) patch[key] = PENDING;
  return patch;
}

/** The label stage: both labels `true`. */
export function installedLabels(labels: Readonly<Record<string, string>>, instanceLabel: string): LabelPatch {
  const patch: LabelPatch = {};
  for (const key of [KATA_RUNTIME_LABEL, instanceLabel]) if (labels[key] !== 'true') patch[key] = 'true';
  return patch;
}

/**
 * Cleanup's release of the node: our marker goes; the shared label stays while another install's marker is
 * not `false`, becomes `false` when the other markers are all `false`, and goes with the last marker
 * (unless a legacy kata-deploy DaemonSet, which leaves no marker, still selects the node).
 */
export function releaseLabels(labels: Readonly<Record<string, string>>, instanceLabel: string, legacyOtherSelectsNode = false): LabelPatch {
  const patch: LabelPatch = {};
  if (instanceLabel in labels) patch[instanceLabel] = null;
  const others = Object.entries(labels).filter(([k]) => k !== instanceLabel && k.startsWith(INSTANCE_LABEL_PREFIX));
  if (others.some(([, v]) => v !== PENDING)) return patch;
  if (others.length > 0) {
    if (labels[KATA_RUNTIME_LABEL] !== PENDING) patch[KATA_RUNTIME_LABEL] = PENDING;
    return patch;
  }
  if (!legacyOtherSelectsNode && KATA_RUNTIME_LABEL in labels) patch[KATA_RUNTIME_LABEL] = null;
  return patch;
}

/**
 * The CRI runtime handlers an install configures on a node of architecture `arch`: `kata-<shim>` per shim
 * (`kata-<shim>-<suffix>` with MULTI_INSTALL_SUFFIX), and with DEBUG the `-debug` variant of each (and
 * `-devkit` with DEVKIT too). The kubelet lists them in the Node's `status.runtimeHandlers` once the
 * runtime has restarted with them.
 */
export function runtimeHandlersOf(pod: Pod, c: Container, arch: string): string[] {
  const suffix = ARCH_SUFFIX[arch];
  const listed = suffix ? envOf(pod, c, `SHIMS_${suffix}`)?.trim() : undefined;
  const shims = listed ? listed.split(/\s+/) : arch === 'amd64' ? [...DEFAULT_SHIMS_X86_64] : ['qemu'];
  const s = installerConfig(pod, c).suffix;
  const flag = (name: string) => ['true', '1'].includes((envOf(pod, c, name) ?? '').toLowerCase());
  const variants = flag('DEBUG') ? ['debug', ...(flag('DEVKIT') ? ['devkit'] : [])] : [];
  return shims.flatMap((shim) => {
    const base = s ? `kata-${shim}-${s}` : `kata-${shim}`;
    return [base, ...variants.map((v) => `${base}-${v}`)];
  });
}

export interface RuntimeHandler {
  name: string;
  features?: { recursiveReadOnlyMounts?: boolean; userNamespaces?: boolean };
}

/** Features containerd reports for a VM-based handler: neither is offered by the kata shims. */
const KATA_FEATURES = { recursiveReadOnlyMounts: false, userNamespaces: false };

/** The node's handler list with `add` put in (in order, once) and `remove` taken out. */
export function withHandlers(current: readonly RuntimeHandler[], add: readonly string[], remove: readonly string[]): RuntimeHandler[] {
  const kept = current.filter((h) => !remove.includes(h.name));
  const names = new Set(kept.map((h) => h.name));
  return [...kept, ...add.filter((n) => !names.has(n)).map((name) => ({ name, features: KATA_FEATURES }))];
}
