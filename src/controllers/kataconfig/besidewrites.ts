import type { KataConfig } from '../../api/kataconfig.ts';
import { kataConfigOwner } from '../../api/kataconfig.ts';
import { type KataNode, KataNodes } from '../../api/katanode.ts';
import type { Node } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import type { NodeRecord } from '../../platform/platform.ts';
import type { Applier, PlannedWrite } from '../../runtime/applier.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { Informer } from '../../runtime/informer.ts';
import { kataNodeStatus, kataNodeStatusShare } from './katanodes.ts';

/** The work queue's workers: writes in flight at once. */
export const BESIDE_WORKERS = 16;

/** The work-queue keys: a KataNode's, or a node's (its detached patch). */
const KATANODE = 'katanode/';
const NODE = 'node/';

/** What a KataNode should be: made, owned by the KataConfig in effect, reporting this record; or gone. */
type Wanted = { record: NodeRecord; owner: OwnerReference } | 'gone';

/**
 * The KataConfig controller's writes that nothing waits for, made beside its pass through a work queue of
 * their own, one key per object (docs/architecture.md, "One apply path"): the KataNodes, and the node
 * patches a platform plans as `detached`. The KataConfig pass plans which KataNodes change and hands each
 * its node's record; a KataNode's reconcile makes its writes through the controller's applier, its status
 * computed from the record against the KataNode as last written. So a thousand KataNode writes and node
 * patches never stand between a node's change and the next KataConfig status, a failed write is retried by
 * the queue like any reconcile, and a record handed over twice (planned again from a cache one event
 * behind) finds its status written and writes nothing.
 */
export class BesideWrites {
  private readonly wanted = new Map<string, Wanted>();
  /** Each node's latest detached patch not yet made. */
  private readonly nodePatches = new Map<string, PlannedWrite>();
  private readonly nodes: Informer<Node>;
  private readonly applier: Applier;
  private readonly kataNodes: Informer<KataNode>;
  private readonly soakMs: number;
  private readonly now: () => Date;
  /** The KataNode work queue; absent (a reconciler built alone, as in unit tests), the pass writes them itself. */
  private enqueue: ((name: string) => void) | undefined;

  constructor(opts: { applier: Applier; kataNodes: Informer<KataNode>; nodes: Informer<Node>; soakMs: number; now?: () => Date }) {
    this.applier = opts.applier;
    this.nodes = opts.nodes;
    this.kataNodes = opts.kataNodes;
    this.soakMs = opts.soakMs;
    this.now = opts.now ?? (() => new Date());
  }

  /** The work queue the keys go to. */
  attach(enqueue: (name: string) => void): void {
    this.enqueue = enqueue;
  }

  /**
   * A KataConfig pass's word on these KataNodes: each named one reports its record, or goes. Answers once
   * they are queued (or, without a queue, written).
   */
  async want(
    kc: KataConfig | undefined,
    records: readonly NodeRecord[],
    changed: readonly string[],
    gone: readonly string[],
    signal?: AbortSignal,
  ): Promise<void> {
    const owner = kc && kataConfigOwner(kc, true);
    const byNode = new Map(records.map((r) => [r.node, r]));
    for (const name of changed) {
      const record = byNode.get(name);
      if (record && owner) this.wanted.set(name, { record, owner });
    }
    for (const name of gone) this.wanted.set(name, 'gone');
    await this.queue(
      [...changed, ...gone].map((n) => KATANODE + n),
      signal,
    );
  }

  /** Node patches nothing waits for: each node's latest one is made, unless the node cache shows it by then. */
  async patchNodes(patches: readonly PlannedWrite[], signal?: AbortSignal): Promise<void> {
    for (const p of patches) if (p.op === 'patch') this.nodePatches.set(p.name, p);
    await this.queue(
      patches.filter((p) => p.op === 'patch').map((p) => NODE + (p.op === 'patch' ? p.name : '')),
      signal,
    );
  }

  private async queue(keys: string[], signal?: AbortSignal): Promise<void> {
    if (this.enqueue) for (const key of keys) this.enqueue(key);
    else await mapLimit(keys, BESIDE_WORKERS, (key) => this.reconcile(key, signal));
  }

  /** Every KataNode goes, and none is made again: the uninstall is over, or no KataConfig exists. */
  goneAll(names: readonly string[]): void {
    for (const name of this.wanted.keys()) this.wanted.set(name, 'gone');
    for (const name of names) this.wanted.set(name, 'gone');
  }

  /** One key's writes: a node's patch; a KataNode made or adopted, then its status, or deleted. */
  async reconcile(key: string, signal?: AbortSignal): Promise<undefined> {
    if (key.startsWith(NODE)) {
      const name = key.slice(NODE.length);
      const patch = this.nodePatches.get(name);
      if (!patch) return undefined;
      await this.applier.write(patch, this.nodes.get(name), signal);
      // A newer patch handed over meanwhile stays for the next reconcile of this key.
      if (this.nodePatches.get(name) === patch) this.nodePatches.delete(name);
      return undefined;
    }
    const name = key.slice(KATANODE.length);
    const wanted = this.wanted.get(name);
    if (!wanted) return undefined;
    const cached = this.kataNodes.get(name);
    const latest = this.applier.latest(KataNodes, name, undefined, cached);
    if (wanted === 'gone') {
      if (latest) {
        const uid = latest.metadata.uid;
        await this.applier.write({ op: 'delete', resource: KataNodes, name, ...(uid ? { uid } : {}) }, cached, signal);
      }
      // Forgotten once gone: a node selected again later is handed over again.
      if (this.wanted.get(name) === 'gone') this.wanted.delete(name);
      return undefined;
    }
    const writes: PlannedWrite[] = [];
    const refs = latest?.metadata.ownerReferences ?? [];
    if (!latest || latest.metadata.deletionTimestamp || !refs.some((r) => r.kind === 'KataConfig' && r.uid === wanted.owner.uid)) {
      if (latest?.metadata.deletionTimestamp) return undefined; // made again once its deletion is done
      writes.push({ op: 'apply', resource: KataNodes, object: { metadata: { name, ownerReferences: [wanted.owner] } }, rewriteOn: 'plan' });
    }
    const { status } = kataNodeStatus(wanted.record, latest?.status, this.now(), this.soakMs);
    writes.push({ op: 'status', resource: KataNodes, name, status, share: kataNodeStatusShare });
    for (const w of writes) await this.applier.write(w, this.kataNodes.get(name), signal);
    return undefined;
  }
}
