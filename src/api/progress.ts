/**
 * How far a KataConfig's rollout has come, read from its status: the uninstall count and the states that
 * will not move without the administrator. Pure (no imports), so that `osc status`, `osc start`'s
 * terminal and the web console's front end compute the same thing the same way.
 */

/** The kataNodes lists that name nodes still to uninstall. */
export const LEFT_TO_UNINSTALL_LISTS = ['uninstalling', 'waitingToUninstall', 'failedToUninstall'] as const;

/** How many nodes a kataNodes status still names for uninstall. */
export function leftToUninstall(kataNodes: Partial<Record<string, unknown>> | undefined): number {
  let left = 0;
  for (const list of LEFT_TO_UNINSTALL_LISTS) {
    const names = kataNodes?.[list];
    if (Array.isArray(names)) left += names.length;
  }
  return left;
}

export interface UninstallProgress {
  done: number;
  total: number;
  left: number;
}

/**
 * The uninstall count. While uninstalling, status.kataNodes names only the nodes still to go (nodeCount
 * is 0), so the total is the most nodes a watcher has seen left at once: `seenTotal` is what it
 * remembered before this status (0 the first time).
 */
export function uninstallProgress(left: number, seenTotal: number): UninstallProgress {
  const total = Math.max(seenTotal, left);
  return { done: total - left, total, left };
}

/** `3/12 nodes uninstalled`, the words both the CLI and the console print. */
export const uninstalledText = (p: UninstallProgress): string => `${p.done}/${p.total} nodes uninstalled`;

/** What a rollout state needs from a KataConfig to tell a dead end from progress. */
export interface RolloutInput {
  inProgress?: string;
  reason: string;
  deletionRequested: boolean;
  /** status.kataNodes.nodeCount: the nodes selected for kata. */
  nodeCount: number;
  checkNodeEligibility?: boolean;
  enablePeerPods?: boolean;
  hasPoolSelector: boolean;
}

export interface DeadEnd {
  /** A short title for the warning. */
  title: string;
  /** What the administrator can do about it. */
  todo: string;
}

const NFD_LABEL = 'feature.node.kubernetes.io/runtime.kata=true';

/**
 * A rollout that will not progress without the administrator: in progress, no node selected, and a spec
 * that narrows the selection (checkNodeEligibility without peer pods, or a kataConfigPoolSelector). The
 * operator's message says what it found; this says what to do.
 */
export function deadEndOf(r: RolloutInput): DeadEnd | undefined {
  if (r.inProgress !== 'True' || r.deletionRequested || r.nodeCount > 0) return undefined;
  if (r.reason !== 'Installing' && r.reason !== 'Updating') return undefined;
  if (r.checkNodeEligibility && !r.enablePeerPods) {
    return {
      title: 'No eligible node: nothing will be installed',
      todo: `Label the nodes that should run kata with ${NFD_LABEL} (Node Feature Discovery does so when it runs and finds the hardware support), or set checkNodeEligibility to false.`,
    };
  }
  if (r.hasPoolSelector) {
    return {
      title: 'The selector matches no node: nothing will be installed',
      todo: 'Label the worker nodes that should run kata so that kataConfigPoolSelector matches them, or change the selector.',
    };
  }
  return undefined;
}
