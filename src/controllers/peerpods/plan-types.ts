import type { PeerPodConfigStatus } from '../../api/peerpodconfig.ts';
import type { Condition } from '../../kube/types.ts';
import type { Write } from '../../runtime/applier.ts';
import type { ImageJobKind } from './desired.ts';

/** A line for the controller's log, decided with the plan (it says why a write is made or not). */
export interface PlanNote {
  level: 'info' | 'warn';
  msg: string;
  fields?: Record<string, unknown>;
  /** Logged only when this write of the plan is made (not when the cache showed it, or it was awaited). */
  after?: Write;
}

/** An event on the KataConfig, recorded once the writes are made. */
export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

/** The peer pods gauges after a pass (src/controllers/peerpods/metrics.ts). */
export interface PlannedGauges {
  configValid: boolean;
  configProblems: number;
  vmLimit: number;
  nodes: number;
}

/**
 * Everything one pass of the peer pods controller writes, in the order it is written: the finalizer first,
 * then the objects, the PeerPodConfig's status, this controller's conditions on the KataConfig, and last
 * the finalizer's removal.
 */
export interface PeerPodsPlan {
  addFinalizer: boolean;
  writes: Write[];
  peerPodConfigStatus?: PeerPodConfigStatus;
  /** This controller's share of the KataConfig status; undefined leaves it as it is. */
  conditions?: Condition[];
  removeFinalizer: boolean;
  events: PlannedEvent[];
  notes: PlanNote[];
  /** The gauges to set, or 'reset' when peer pods are off; undefined leaves them. */
  gauges?: PlannedGauges | 'reset';
  /** Whether the image job gauges are refreshed from the cache. */
  observeJobs: boolean;
  /** Failed image jobs seen (each counted once by the controller). */
  failedJobs: { kind: ImageJobKind; uid: string }[];
  /**
   * A completed image creation job whose image the cached peer-pods-cm does not show: the job writes it
   * before it completes, but the two reach osc through two watches. The reconciler reads peer-pods-cm from
   * the API server once and plans again with it (`configMapLive`); what that read lacks, the job never wrote.
   */
  readConfigMapLive?: boolean;
  requeueAfterMs?: number;
}

export const emptyPlan = (): PeerPodsPlan => ({
  addFinalizer: false,
  writes: [],
  removeFinalizer: false,
  events: [],
  notes: [],
  observeJobs: false,
  failedJobs: [],
});
