import { Events, type KubeEvent, ServiceAccounts } from '../../src/kube/resources.ts';
/**
 * Condition polling for tests. A test never sleeps and then asserts: it states what must become true and
 * waits for it, with a deadline generous enough for a loaded CI machine. The predicate is polled (it may
 * read an informer cache, which costs nothing, or call the API server).
 */

export interface WaitOptions {
  /** Give up after this long; default 60s. */
  timeoutMs?: number;
  /** Time between polls; default 50ms. */
  intervalMs?: number;
  /** What was awaited, for the timeout error. */
  message?: string;
  signal?: AbortSignal;
}

export class WaitTimeoutError extends Error {
  readonly lastError: unknown;
  readonly lastValue: unknown;
  constructor(message: string, lastValue: unknown, lastError: unknown) {
    super(message);
    this.name = 'WaitTimeoutError';
    this.lastValue = lastValue;
    this.lastError = lastError;
  }
}

/**
 * Polls fn until it answers a truthy value (which is returned). A throwing fn counts as "not yet"; the
 * last error and the last value are reported if the deadline passes.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  let lastValue: unknown;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      const v = await fn();
      lastValue = v;
      lastError = undefined;
      if (v) return v as NonNullable<T>;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const what = opts.message ?? 'condition';
      const detail =
        lastError !== undefined
          ? `; last error: ${lastError instanceof Error ? lastError.message : String(lastError)}`
          : `; last value: ${describe(lastValue)}`;
      throw new WaitTimeoutError(`timed out after ${timeoutMs}ms waiting for ${what}${detail}`, lastValue, lastError);
    }
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
}

function describe(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 500 ? `${s.slice(0, 500)}...` : s;
  } catch {
    return String(v);
  }
}

/**
 * Waits for a new namespace's `default` ServiceAccount, which the controller-manager creates a moment after
 * the namespace: until then the ServiceAccount admission plugin refuses pods there, as on any cluster.
 */
export async function waitForDefaultServiceAccount(
  client: { find(rt: typeof ServiceAccounts, name: string, namespace?: string): Promise<unknown> },
  namespace: string,
): Promise<void> {
  await waitFor(() => client.find(ServiceAccounts, 'default', namespace), { message: `the default ServiceAccount of ${namespace}` });
}

/**
 * Waits until the events in a namespace include those the filter keeps, and returns them. Events are
 * recorded after the status change they describe, as on any cluster, so a test that has just seen a
 * condition waits for its event rather than listing once.
 */
export async function waitForEvents(
  client: { list(rt: typeof Events, opts: { namespace: string }): Promise<{ items: KubeEvent[] }> },
  namespace: string,
  keep: (e: KubeEvent) => boolean,
  message: string,
  atLeast = 1,
): Promise<KubeEvent[]> {
  return waitFor(
    async () => {
      const found = (await client.list(Events, { namespace })).items.filter(keep);
      return found.length >= atLeast ? found : undefined;
    },
    { message },
  );
}
