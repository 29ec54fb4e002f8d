import type { KataNode, KataNodeStatus } from '../../api/katanode.ts';
import { KataNodes } from '../../api/katanode.ts';
import type { Node } from '../../kube/resources.ts';
import { type Applier, nameOf, type PlannedWrite } from '../../runtime/applier.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { Informer } from '../../runtime/informer.ts';
import { whatOf } from '../../runtime/writes.ts';

/** The work queue's workers: writes in flight at once. */
export const TRAILING_WORKERS = 16;

/**
 * How long a KataNode write that moves no phase on waits before it is made: a KataNode made waiting
 * (WaitingToInstall with its configuration assigned), or a state on the way that changes within its phase.
 * A node the Machine Config Operator gives its configuration goes Working within a second or two on a quiet
 * cluster (its daemon notices, then checks the new configuration), and within 5 s at the 99th percentile on
 * one busy with a thousand-node rollout; so its KataNode is made Installing, one write rather than two; a
 * node that stays waiting longer is reported so. At 3 s, the rollouts of a thousand nodes made from 1.1 to
 * 2.8 KataNode writes per node with the API server's pace (a node whose next state came after the wait got
 * one more write); 10 s is twice that 99th percentile. A phase change (Installing, WaitingToUninstall,
 * Uninstalling), a final state (Installed, the failures) and a deletion are made at once.
 */
export const PASSING_STATE_DELAY_MS = 10_000;

const FINAL = new Set(['Installed', 'FailedToInstall', 'FailedToUninstall']);

/** The work-queue keys: a KataNode's, or a node's (its detached patch). */
const KATANODE = 'katanode/';
const NODE = 'node/';

export interface WriteQueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
}

/** The phase a KataNode write reports, if any. */
function phaseOf(w: PlannedWrite): string | undefined {
  if (w.op === 'status') return (w.status as { phase?: string } | undefined)?.phase;
  if (w.op === 'apply') return (w.object as KataNode).status?.phase;
  return undefined;
}

/**
 * The KataConfig controller's writes that nothing in its pass waits for (docs/architecture.md, "One apply
 * path"): the KataNodes and the node patches a platform plans as `detached`, made by a work queue of their
 * own, one key per object, so that a thousand of them never stand between a node's change and the next
 * KataConfig status. A pass's plan (pure, given the time) names these writes as it names all others; each
 * key's reconcile makes the write the latest plan has for that object, as planned, through the controller's
 * applier (which skips what the cache shows already). A later plan replaces an earlier one: a write the
 * latest plan no longer makes (the state went back, the KataConfig went) is not made. Nothing here outlives
 * the plans: a restarted operator plans again from the cluster.
 */
export class TrailingWrites {
  /** The latest plan's writes, by key: KataNodes (made, given their status, deleted) and node patches. */
  private kataNodes = new Map<string, PlannedWrite>();
  private nodePatches = new Map<string, PlannedWrite>();
  private readonly applier: Applier;
  private readonly cached: { kataNodes: Informer<KataNode>; nodes: Informer<Node> };
  /** The writes the work queue's reconciles are making now, by key. */
  private readonly making = new Map<string, PlannedWrite>();
  /** The work queue; absent (a reconciler built alone, as in unit tests), the pass makes the writes itself. */
  private queue: WriteQueue | undefined;

  constructor(opts: { applier: Applier; kataNodes: Informer<KataNode>; nodes: Informer<Node> }) {
    this.applier = opts.applier;
    this.cached = { kataNodes: opts.kataNodes, nodes: opts.nodes };
  }

  /** The work queue the keys go to. */
  attach(queue: WriteQueue): void {
    this.queue = queue;
  }

  /**
   * A plan's KataNode writes (undefined: the plan leaves the KataNodes as they are) and detached node
   * patches, in place of the last plan's. Answers once they are queued (or, without a queue, made).
   */
  async plan(kataNodes: readonly PlannedWrite[] | undefined, nodePatches: readonly PlannedWrite[], signal?: AbortSignal): Promise<void> {
    this.kataNodes = new Map((kataNodes ?? []).map((w) => [KATANODE + nameOf(w), w]));
    this.nodePatches = new Map(nodePatches.filter((w) => w.op === 'patch').map((w) => [NODE + nameOf(w), w]));
    if (!this.queue) {
      await mapLimit([...this.nodePatches.keys(), ...this.kataNodes.keys()], TRAILING_WORKERS, (key) => this.reconcile(key, signal));
      return;
    }
    // A pass plans again what the cache does not show yet. Not queued again: a write the applier would
    // skip (on its way to the cache, or shown: forgotten here), and the very write being made now (kept
    // as planned, since it is not answered yet). At 1,000 workers these were two reconciles in three.
    for (const [key, w] of this.nodePatches) {
      if (this.needless(w)) this.nodePatches.delete(key);
      else if (!this.beingMade(key, w)) this.queue.add(key);
    }
    for (const [key, w] of this.kataNodes) {
      if (this.needless(w)) this.kataNodes.delete(key);
      else if (this.beingMade(key, w)) continue;
      else if (this.movesOn(w)) this.queue.add(key);
      else this.queue.addAfter(key, PASSING_STATE_DELAY_MS);
    }
  }

  /**
   * The KataNode statuses the latest plan has that are not made yet (waiting their turn, or sent and not
   * answered), by node: what the next plan reads beside the cache, so that it plans these writes again as
   * they are (planKataNodes) rather than the same transitions at a later time.
   */
  pendingStatuses(): ReadonlyMap<string, KataNodeStatus> {
    const out = new Map<string, KataNodeStatus>();
    for (const w of this.kataNodes.values()) {
      const status = w.op === 'status' ? (w.status as KataNodeStatus) : w.op === 'apply' ? (w.object as KataNode).status : undefined;
      if (status) out.set(nameOf(w), status);
    }
    return out;
  }

  /**
   * Whether a KataNode write is made at once: a deletion, a final state, or a phase other than the one the
   * KataNode shows (a node without one is waiting to install).
   */
  private movesOn(w: PlannedWrite): boolean {
    const phase = phaseOf(w);
    if (phase === undefined || FINAL.has(phase)) return true;
    const name = nameOf(w);
    const shown = this.applier.latest(KataNodes, name, undefined, this.cached.kataNodes.get(name))?.status?.phase;
    return phase !== (shown ?? 'WaitingToInstall');
  }

  /** Whether this very write (the same JSON) is the one the key's reconcile is making now. */
  private beingMade(key: string, w: PlannedWrite): boolean {
    const making = this.making.get(key);
    return making !== undefined && (making === w || JSON.stringify(whatOf(making)) === JSON.stringify(whatOf(w)));
  }

  /** Whether the applier would make no request for this write now (Applier.needless). */
  private needless(w: PlannedWrite): boolean {
    return this.applier.needless(w, this.cachedOf(w));
  }

  private cachedOf(w: PlannedWrite): KataNode | Node | undefined {
    const name = nameOf(w);
    return w.resource === KataNodes ? this.cached.kataNodes.get(name) : this.cached.nodes.get(name);
  }

  /** One key's write, as the latest plan has it. */
  async reconcile(key: string, signal?: AbortSignal): Promise<undefined> {
    const kataNode = key.startsWith(KATANODE);
    const planned = kataNode ? this.kataNodes : this.nodePatches;
    const w = planned.get(key);
    if (!w) return undefined;
    this.making.set(key, w);
    try {
      await this.applier.write(w, this.cachedOf(w), signal);
      // Made: forgotten, unless a later plan put another write here meanwhile (made at its own turn); the
      // same write planned again meanwhile was not queued (beingMade), and is made now too.
      if (this.beingMade(key, planned.get(key) ?? w)) planned.delete(key);
    } finally {
      this.making.delete(key);
    }
    return undefined;
  }
}
