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
