import type { KubeObject } from '../../kube/types.ts';
import { keyOf } from '../../kube/types.ts';
import type { Informer } from '../../runtime/informer.ts';

const rvOf = (o: KubeObject): number => Number(o.metadata.resourceVersion ?? 0) || 0;

/**
 * The freshest copy of each object known here: the informer's, or the answer to our own last write if
 * that is newer. Deciding on it (not on a lagging cache) is what keeps `maxUnavailable` honest.
 */
export class LatestView<T extends KubeObject> {
  private readonly objs = new Map<string, T>();
  private readonly gone = new Map<string, number>();
  constructor(informer: Informer<T>) {
    informer.addEventHandler({ add: (o) => this.observe(o), update: (_, o) => this.observe(o), delete: (o) => this.forget(o) });
  }
  observe(o: T | undefined): void {
    if (!o?.metadata) return;
    const key = keyOf(o);
    const rv = rvOf(o);
    const cur = this.objs.get(key);
    if (cur && rvOf(cur) >= rv) return;
    const tomb = this.gone.get(key);
    if (tomb !== undefined) {
      if (rv <= tomb) return;
      this.gone.delete(key);
    }
    this.objs.set(key, o);
  }
  forget(o: T): void {
    const key = keyOf(o);
    const cur = this.objs.get(key);
    this.objs.delete(key);
    this.gone.set(key, Math.max(rvOf(o), cur ? rvOf(cur) : 0));
  }
  get(key: string): T | undefined {
    return this.objs.get(key);
  }
  values(): IterableIterator<T> {
    return this.objs.values();
  }
}
