/**
 * Caches of pure functions, for what a pass computes again from inputs that have not changed: a cache's
 * snapshot (the same array until the cache changes: Informer.snapshot) or a cached object (replaced, never
 * changed, when its object changes). Each answers exactly what its function answers, keyed by the identity
 * of those immutable inputs: it changes no answer, only what it costs (docs/performance.md).
 */

/** `fn`, remembering its last arguments (by identity) and answer. */
export function lastCall<A extends readonly unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  let last: { args: A; result: R } | undefined;
  return (...args: A): R => {
    if (last && last.args.length === args.length && last.args.every((a, i) => a === args[i])) return last.result;
    const result = fn(...args);
    last = { args, result };
    return result;
  };
}

/** `fn` of an object, remembered per object for as long as the object lives. */
export function perObject<O extends object, R>(fn: (o: O) => R): (o: O) => R {
  const answers = new WeakMap<O, R>();
  return (o: O): R => {
    if (answers.has(o)) return answers.get(o) as R;
    const result = fn(o);
    answers.set(o, result);
    return result;
  };
}

/** What byLabels compares of each object: no more than a label-reading function may read of it. */
interface Labelled {
  metadata: { name?: string; labels?: Record<string, string>; deletionTimestamp?: string };
}

/**
 * `fn` of a list of objects (and further arguments, by identity), remembered while the list holds the same
 * objects' names, labels and deletion marks in the same order: for a function that reads nothing else of
 * them (node selection, say) and answers nothing made of them but those. The caches keep an object's
 * labels object when an update leaves its labels as they were (Informer), so the comparison is by
 * identity: a pass over 5,000 nodes of which a few changed their status or annotations computes nothing
 * again. A list whose labels came anew (a unit test's hand-made nodes) computes again, as it should.
 */
export function byLabels<O extends Labelled, A extends readonly unknown[], R>(
  fn: (objects: readonly O[], ...rest: A) => R,
): (objects: readonly O[], ...rest: A) => R {
  let last: { labels: object; rest: A; result: R } | undefined;
  return (objects, ...rest): R => {
    const labels = labelsOf(objects);
    if (last?.labels === labels && sameRest(last.rest, rest)) return last.result;
    const result = fn(objects, ...rest);
    last = { labels, rest, result };
    return result;
  };
}

const sameRest = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * A token for a list's names, labels and deletion marks: the same token as the list before's while they
 * are the same, a new one otherwise. Shared by every byLabels function, so a pass's first call compares
 * the new snapshot with the last one and the others compare tokens.
 */
let lastLabelled: { objects: readonly Labelled[]; token: object } | undefined;
function labelsOf(objects: readonly Labelled[]): object {
  if (lastLabelled?.objects === objects) return lastLabelled.token;
  const token = lastLabelled && sameLabels(lastLabelled.objects, objects) ? lastLabelled.token : {};
  lastLabelled = { objects, token };
  return token;
}

function sameLabels(a: readonly Labelled[], b: readonly Labelled[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = (a[i] as Labelled).metadata;
    const y = (b[i] as Labelled).metadata;
    if (x.labels !== y.labels || x.name !== y.name || x.deletionTimestamp !== y.deletionTimestamp) return false;
  }
  return true;
}

/**
 * A function answering, for a value, the last value it was given with the same JSON: an input that arrives
 * anew with the same content (a KataConfig's spec, with every write of its status) keeps one identity for
 * the memos above, which compare by identity. For small values only: each call serialises its argument.
 */
export function sameWhileEqual<T>(): (value: T) => T {
  let last: { json: string; value: T } | undefined;
  return (value) => {
    const json = JSON.stringify(value ?? null);
    if (last?.json === json) return last.value;
    last = { json, value };
    return value;
  };
}
