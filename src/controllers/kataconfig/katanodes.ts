import { type KataConfig, kataConfigOwner } from '../../api/kataconfig.ts';
import type { ConfigRef, KataNode, KataNodeStatus } from '../../api/katanode.ts';
import { objectName } from '../../api/meta.ts';
import type { NodeRecord } from '../../platform/platform.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import { lastCall } from '../../runtime/memo.ts';
import type { StatusShare } from '../../runtime/status.ts';

/**
 * KataNode objects from the platform's per-node records (docs/kataconfig.md, "KataNode"): pure. The
 * record gives phase, assigned, active and error; what needs memory of the past comes from the
 * previous status: lastTransitionTime (only a real change moves it, so an idle cluster writes nothing)
 * and lastKnownGood (assigned, once the node has run it without error for the soak period).
 */

/**
 * The KataConfig controller owns the whole KataNode, under its field manager: a KataNode has no status
 * subresource, so its status is applied with the object (its owner reference) in one request.
 */
export const kataNodeStatusShare: StatusShare<KataNodeStatus> = {
  fieldManager: 'osc-kataconfig',
  owned: (s) => ({ ...s }),
  inObject: true,
};

const sameRef = (a: ConfigRef | undefined, b: ConfigRef | undefined): boolean =>
  a === b || (!!a && !!b && a.id === b.id && a.description === b.description);

/**
 * Whether two KataNode statuses are the same, field by field. Called for every node on every pass: a JSON
 * round trip and a deep comparison of each took a fifth of the operator's CPU during a 1,000-node install.
 */
export function sameKataNodeStatus(a: KataNodeStatus | undefined, b: KataNodeStatus | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.phase === b.phase &&
    (a.error ?? '') === (b.error ?? '') &&
    a.lastTransitionTime === b.lastTransitionTime &&
    sameRef(a.assigned, b.assigned) &&
    sameRef(a.active, b.active) &&
    sameRef(a.lastKnownGood, b.lastKnownGood) &&
    Object.keys(a).length === Object.keys(b).length
  );
}

const sameId = (a: ConfigRef | undefined, b: ConfigRef | undefined) => a?.id === b?.id;

export interface KataNodeStatusResult {
  status: KataNodeStatus;
  /** When lastKnownGood will become assigned if nothing changes before (epoch ms); absent when not pending. */
  promoteAt?: number;
}

/** Whether a record leaves the previous status's lastKnownGood as it is (no promotion pending or due). */
function unchangedKnownGood(record: NodeRecord, prev: KataNodeStatus): boolean {
  if (record.lastKnownGood !== undefined) return sameRef(prev.lastKnownGood, record.lastKnownGood ?? undefined);
  const good =
    !!record.assigned &&
    sameId(record.assigned, record.active) &&
    record.error === '' &&
    record.phase !== 'FailedToInstall' &&
    record.phase !== 'FailedToUninstall';
  return !good || sameRef(prev.lastKnownGood, record.assigned);
}

/** Whether a record says something other than a status does: a transition, which moves lastTransitionTime. */
const transitionFrom = (prev: KataNodeStatus | undefined, record: NodeRecord): boolean =>
  !prev ||
  prev.phase !== record.phase ||
  !sameId(prev.assigned, record.assigned) ||
  !sameId(prev.active, record.active) ||
  (prev.error ?? '') !== record.error;

/** A node's KataNode status from its record and its previous status. */
export function kataNodeStatus(record: NodeRecord, prev: KataNodeStatus | undefined, now: Date, soakMs: number): KataNodeStatusResult {
  const changed = transitionFrom(prev, record);
  // Most nodes on most passes: nothing changed, and no lastKnownGood is due. The status stays as it is.
  if (prev?.lastTransitionTime && !changed && unchangedKnownGood(record, prev)) return { status: prev };
  const lastTransitionTime = changed || !prev?.lastTransitionTime ? rfc3339(now) : prev.lastTransitionTime;
  let lastKnownGood = prev?.lastKnownGood;
  let promoteAt: number | undefined;
  // A platform that keeps the last known good itself (its rollback target) has it reported as it is.
  if (record.lastKnownGood !== undefined) {
    const status: KataNodeStatus = {
      phase: record.phase,
      ...(record.assigned ? { assigned: record.assigned } : {}),
      ...(record.active ? { active: record.active } : {}),
      ...(record.lastKnownGood ? { lastKnownGood: record.lastKnownGood } : {}),
      error: record.error,
      lastTransitionTime,
    };
    return { status };
  }
  // Running what it was assigned, without error: after the soak period that is known good.
  const good =
    !!record.assigned &&
    sameId(record.assigned, record.active) &&
    record.error === '' &&
    record.phase !== 'FailedToInstall' &&
    record.phase !== 'FailedToUninstall';
  if (good && record.assigned && !sameRef(lastKnownGood, record.assigned)) {
    const at = Date.parse(lastTransitionTime) + soakMs;
    if (now.getTime() >= at) lastKnownGood = record.assigned;
    else promoteAt = at;
  }
  const status: KataNodeStatus = {
    phase: record.phase,
    ...(record.assigned ? { assigned: record.assigned } : {}),
    ...(record.active ? { active: record.active } : {}),
    ...(lastKnownGood ? { lastKnownGood } : {}),
    error: record.error,
    lastTransitionTime,
  };
  return { status, ...(promoteAt !== undefined ? { promoteAt } : {}) };
}

/** What the controller does with KataNode objects in one pass. */
export interface KataNodePlan {
  /** KataNodes to create, and their status (made with it, in one request). */
  create: { node: KataNode; status: KataNodeStatus }[];
  /** KataNodes whose owner reference must name the KataConfig in effect, with their status (applied whole). */
  adopt: KataNode[];
  /** Status to apply where it changed, by KataNode (the cached object, and the status it should have). */
  status: { cached: KataNode; status: KataNodeStatus }[];
  /** KataNodes whose node has left the selection with kata off it. */
  delete: string[];
  /** The earliest pending lastKnownGood promotion (epoch ms), to look again then. */
  promoteAt?: number;
}

/**
 * One KataNode per record, owned by the KataConfig; none for a node without a record. `existing` is the
 * KataNode cache. A record and KataNode a pass found nothing to write for are passed over by the next
 * passes until either changes (`settled`): most nodes, on most passes, of a large cluster.
 *
 * `pending` holds the statuses earlier passes planned that are not made yet (queued, or sent and not
 * answered: trailing.ts). A transition the cache does not show yet but a pending write does is the same
 * transition, with the time that write gives it: a pass that comes while the write is on its way plans the
 * same write, rather than one that differs only in lastTransitionTime and would be made again after it.
 */
export function planKataNodes(
  kc: KataConfig,
  records: readonly NodeRecord[],
  existing: readonly KataNode[],
  now: Date,
  soakMs: number,
  pending?: ReadonlyMap<string, KataNodeStatus>,
): KataNodePlan {
  const owner = kataConfigOwner(kc, true);
  const byName = kataNodesByName(existing);
  const plan: KataNodePlan = { create: [], adopt: [], status: [], delete: [] };
  let found = 0;
  for (const record of records) {
    const cached = byName.get(record.node);
    if (cached) found++;
    // A node waiting its turn with nothing new assigned has nothing to report that the KataConfig's
    // waitingToInstall list does not say: its KataNode is made once the platform assigns it a configuration.
    // (Most nodes, early in a large rollout: nothing is computed for them.)
    else if (awaitsAssignment(record)) continue;
    const known = settled.get(record);
    if (cached && known?.kataNode === cached && known.owner === owner.uid && known.soakMs === soakMs) continue;
    const planned = pending?.get(record.node);
    const prev = planned && transitionFrom(cached?.status, record) ? planned : cached?.status;
    const { status, promoteAt } = kataNodeStatus(record, prev, now, soakMs);
    if (promoteAt !== undefined) plan.promoteAt = Math.min(plan.promoteAt ?? promoteAt, promoteAt);
    if (!cached || cached.metadata.deletionTimestamp) {
      if (!cached) plan.create.push({ node: { metadata: { name: record.node, ownerReferences: [owner] } }, status });
      continue;
    }
    const refs = cached.metadata.ownerReferences ?? [];
    if (!refs.some((r) => r.kind === 'KataConfig' && r.uid === owner.uid))
      plan.adopt.push({
        metadata: { ...cached.metadata, ownerReferences: [...refs.filter((r) => r.kind !== 'KataConfig'), owner] },
        status,
      });
    // Only a real change is written (an idle cluster costs no write).
    else if (!sameKataNodeStatus(cached.status, status)) plan.status.push({ cached, status });
    else if (promoteAt === undefined) settled.set(record, { kataNode: cached, owner: owner.uid, soakMs });
  }
  // Every KataNode has its record, unless fewer were found than there are: only then look for those to go.
  if (found < byName.size) {
    const wanted = new Set(records.map((r) => r.node));
    for (const name of byName.keys()) if (!wanted.has(name)) plan.delete.push(name);
  }
  return plan;
}

/**
 * A node selected and waiting its turn, given nothing but what it runs (no configuration, or the one it is
 * on: the Machine Config Operator keeps every node's desiredConfig, the node's own until its pool assigns
 * the kata one): it gets no KataNode yet.
 */
const awaitsAssignment = (r: NodeRecord): boolean => r.phase === 'WaitingToInstall' && (!r.assigned || r.assigned.id === r.active?.id);

/** The KataNodes by name, for the snapshot a pass reads (the same map while the KataNodes do not change). */
const kataNodesByName = lastCall((existing: readonly KataNode[]) => new Map(existing.map((k) => [objectName(k), k])));

/**
 * Records a pass found nothing to write for, with the KataNode it compared them with (a cache of
 * planKataNodes' answer for that pair: runtime/memo.ts). A pending lastKnownGood promotion is never settled:
 * its answer depends on the time.
 */
const settled = new WeakMap<NodeRecord, { kataNode: KataNode; owner: string | undefined; soakMs: number }>();
