import type { Container, Node, Pod } from '../../kube/resources.ts';
import {
  type Action,
  actionOf,
  claimLabels,
  type InstallerConfig,
  installedLabels,
  installerConfig,
  type LabelPatch,
  releaseLabels,
  runtimeHandlersOf,
} from './protocol.ts';

/**
 * The host side of one kata-deploy pod, as a pure next-step function (`installerStep`) over the pod, the
 * node it names and what the simulator remembers of the pod's process; the executor (simulator.ts) writes
 * the node labels and the pod status it answers. What it reproduces is in docs/kubernetes.md (the
 * protocol) and docs/devcluster.md (the simulation).
 */

import { FAIL_NEXT_UPDATE_ANNOTATION } from '../mco/daemon.ts';

/** Dev-cluster failure injection: the same annotation as the simulated Machine Config Daemon reads. */
export { FAIL_NEXT_UPDATE_ANNOTATION };
/** The reason used when the annotation's value is empty. */
export const DEFAULT_INSTALL_FAILURE = 'simulated failure: osc.dev/fail-next-update is set on this node';

export interface InstallerTiming {
  /** From the container's start to the node labelled (artifacts, runtime restart, label stability). */
  installMs: number;
  /** How long cleanup takes (removing the files, restarting the runtime). */
  cleanupMs: number;
  /** How long the kubelet waits before restarting a failed installer container. */
  restartBackoffMs: number;
}

/**
 * What the process in the pod is doing: `installing` (until `since + installMs`), `installed` (the
 * post-install waiter, Ready), `backoff` (exited with an error, waiting for its restart), `failed` (exited
 * with an error, never restarted), `cleaning` (cleanup under way), `done` (exited, nothing more to do).
 */
export type ProcessPhase = 'installing' | 'installed' | 'backoff' | 'failed' | 'cleaning' | 'done';

export interface Progress {
  phase: ProcessPhase;
  since: number;
  restarts: number;
  /** The error the last failed attempt exited with. */
  error?: string;
}

/** What the pod's container reports, written by the executor as the kubelet would. */
export type ContainerReport =
  | { kind: 'running'; ready: boolean; restarts: number; lastError?: string }
  | { kind: 'crashLoop'; restarts: number; error: string }
  | { kind: 'exited'; exitCode: number; error?: string; restarts: number };

export interface InstallerObserved {
  pod: Pod;
  /** The node NODE_NAME names (undefined: not found). */
  node?: Node;
  progress?: Progress;
  /**
   * On cleanup only: whether the DaemonSet named DAEMONSET_NAME (in the pod's namespace, not being deleted)
   * still selects the node, and whether another kata-deploy DaemonSet does.
   */
  daemonSets?: { ownSelectsNode: boolean; legacyOtherSelectsNode: boolean };
  /** The handlers this install's drop-in configured on the node before (a reinstall rewrites that file). */
  configuredHandlers?: readonly string[];
  /**
   * The pod's run ended here before (its container exited, its object was deleted) and the pod is back with
   * the same UID: an etcd restore brought its object back. The kubelet starts such a pod afresh whatever
   * status the restored object shows.
   */
  ended?: boolean;
  now: number;
}

export interface InstallerStep {
  progress?: Progress;
  /** Labels to merge into the node NODE_NAME names (null removes). */
  labels?: LabelPatch;
  report?: ContainerReport;
  /** CRI runtime handlers the node reports after this step's runtime restart (status.runtimeHandlers). */
  handlers?: { add: string[]; remove: string[] };
  /** The step needs observed.daemonSets (a cleanup is due): ask again with them. */
  needsDaemonSets?: boolean;
  requeueAfterMs?: number;
}

const replaceHandlers = (before: readonly string[], after: string[]) => ({ add: after, remove: before.filter((h) => !after.includes(h)) });
const archOf = (node: Node): string => node.metadata.labels?.['kubernetes.io/arch'] ?? 'amd64';
const restartPolicyOf = (pod: Pod): string => String(pod.spec?.restartPolicy ?? 'Always');
const containerReady = (pod: Pod, c: Container): boolean =>
  ((pod.status?.containerStatuses as { name: string; ready?: boolean }[] | undefined) ?? []).some(
    (s) => s.name === c.name && s.ready === true,
  );

/** The user the container runs as, where the pod says (the image's own, root, otherwise). */
const runAsUserOf = (pod: Pod, c: Container): number | undefined => {
  const own = (c.securityContext as { runAsUser?: number } | undefined)?.runAsUser;
  return own ?? (pod.spec?.securityContext as { runAsUser?: number } | undefined)?.runAsUser;
};

/** kata-deploy's error when it may not write the install directory. */
export const PERMISSION_DENIED = 'failed to create directory /opt/kata/bin: Permission denied (os error 13)';

/** What the binary prints before exiting on an error it cannot handle (anyhow's report from main). */
const errorLine = (message: string) => `Error: ${message}`;

function failureOf(action: Action, word: string | undefined, cfg: InstallerConfig): { code: number; error: string } | undefined {
  switch (action) {
    case 'missing':
      return { code: 2, error: 'error: the following required arguments were not provided:\n  <ACTION>\n\nUsage: kata-deploy <ACTION>' };
    case 'unknown':
      return { code: 2, error: `error: invalid value '${word}' for '<ACTION>'` };
    case 'staged':
    case 'reset':
      return { code: 1, error: errorLine(`the dev cluster does not simulate kata-deploy ${word}`) };
    default:
      return cfg.nodeName ? undefined : { code: 1, error: errorLine('NODE_NAME environment variable is required') };
  }
}

/**
 * One step of an installer pod's process. `container` is its kata-deploy container. The pod is running on
 * a node (kwok started it, not Ready) or being deleted.
 */
export function installerStep(obs: InstallerObserved, container: Container, timing: InstallerTiming): InstallerStep {
  const { pod, node, now } = obs;
  const cfg = installerConfig(pod, container);
  const { action, word } = actionOf(container);
  const labels = node?.metadata.labels ?? {};
  const deleting = !!pod.metadata.deletionTimestamp;
  let p = obs.progress;
  // A simulator that restarted finds a Ready installer: its waiter is running. Not so a pod whose run ended
  // here and that an etcd restore brought back: no container runs it, whatever its restored status says.
  if (!p && action === 'install' && containerReady(pod, container) && !obs.ended) p = { phase: 'installed', since: now, restarts: 0 };
  const restarts = p?.restarts ?? 0;

  if (p?.phase === 'done') return { progress: p };

  if (!p) {
    const bad = failureOf(action, word, cfg);
    if (bad)
      return {
        progress: { phase: 'done', since: now, restarts },
        report: { kind: 'exited', exitCode: bad.code, error: bad.error, restarts },
      };
    if (deleting) return { progress: { phase: 'done', since: now, restarts }, report: { kind: 'exited', exitCode: 0, restarts } };
    if (!node) return { requeueAfterMs: 500 };
    if (action === 'cleanup') return { progress: { phase: 'cleaning', since: now, restarts }, requeueAfterMs: timing.cleanupMs };
    // host-check passes (the node reports a supported runtime), then artifacts claims the node. A pod an etcd
    // restore brought back shows its old status: the kubelet reports its new container running, not Ready.
    return {
      progress: { phase: 'installing', since: now, restarts },
      labels: claimLabels(labels, cfg.instanceLabel),
      ...(obs.ended && containerReady(pod, container) ? { report: { kind: 'running' as const, ready: false, restarts } } : {}),
      requeueAfterMs: timing.installMs,
    };
  }

  // SIGTERM: a running install or waiter cleans up; an exited container has no process to signal.
  if (deleting && (p.phase === 'installing' || p.phase === 'installed'))
    return { progress: { phase: 'cleaning', since: now, restarts }, requeueAfterMs: timing.cleanupMs };
  if (deleting && (p.phase === 'backoff' || p.phase === 'failed'))
    return {
      progress: { phase: 'done', since: now, restarts },
      report: { kind: 'exited', exitCode: 1, error: p.error ?? errorLine(DEFAULT_INSTALL_FAILURE), restarts },
    };

  const elapsed = now - p.since;
  switch (p.phase) {
    case 'installing': {
      if (elapsed < timing.installMs) return { progress: p, requeueAfterMs: timing.installMs - elapsed };
      if (!node) return { progress: p, requeueAfterMs: 500 };
      const injected = node.metadata.annotations?.[FAIL_NEXT_UPDATE_ANNOTATION];
      // kata-deploy writes the host's files as the image's user, root: given another user (an SCC that
      // assigns one from the namespace's range, say), its first write into the install directory fails.
      const uid = runAsUserOf(pod, container);
      const denied = uid !== undefined && uid !== 0 ? PERMISSION_DENIED : undefined;
      if (injected !== undefined || denied) {
        const error = errorLine(denied ?? (injected || DEFAULT_INSTALL_FAILURE));
        if (restartPolicyOf(pod) === 'Never')
          return { progress: { phase: 'failed', since: now, restarts, error }, report: { kind: 'exited', exitCode: 1, error, restarts } };
        return {
          progress: { phase: 'backoff', since: now, restarts: restarts + 1, error },
          report: { kind: 'crashLoop', restarts: restarts + 1, error },
          requeueAfterMs: timing.restartBackoffMs,
        };
      }
      return {
        progress: { phase: 'installed', since: now, restarts },
        labels: installedLabels(labels, cfg.instanceLabel),
        handlers: replaceHandlers(obs.configuredHandlers ?? [], runtimeHandlersOf(pod, container, archOf(node))),
        report: { kind: 'running', ready: true, restarts, lastError: p.error },
      };
    }
    case 'backoff':
      if (elapsed < timing.restartBackoffMs) return { progress: p, requeueAfterMs: timing.restartBackoffMs - elapsed };
      return {
        progress: { phase: 'installing', since: now, restarts, error: p.error },
        labels: claimLabels(labels, cfg.instanceLabel),
        report: { kind: 'running', ready: false, restarts, lastError: p.error },
        requeueAfterMs: timing.installMs,
      };
    case 'cleaning': {
      if (elapsed < timing.cleanupMs) return { progress: p, requeueAfterMs: timing.cleanupMs - elapsed };
      const done: InstallerStep = { progress: { phase: 'done', since: now, restarts }, report: { kind: 'exited', exitCode: 0, restarts } };
      // The node is gone: cleanup cannot read it, logs the error and the process still exits 0.
      if (!node) return done;
      if (!obs.daemonSets) return { progress: p, needsDaemonSets: true };
      if (obs.daemonSets.ownSelectsNode) return done;
      return {
        ...done,
        labels: releaseLabels(labels, cfg.instanceLabel, obs.daemonSets.legacyOtherSelectsNode),
        handlers: replaceHandlers(obs.configuredHandlers ?? runtimeHandlersOf(pod, container, archOf(node)), []),
      };
    }
    default:
      return { progress: p };
  }
}

/** Whether a node's labels satisfy a pod template's nodeSelector (how kata-deploy asks if a DaemonSet selects it). */
export function nodeSelectorMatches(selector: Record<string, string> | undefined, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

const FALLBACK_TO_LOGS = 'FallbackToLogsOnError';

/**
 * The pod status a kubelet reports for `report` (a strategic-merge patch body). An exit's message reaches
 * the termination message only with `terminationMessagePolicy: FallbackToLogsOnError`: the image writes no
 * termination-message file, so the kubelet takes the tail of the log (the error line).
 */
export function podStatusFor(pod: Pod, container: Container, report: ContainerReport, nowIso: string): Record<string, unknown> {
  const message = (error?: string) => (error && container.terminationMessagePolicy === FALLBACK_TO_LOGS ? { message: error } : {});
  const startedAt = String(pod.status?.startTime ?? nowIso);
  const terminated = (exitCode: number, error?: string) => ({
    exitCode,
    reason: exitCode === 0 ? 'Completed' : 'Error',
    ...message(error),
    startedAt,
    finishedAt: nowIso,
  });
  const others = ((pod.status?.containerStatuses as { name: string }[] | undefined) ?? []).filter((s) => s.name !== container.name);
  const base = { name: container.name, image: container.image, imageID: '', containerID: `containerd://${container.name}` };
  let status: Record<string, unknown>;
  let ready = false;
  let phase: string | undefined;
  switch (report.kind) {
    case 'running':
      ready = report.ready;
      status = {
        ...base,
        ready,
        started: true,
        restartCount: report.restarts,
        state: { running: { startedAt: nowIso } },
        ...(report.lastError ? { lastState: { terminated: terminated(1, report.lastError) } } : {}),
      };
      break;
    case 'crashLoop':
      status = {
        ...base,
        ready: false,
        started: false,
        restartCount: report.restarts,
        state: {
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off restarting failed container ${container.name} in pod ${pod.metadata.name}`,
          },
        },
        lastState: { terminated: terminated(1, report.error) },
      };
      break;
    case 'exited':
      status = {
        ...base,
        ready: false,
        started: false,
        restartCount: report.restarts,
        state: { terminated: terminated(report.exitCode, report.error) },
      };
      phase = report.exitCode === 0 ? 'Succeeded' : 'Failed';
      break;
  }
  const allReady = ready && others.every((s) => (s as { ready?: boolean }).ready === true);
  const cond = (type: string, ok: boolean) => ({
    type,
    status: ok ? 'True' : 'False',
    lastTransitionTime: nowIso,
    ...(ok ? {} : { reason: phase ? 'PodCompleted' : 'ContainersNotReady' }),
  });
  return {
    ...(phase ? { phase } : {}),
    conditions: [cond('Ready', allReady), cond('ContainersReady', allReady)],
    containerStatuses: [...others, status],
  };
}
