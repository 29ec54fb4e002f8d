import { objectName } from '../../api/meta.ts';
import type { Node, Pod } from '../../kube/resources.ts';
import { CONFIG_ANNOTATION, INSTALL_LABEL, INSTALLER_NAME, KATA_RUNTIME_LABEL, ROLLOUT_ANNOTATION } from './katadeploy.ts';

/**
 * What osc reads back from kata-deploy on one node (docs/kubernetes.md, "What osc reads"): the
 * installer pods osc's DaemonSet runs there, with the configuration each installs, whether it is Ready
 * (kata-deploy's /readyz passes only once its install finished) and why it failed; and the node's labels.
 * Pure.
 */

export interface InstallerPodView {
  name: string;
  /** The configuration id the pod installs (from its template). */
  config?: string;
  terminating: boolean;
  ready: boolean;
  /** When the pod was made (metadata.creationTimestamp). */
  created?: string;
  /** Since when the pod is Ready (its condition's lastTransitionTime), while it is. */
  readySince?: string;
  /** Why the installer failed, as kata-deploy said it; absent while it has not failed. */
  failure?: string;
}

export interface NodeObservation {
  name: string;
  /** osc's assignment: the node's configuration annotation, while it carries INSTALL_LABEL; absent when kata should not be there. */
  installLabel?: string;
  /** katacontainers.io/kata-runtime: 'false' once claimed, 'true' once installed. */
  kataRuntime?: string;
  pods: InstallerPodView[];
  /** What the rollout wrote on the node about it (ROLLOUT_ANNOTATION); absent when none, or unreadable. */
  memory?: RolloutMemory;
}

/** The rollout's memory of a node, kept on the node itself (ROLLOUT_ANNOTATION). */
export interface RolloutMemory {
  /** When osc last gave the node a configuration or took kata off it: an installer's deadline runs from it. */
  since: string;
  /** The configuration the node ran then. */
  active?: string;
  /** The configuration the node ran without error for the soak period: what a failure rolls back to. */
  lastKnownGood?: string;
}

export function readRolloutMemory(raw: string | undefined): RolloutMemory | undefined {
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<RolloutMemory>;
    if (typeof v?.since !== 'string') return undefined;
    const id = (x: unknown) => (typeof x === 'string' && x ? x : undefined);
    const active = id(v.active);
    const lastKnownGood = id(v.lastKnownGood);
    return { since: v.since, ...(active ? { active } : {}), ...(lastKnownGood ? { lastKnownGood } : {}) };
  } catch {
    return undefined;
  }
}

/** The pods the installer DaemonSet owns (pods of anything else are ignored). */
export const isInstallerPod = (p: Pod): boolean =>
  p.metadata.labels?.name === INSTALLER_NAME &&
  !!p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet' && o.name === INSTALLER_NAME);

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  terminated?: { exitCode?: number; reason?: string; message?: string };
}
interface ContainerStatus {
  ready?: boolean;
  restartCount?: number;
  state?: ContainerState;
  lastState?: ContainerState;
}

/** Waiting reasons that mean the installer cannot run or keeps failing (the kubelet will not get further alone). */
const STUCK = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/**
 * kata-deploy prints `Error: <message>` (then `Caused by:` lines) and exits 1; with
 * FallbackToLogsOnError the log's tail is the termination message. The `Error:` line is the reason.
 */
export function installerMessage(text: string | undefined): string | undefined {
  const lines = (text ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (!lines.length) return undefined;
  const error = lines.find((l) => l.startsWith('Error: '));
  return error ? error.slice('Error: '.length) : lines[lines.length - 1];
}

function terminatedFailure(t: ContainerState['terminated']): string | undefined {
  if (!t || (t.exitCode ?? 0) === 0) return undefined;
  return installerMessage(t.message) ?? `kata-deploy exited with status ${t.exitCode}${t.reason ? ` (${t.reason})` : ''}`;
}

/** Why an installer pod failed, or undefined while it has not. */
export function podFailure(p: Pod): string | undefined {
  const status = p.status as { phase?: string; reason?: string; message?: string; containerStatuses?: ContainerStatus[] } | undefined;
  for (const cs of status?.containerStatuses ?? []) {
    if (cs.ready) continue;
    const now = terminatedFailure(cs.state?.terminated);
    if (now) return now;
    // Waiting to be restarted after a failed attempt is a failure; running again is kata-deploy retrying.
    const w = cs.state?.waiting;
    if (w?.reason && STUCK.has(w.reason))
      return terminatedFailure(cs.lastState?.terminated) ?? `${w.reason}${w.message ? `: ${w.message}` : ''}`;
  }
  if (status?.phase === 'Failed') return installerMessage(status.message) ?? status.reason ?? 'the installer pod failed';
  return undefined;
}

export function podView(p: Pod): InstallerPodView {
  const readyCondition = p.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
  const ready = !!readyCondition;
  const readySince = (readyCondition as { lastTransitionTime?: string } | undefined)?.lastTransitionTime;
  const failure = ready ? undefined : podFailure(p);
  return {
    name: objectName(p),
    config: p.metadata.annotations?.[CONFIG_ANNOTATION],
    terminating: !!p.metadata.deletionTimestamp,
    ready,
    ...(p.metadata.creationTimestamp ? { created: p.metadata.creationTimestamp } : {}),
    ...(readySince ? { readySince } : {}),
    ...(failure ? { failure } : {}),
  };
}

/** Each node's observation, from the nodes and the installer pods (grouped by spec.nodeName). */
export function observeNodes(nodes: readonly Node[], pods: readonly Pod[]): NodeObservation[] {
  const byNode = new Map<string, InstallerPodView[]>();
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (!node || !isInstallerPod(p)) continue;
    let list = byNode.get(node);
    if (!list) byNode.set(node, (list = []));
    list.push(podView(p));
  }
  return nodes
    .filter((n) => !n.metadata.deletionTimestamp)
    .map((n) => {
      const name = objectName(n);
      const labels = n.metadata.labels ?? {};
      const memory = readRolloutMemory(n.metadata.annotations?.[ROLLOUT_ANNOTATION]);
      return {
        name,
        ...(memory ? { memory } : {}),
        ...(labels[INSTALL_LABEL] === 'true' ? { installLabel: n.metadata.annotations?.[CONFIG_ANNOTATION] ?? '' } : {}),
        ...(labels[KATA_RUNTIME_LABEL] !== undefined ? { kataRuntime: labels[KATA_RUNTIME_LABEL] } : {}),
        pods: byNode.get(name) ?? [],
      };
    });
}
