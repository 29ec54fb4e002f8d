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
