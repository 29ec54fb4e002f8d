/**
 * The leader election lease's timings, apart from the elector (leaderelection.ts) so that the CLI's flags
 * can show their defaults without loading it.
 */

export interface LeaseTimings {
  /** How long a lease is valid without renewal; non-leaders wait this long before taking over. */
  leaseDurationMs: number;
  /**
   * A leader that could not renew for this long gives up leadership. Shorter than the lease duration, so
   * that it has stopped before a standby may judge the lease expired.
   */
  renewDeadlineMs: number;
  /** Between attempts to acquire or renew. */
  retryPeriodMs: number;
}

/**
 * The timings of OpenShift's conventions for operators ("High availability"), as its own operators use them:
 * a leader rides out 78 s of API server downtime (an API server rollout, a saturated control plane) instead
 * of stopping after 10 s, a clock skew of 30 s is tolerated, and it renews every 26 s rather than every 2 s
 * (two writes a minute while idle instead of thirty). A standby takes over at once from a leader that
 * releases its lease on the way out, and within 163 s (lease duration plus a retry) of one that died.
 */
export const defaultLeaderElection: LeaseTimings = { leaseDurationMs: 137_000, renewDeadlineMs: 107_000, retryPeriodMs: 26_000 };

/**
 * client-go's and controller-runtime's defaults: a dead leader's lease is taken within 17 s. For a process
 * that restarts often and alone (the dev environment's operator) and for tests that kill leaders.
 */
export const quickLeaderElection: LeaseTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/** Why a set of timings cannot work, naming the flags `osc run` takes them by; undefined when they can. */
export function leaseTimingsProblem(t: LeaseTimings): string | undefined {
  if (t.retryPeriodMs <= 0) return '--leader-elect-retry-period must be longer than 0 (e.g. 26s)';
  if (t.renewDeadlineMs >= t.leaseDurationMs)
    return `--leader-elect-renew-deadline (${t.renewDeadlineMs / 1000}s) must be shorter than --leader-elect-lease-duration (${t.leaseDurationMs / 1000}s): a leader must have stopped before a standby may judge its lease expired`;
  if (t.retryPeriodMs >= t.renewDeadlineMs)
    return `--leader-elect-retry-period (${t.retryPeriodMs / 1000}s) must be shorter than --leader-elect-renew-deadline (${t.renewDeadlineMs / 1000}s): a leader must get more than one try at renewing before it gives up`;
  return undefined;
}
