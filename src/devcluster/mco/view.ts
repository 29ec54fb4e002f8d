import type { KubeObject } from '../../kube/types.ts';
import { keyOf } from '../../kube/types.ts';
import type { Informer } from '../../runtime/informer.ts';

const versionOf = (o: KubeObject): string => o.metadata.resourceVersion ?? '';
/** How many shown versions of an object are remembered: an answer is late by a few events, not by many. */
const RECENT_VERSIONS = 8;

/** Our own writes to one object the cache has not caught up with: the last answer, and every version we made. */
interface Own<T> {
  answer: T;
  made: Set<string>;
}

/**
 * The freshest copy of each object known here: the informer's, or the answer to our own last write while
 * the informer has not shown it yet. Deciding on it (not on a lagging cache) is what keeps `maxUnavailable`
 * honest.
 *
 * Freshness is not told by comparing resource versions: they are opaque, and after an etcd restore the
 * restored objects carry versions older than the ones clients saw before it. The informer's copy is the
 * truth as soon as it shows our last write, or any version our writes did not make (someone else's write,
 * or a restore); only versions we made on the way to the last write are known to be behind it.
 */
export class LatestView<T extends KubeObject> {
  private readonly own = new Map<string, Own<T>>();
  /** Deleted objects (key -> uid): an answer about that object that arrives after its deletion does not bring it back. */
  private readonly gone = new Map<string, string | undefined>();
  /**
   * The last versions the informer showed of each object. Our write's answer can come after its own watch
   * event, and after the event of a write that followed it (another connection, a busy event loop): then the
   * answer is already behind the cache, which shows nothing more to correct it.
   */
  private readonly recent = new Map<string, string[]>();
  private readonly informer: Informer<T>;

  constructor(informer: Informer<T>) {
    this.informer = informer;
    informer.addEventHandler({ add: (o) => this.shown(o), update: (_, o) => this.shown(o), delete: (o) => this.deleted(o) });
  }

  /** The server's answer to a write of ours. */
  observe(o: T | undefined): void {
    if (!o?.metadata) return;
    const key = keyOf(o);
    if (this.gone.has(key) && this.gone.get(key) === o.metadata.uid) return;
    // The cache has shown it already: its watch event came before the answer, perhaps with later writes.
    const cached = this.informer.get(key);
    if ((cached && versionOf(cached) === versionOf(o)) || this.recent.get(key)?.includes(versionOf(o))) {
      this.own.delete(key);
      return;
    }
    const made = this.own.get(key)?.made ?? new Set<string>();
    made.add(versionOf(o));
    this.own.set(key, { answer: o, made });
  }

  private shown(o: T): void {
    const key = keyOf(o);
    this.gone.delete(key);
    const recent = this.recent.get(key) ?? [];
    recent.push(versionOf(o));
    if (recent.length > RECENT_VERSIONS) recent.shift();
    this.recent.set(key, recent);
    const mine = this.own.get(key);
    if (mine && (versionOf(o) === versionOf(mine.answer) || !mine.made.has(versionOf(o)))) this.own.delete(key);
  }

  private deleted(o: T): void {
    const key = keyOf(o);
    this.own.delete(key);
    this.recent.delete(key);
    this.gone.set(key, o.metadata.uid);
  }

  get(key: string): T | undefined {
    return this.own.get(key)?.answer ?? this.informer.get(key);
  }

  *values(): IterableIterator<T> {
    for (const o of this.informer.list()) yield this.own.get(keyOf(o))?.answer ?? o;
    // Made by us and not shown yet.
    for (const [key, mine] of this.own) if (!this.informer.get(key)) yield mine.answer;
  }
}
