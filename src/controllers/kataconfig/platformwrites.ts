import type { Logger } from 'pino';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists } from '../../kube/errors.ts';
import { type Node, Nodes } from '../../kube/resources.ts';
import type { PlatformPlan, PlatformWrite } from '../../platform/platform.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import { Expectations } from '../../runtime/expectations.ts';
import type { Informer } from '../../runtime/informer.ts';
import { WriteLane } from '../../runtime/writelane.ts';

/** Platform writes in flight at once within one step of a plan (e.g. node label patches). */
export const WRITES_IN_FLIGHT = 16;

/**
 * Makes a platform's plans for the KataConfig controller: the steps in order, detached node patches beside
 * the worker, and no write again that the caches do not show yet (node metadata patches and creates).
 */
export class PlatformWriter {
  private readonly client: KubeClient;
  private readonly nodes: Informer<Node>;
  /** A plan's detached node patches, made beside the worker (see applyPlan). */
  private readonly nodeLane: WriteLane<PlatformWrite>;
  /** Node label writes the node cache does not show yet (see applyPlan). */
  private readonly labelWrites = new Expectations<string>();
  /**
   * Objects a pass created that the caches do not show yet. The next pass would plan the same create,
   * which the API server answers AlreadyExists: harmless, but a 409 for nothing.
   */
  private readonly creates = new Expectations<'create'>();

  constructor(opts: { client: KubeClient; nodes: Informer<Node>; log?: Logger }) {
    this.client = opts.client;
    this.nodes = opts.nodes;
    this.nodeLane = new WriteLane<PlatformWrite>({
      write: (_name, w, signal) => this.writeNodeMetadata(w, signal),
      inFlight: WRITES_IN_FLIGHT,
      ...(opts.log ? { log: opts.log } : {}),
    });
  }

  /** Answers once the node patches handed to the lane are made. */
  idle(): Promise<void> {
    return this.nodeLane.idle();
  }

  /**
   * Makes a platform's writes: steps in order, the writes of one step a bounded number at a time; then
   * hands the plan's detached node patches to the node lane, which makes them beside the worker: on a
   * large cluster those are a thousand slow writes (a Node is a big object, watched by every component),
   * and the next pass's status would wait behind them.
   */
  async applyPlan(plan: PlatformPlan, signal: AbortSignal): Promise<string[]> {
    const done: string[] = [];
    const made = (w: PlatformWrite) => done.push(`${w.op} ${w.resource.kind.toLowerCase()}/${writeName(w)}`);
    const creates = new Set<string>();
    for (const step of plan.steps)
      await mapLimit(step, WRITES_IN_FLIGHT, async (w) => {
        const created = w.op === 'create' ? createKey(w) : undefined;
        if (created) {
          creates.add(created);
          if (this.creates.awaiting(created, 'create', false)) return;
        }
        const expected = nodeMetadataPatch(w);
        if (expected && !this.nodePatchNeeded(expected)) return;
        if (await this.applyWrite(w, signal)) made(w);
        if (expected) this.labelWrites.expect(expected.name, expected.value);
        if (created) this.creates.expect(created, 'create');
      });
    // A create no longer planned is one the caches show (or no longer wanted): an object deleted later is
    // created again at once.
    this.creates.retain(creates);
    for (const w of plan.detached ?? []) {
      const expected = nodeMetadataPatch(w);
      if (!expected) throw new Error(`a detached write must be a node metadata patch: ${w.op} ${w.resource.kind}`);
      if (!this.nodePatchNeeded(expected)) continue;
      this.nodeLane.submit(expected.name, w, signal);
      made(w);
    }
    return done;
  }

  /**
   * Whether a planned node metadata patch still has to be made. The plan was computed from the node cache
   * as the pass began, before its status write: the cache may show the patch by now (made by the pass
   * before), or the patch may be on its way (in the lane, or made and not yet shown).
   */
  private nodePatchNeeded(expected: NodeMetadataPatch): boolean {
    const upcoming = this.nodeLane.upcoming(expected.name);
    if (upcoming) return nodeMetadataPatch(upcoming)?.value !== expected.value;
    if (this.shownOnNode(expected)) {
      this.labelWrites.forget(expected.name);
      return false;
    }
    return !this.labelWrites.awaiting(expected.name, expected.value, false);
  }

  /** One node metadata patch, made by the node lane; remembered until the node cache shows it. */
  private async writeNodeMetadata(w: PlatformWrite, signal: AbortSignal): Promise<void> {
    await this.applyWrite(w, signal);
    const expected = nodeMetadataPatch(w);
    if (expected) this.labelWrites.expect(expected.name, expected.value);
  }

  /**
   * A node as its cache now shows it: a write the cache shows is no longer awaited. Without this, a label
   * an administrator removes after the cache showed osc's write would wait for the record to expire.
   */
  nodeSeen(name: string): void {
    const value = this.labelWrites.recorded(name);
    if (value === undefined) return;
    const expected = { name, ...(JSON.parse(value) as Omit<NodeMetadataPatch, 'name' | 'value'>), value };
    if (this.shownOnNode(expected)) this.labelWrites.forget(name);
  }

  /** Whether the node cache shows what a metadata patch writes. */
  private shownOnNode(expected: NodeMetadataPatch): boolean {
    const node = this.nodes.get(expected.name);
    const shown = (have: Record<string, string> | undefined, want: Record<string, string | null> | undefined) =>
      Object.entries(want ?? {}).every(([k, v]) => (v === null ? have?.[k] === undefined : have?.[k] === v));
    return !!node && shown(node.metadata.labels, expected.labels) && shown(node.metadata.annotations, expected.annotations);
  }

  private async applyWrite(w: PlatformWrite, signal: AbortSignal): Promise<boolean> {
    const client = this.client;
    if (w.op === 'create') {
      await this.create(w.resource, w.object, signal);
      return true;
    }
    if (w.op === 'delete') return client.delete(w.resource, w.name, { ...(w.namespace ? { namespace: w.namespace } : {}), signal });
    await client.patch(w.resource, w.name, w.patch, {
      ...(w.namespace ? { namespace: w.namespace } : {}),
      ...(w.type ? { type: w.type } : {}),
      signal,
    });
    return true;
  }

  async create<T extends { metadata: { name?: string } }>(
    rt: Parameters<KubeClient['create']>[0],
    obj: T,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      await this.client.create(rt, obj as never, { signal });
    } catch (e) {
      // The cache may lag behind our own earlier create.
      if (!isAlreadyExists(e)) throw e;
    }
  }
}

const writeName = (w: PlatformWrite): string => (w.op === 'create' ? (w.object.metadata.name ?? '') : w.name);
const createKey = (w: PlatformWrite & { op: 'create' }): string =>
  `${w.resource.plural}/${w.object.metadata.namespace ?? ''}/${w.object.metadata.name ?? ''}`;

interface NodeMetadataPatch {
  name: string;
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  /** The patch as one value, for Expectations. */
  value: string;
}

/** A platform's merge patch of a node's labels or annotations (and nothing else), or undefined. */
function nodeMetadataPatch(w: PlatformWrite): NodeMetadataPatch | undefined {
  if (w.op !== 'patch' || w.resource !== Nodes || (w.type && w.type !== 'merge')) return undefined;
  const patch = w.patch as { metadata?: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> } };
  const keys = Object.keys(patch ?? {});
  if (keys.length !== 1 || keys[0] !== 'metadata' || !patch.metadata) return undefined;
  const { labels: _, annotations: __, ...rest } = patch.metadata;
  if (Object.keys(rest).length) return undefined;
  // What a repeat must match, and what the node cache must show for the patch to count as seen.
  const value = w.expect ?? JSON.stringify(patch.metadata);
  const { labels, annotations } = (w.expect ? JSON.parse(w.expect) : patch.metadata) as Omit<NodeMetadataPatch, 'name' | 'value'>;
  return { name: w.name, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}), value };
}
