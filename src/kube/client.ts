import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import { apiVersionOf, type KubeObject, type ObjectList, objectName, type ResourceType, type WatchEvent } from '../api/meta.ts';
import { packageVersion } from '../api/release.ts';
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type JsonParser,
  type KubeClientOptions,
  type ListOptions,
  MAX_RETRY_AFTER,
  MAX_RETRY_AFTER_SECONDS,
  type PatchType,
  patchContentType,
  type RequestObserver,
  type RequestOptions,
  WatchIdleError,
  type WatchOptions,
  type WriteOptions,
} from './client-options.ts';
import type { Credentials } from './credentials.ts';
import { ApiError } from './errors.ts';
import { ServerClock } from './server-clock.ts';
import { LineReader, type Response, Transport } from './transport.ts';

export { apiVersionOf, type ResourceType } from '../api/meta.ts';

// The request options are part of the client's interface: importers take them from here.
export * from './client-options.ts';

/** How long after an outage a 410 Gone on a watch is taken as a sign of a store gone back (watchExpired). */
const GONE_AFTER_RECOVERY_MS = 60_000;

/**
 * What osc says it is in the User-Agent header (the API server's audit log records it): the version, and
 * which process, by its pod's name (POD_NAME, set from the downward API in osc's manifests) or its host's.
 * Two replicas running as one ServiceAccount are told apart by it.
 */
export function defaultUserAgent(): string {
  return `osc/${packageVersion()} (${process.env.POD_NAME || hostname()})`;
}

/** How a request's signal ended it, if it did: its caller's deadline passing, or the caller giving up. */
function abortKind(signal: AbortSignal | undefined): false | 'cancelled' | 'deadline' {
  if (!signal?.aborted) return false;
  return (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError' ? 'deadline' : 'cancelled';
}

function sleepFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A small typed REST client. It speaks to any resource through a static ResourceType (no discovery round
 * trips) and funnels every call through one place so that requests can be counted. It authenticates with
 * Credentials: a pod's own service account (src/kube/credentials.ts), or a kubeconfig, whose support
 * through the official client is loaded only when a kubeconfig is given.
 */
export class KubeClient {
  /** The API server's URL. */
  readonly server: string;
  private readonly source: Credentials | KubeConfig;
  private credentials: Promise<Credentials> | undefined;
  private readonly observers: RequestObserver[] = [];
  private readonly writeListeners = new Set<(rt: ResourceType, obj: KubeObject) => void>();
  private readonly fieldManager: string;
  /**
   * One connection pool for the client's life: keep-alive connections are reused across requests (a new
   * TLS handshake per request would dominate the cost of small requests). Made at the first request, and
   * again after close.
   */
  private transport: Promise<Transport> | undefined;

  private readonly requestTimeoutMs: number;

  private unavailable = false;
  private recoveredAt = Number.NEGATIVE_INFINITY;
  /** The recovery (recoveredAt) after which every cache was last told to list again. */
  private relistedAt = Number.NEGATIVE_INFINITY;
  private readonly recoveredListeners = new Set<() => void>();
  private readonly relistListeners = new Set<() => void>();

  /**
   * Hears the API server answer again after a request of this client found it unavailable (no answer, a
   * 5xx, a 429): an informer or a work queue waiting out a backoff retries at once rather than up to its
   * cap later. Answers a function that stops the listening.
   */
  onRecovered(fn: () => void): () => void {
    this.recoveredListeners.add(fn);
    return () => this.recoveredListeners.delete(fn);
  }

  /** The User-Agent header of every request (defaultUserAgent unless given). */
  readonly userAgent: string;

  /** The API server's time, from its answers (see ServerClock): what plans compare server-written times with. */
  readonly serverClock = new ServerClock();
  private readonly onDate = (date: string | undefined) => this.serverClock.observe(date);

  /** How this client parses the JSON of some kinds (KubeClientOptions.parsers). */
  private readonly parsers: ReadonlyMap<ResourceType, JsonParser>;

  constructor(source: Credentials | KubeConfig, opts: KubeClientOptions = {}) {
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.parsers = opts.parsers ?? new Map();
    this.userAgent = opts.userAgent ?? defaultUserAgent();
    this.source = source;
    const server = 'getCurrentCluster' in source ? source.getCurrentCluster()?.server : source.server;
    if (!server) throw new Error('kubeconfig has no current cluster: set a current-context');
    this.server = server.replace(/\/+$/, '');
    this.fieldManager = opts.fieldManager ?? 'osc';
  }

  private resolveCredentials(): Promise<Credentials> {
    const source = this.source;
    this.credentials ??=
      'getCurrentCluster' in source
        ? import('./kubeconfig-credentials.ts').then((m) => m.kubeConfigCredentials(source))
        : Promise.resolve(source);
    return this.credentials;
  }

  observe(observer: RequestObserver): void {
    this.observers.push(observer);
  }

  private makeTransport(): Promise<Transport> {
    // TLS material (CA, client certificate) once per client; credentials that rotate (tokens, exec
    // plugins) are applied per request as headers.
    this.transport ??= this.resolveCredentials()
      .then((c) => c.tls())
      .then((tls) => new Transport(new URL(this.server), { tls, requestTimeoutMs: this.requestTimeoutMs, onDate: this.onDate }));
    return this.transport;
  }

  /** Closes pooled connections; open watches end (they reject). */
  async close(): Promise<void> {
    const t = this.transport;
    this.transport = undefined;
    // A transport that could not be made (unusable TLS material) has nothing to close.
    (await t?.catch(() => undefined))?.close();
  }

  /**
   * Closes the pooled connections no request is using, for a caller whose request went silent: what silenced
   * its connection (a black hole, a NAT that forgot it) most likely silenced its idle siblings too, and the
   * next requests should get fresh ones. Requests in flight are left to finish.
   */
  dropIdleConnections(): void {
    void this.transport?.then((t) => t.dropIdleConnections()).catch(() => undefined);
  }

  path(rt: ResourceType, namespace?: string, name?: string, subresource?: string): string {
    let p = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
    if (rt.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
    p += `/${rt.plural}`;
    if (name !== undefined) p += `/${encodeURIComponent(name)}`;
    if (subresource) p += `/${subresource}`;
    return p;
  }

  /** One HTTP exchange with the API server; answers parsed JSON or throws ApiError. */
  async request<R = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<R> {
    const res = await this.send(method, path, opts);
    const body = await res.bytes();
    // Health endpoints answer text/plain; everything else JSON.
    if (!body.length) return undefined as R;
    if (!res.contentType.includes('json')) return body.toString('utf8') as R;
    return (opts.parse ? opts.parse(body) : JSON.parse(body.toString('utf8'))) as R;
  }

  private async send(method: string, path: string, opts: RequestOptions & { dedicated?: boolean }): Promise<Response> {
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const auth = await (await this.resolveCredentials()).headers(url.toString(), method);
    const transport = await this.makeTransport();
    // No accept-encoding: on the loopback or a cluster network, compressing costs both ends more than it saves.
    const headers: Record<string, string> = { ...auth, accept: opts.accept ?? 'application/json' };
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] = opts.contentType ?? 'application/json';
    }
    headers['user-agent'] = this.userAgent;
    let started = performance.now();
    const verb = method === 'GET' && url.searchParams.get('watch') === 'true' ? 'WATCH' : method;
    let status = 0;
    try {
      for (let retries = 0; ; retries++) {
        // A connection that went silent fails the request after requestTimeoutMs and is destroyed, not
        // pooled (a dead keep-alive connection handed to every later request would hang them all); watches
        // have their own idle timer.
        const res = await transport.exchange(url, { method, headers, body, signal: opts.signal, dedicated: opts.dedicated });
        status = res.status;
        if (res.status < 400) return res;
        const text = await res.text();
        // As client-go does: a 429 (API Priority and Fairness shedding load) or a 5xx that says when to come
        // back is retried after that many seconds, up to MAX_RETRY_AFTER times; the server did not act on it.
        const retryAfter = res.retryAfterSeconds;
        if ((res.status === 429 || res.status >= 500) && retryAfter !== undefined && retries < MAX_RETRY_AFTER) {
          this.observed(verb, path, status, started);
          await sleepFor(Math.min(retryAfter, MAX_RETRY_AFTER_SECONDS) * 1000, opts.signal);
          started = performance.now();
          status = 0;
          continue;
        }
        let parsed: { reason?: string; message?: string } | undefined;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        throw new ApiError(res.status, parsed?.reason ?? '', parsed?.message ?? (text || `HTTP ${res.status}`), parsed);
      }
    } finally {
      this.observed(verb, path, status, started, abortKind(opts.signal));
    }
  }

  private observed(verb: string, path: string, status: number, started: number, aborted: false | 'cancelled' | 'deadline' = false): void {
    // No answer, a 5xx or a 429: the API server is (for now) unavailable. The first answer after that tells
    // whoever waits out a backoff that it is back; costs nothing while all is well. A request this process
    // gave up itself (a watch reconnected, a pass cancelled) says nothing about the server: counted as
    // unavailable, the reconnects that recovery itself makes would feed a loop. A deadline that passed with
    // no answer (AbortSignal.timeout: a standby's lease read on a black-holed connection) does say it: left
    // out, a standby never heard of the outage and kept watches that went silent with that connection until
    // their idle timeout (90 s), and took over the lease with those stale caches.
    if (aborted === 'cancelled' && status === 0) {
      // neither way
    } else if (status === 0 || status === 429 || status >= 500) this.unavailable = true;
    else if (this.unavailable) {
      this.unavailable = false;
      const now = performance.now();
      // At most one recovery a second: a server that flaps must not make every watch reconnect each time.
      if (now - this.recoveredAt >= 1000) {
        this.recoveredAt = now;
        for (const fn of [...this.recoveredListeners]) fn();
      }
    }
    const seconds = (performance.now() - started) / 1000;
    const resource = resourceOfPath(path);
    for (const o of this.observers) o(verb, resource, status, seconds);
  }

  async list<T extends KubeObject>(rt: ResourceType<T>, opts: ListOptions<T> = {}): Promise<ObjectList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let meta: ObjectList<T>['metadata'] = {};
    do {
      const page = await this.request<ObjectList<T>>('GET', this.path(rt, opts.namespace), {
        query: {
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
          resourceVersion: cont ? undefined : opts.resourceVersion,
          limit: opts.limit ?? 500,
          continue: cont,
        },
        signal: opts.signal,
        parse: this.parsers.get(rt),
      });
      for (const item of page.items ?? []) {
        // Lists omit apiVersion/kind on items; fill them in so that items look like single GETs.
        item.apiVersion ??= apiVersionOf(rt);
        item.kind ??= rt.kind;
        items.push(opts.map ? opts.map(item) : item);
      }
      meta = page.metadata ?? {};
      cont = meta.continue || undefined;
    } while (cont);
    return { metadata: { resourceVersion: meta.resourceVersion }, items };
  }

  get<T extends KubeObject>(rt: ResourceType<T>, name: string, namespace?: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', this.path(rt, namespace, name), { signal, parse: this.parsers.get(rt) });
  }

  /** Like get, but answers undefined when the object does not exist. */
  async find<T extends KubeObject>(rt: ResourceType<T>, name: string, namespace?: string, signal?: AbortSignal): Promise<T | undefined> {
    try {
      return await this.get(rt, name, namespace, signal);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return undefined;
      throw e;
    }
  }

  /**
   * Hears every object a write of this client answered with (not dry runs): an informer of that kind checks
   * that its watch shows the write, and presumes the watch dead when it does not (src/runtime/informer.ts).
   * Answers a function that stops the listening.
   */
  onWritten(fn: (rt: ResourceType, obj: KubeObject) => void): () => void {
    this.writeListeners.add(fn);
    return () => this.writeListeners.delete(fn);
  }

  /**
   * Hears a request that every cache on this client list again (`relistAll`). Answers a function that stops
   * the listening.
   */
  onRelistRequested(fn: () => void): () => void {
    this.relistListeners.add(fn);
    return () => this.relistListeners.delete(fn);
  }

  /**
   * Tells every informer on this client to list again rather than resume its watch: for whoever restored
   * etcd from a backup (the dev cluster), as the recovery procedure restarts the components that cache the
   * cluster. A watch resumed from a version seen before the restore is not always answered 410 Gone: one that
   * reconnects while kube-apiserver's watch cache is still starting may go on from that version, and the
   * objects the restore took back then never show.
   */
  relistAll(): void {
    for (const fn of [...this.relistListeners]) fn();
  }

  /**
   * An informer's watch was answered 410 Gone. The first one within a minute of the API server answering
   * again after an outage makes every informer list again (once per outage): after an etcd restore, which
   * the process cannot tell from a restart, some watches resume from versions seen before it without a 410
   * and would never show what the restore took back. After a plain restart most watches are answered 410
   * anyway, so the extra lists cost little; a compaction alone, with no outage, relists only the watch it
   * expired.
   */
  watchExpired(): void {
    if (performance.now() - this.recoveredAt > GONE_AFTER_RECOVERY_MS || this.relistedAt === this.recoveredAt) return;
    this.relistedAt = this.recoveredAt;
    this.relistAll();
  }

  private async written<T extends KubeObject>(rt: ResourceType<T>, opts: WriteOptions, answer: Promise<T>): Promise<T> {
    const obj = await answer;
    if (!opts.dryRun && obj?.metadata?.name && obj.metadata.resourceVersion) for (const fn of this.writeListeners) fn(rt, obj);
    return obj;
  }

  create<T extends KubeObject>(rt: ResourceType<T>, obj: T, opts: WriteOptions = {}): Promise<T> {
    const ns = opts.namespace ?? obj.metadata.namespace;
    return this.written(
      rt,
      opts,
      this.request<T>('POST', this.path(rt, ns), {
        body: { apiVersion: apiVersionOf(rt), kind: rt.kind, ...obj },
        query: this.writeQuery(opts),
        signal: opts.signal,
        parse: this.parsers.get(rt),
      }),
    );
  }

  /** PUT with the object's resourceVersion: fails with 409 Conflict if someone else wrote first. */
  update<T extends KubeObject>(rt: ResourceType<T>, obj: T, opts: WriteOptions & { subresource?: string } = {}): Promise<T> {
    const ns = opts.namespace ?? obj.metadata.namespace;
    return this.written(
      rt,
      opts,
      this.request<T>('PUT', this.path(rt, ns, obj.metadata.name, opts.subresource), {
        body: { apiVersion: apiVersionOf(rt), kind: rt.kind, ...obj },
        query: this.writeQuery(opts),
        signal: opts.signal,
        parse: this.parsers.get(rt),
      }),
    );
  }

  updateStatus<T extends KubeObject>(rt: ResourceType<T>, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.update(rt, obj, { ...opts, subresource: 'status' });
  }

  patch<T extends KubeObject>(
    rt: ResourceType<T>,
    name: string,
    patch: unknown,
    opts: WriteOptions & { type?: PatchType; subresource?: string; force?: boolean } = {},
  ): Promise<T> {
    const type = opts.type ?? 'merge';
    return this.written(
      rt,
      opts,
      this.request<T>('PATCH', this.path(rt, opts.namespace, name, opts.subresource), {
        body: patch,
        contentType: patchContentType[type],
        query: { ...this.writeQuery(opts), force: type === 'apply' ? (opts.force ?? true) : undefined },
        signal: opts.signal,
        parse: this.parsers.get(rt),
      }),
    );
  }

  /** Server-side apply of a whole object under osc's field manager. */
  apply<T extends KubeObject>(rt: ResourceType<T>, obj: T, opts: WriteOptions = {}): Promise<T> {
    const ns = opts.namespace ?? obj.metadata.namespace;
    const body = { apiVersion: apiVersionOf(rt), kind: rt.kind, ...obj };
    return this.patch(rt, objectName(obj), body, { ...opts, namespace: ns, type: 'apply' });
  }

  /** Deletes; answers false when the object was already gone. */
  async delete(
    rt: ResourceType,
    name: string,
    opts: {
      namespace?: string;
      propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
      gracePeriodSeconds?: number;
      /** Delete only this very object (a 409 if the name now belongs to another, or it changed). */
      preconditions?: { uid?: string; resourceVersion?: string };
      signal?: AbortSignal;
    } = {},
  ): Promise<boolean> {
    try {
      await this.request('DELETE', this.path(rt, opts.namespace, name), {
        body: {
          kind: 'DeleteOptions',
          apiVersion: 'v1',
          propagationPolicy: opts.propagationPolicy ?? 'Background',
          gracePeriodSeconds: opts.gracePeriodSeconds,
          preconditions: opts.preconditions,
        },
        signal: opts.signal,
      });
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return false;
      throw e;
    }
  }

  /**
   * Streams watch events to onEvent until the server ends the stream (resolves) or it fails (rejects:
   * ApiError, WatchIdleError, network errors, or the abort reason).
   */
  async watch<T extends KubeObject>(rt: ResourceType<T>, opts: WatchOptions, onEvent: (ev: WatchEvent<T>) => void): Promise<void> {
    const controller = new AbortController();
    const abortFromCaller = () => controller.abort(opts.signal?.reason);
    opts.signal?.addEventListener('abort', abortFromCaller, { once: true });
    if (opts.signal?.aborted) abortFromCaller();
    // One timer, restarted by each chunk (refresh() moves its start; no new timer per chunk).
    const idleTimer = opts.idleTimeoutMs
      ? setTimeout(() => controller.abort(new WatchIdleError(opts.idleTimeoutMs ?? 0)), opts.idleTimeoutMs)
      : undefined;
    let res: Response | undefined;
    try {
      // Each watch owns its connection, closed with the watch: a pooled keep-alive connection would be
      // handed, possibly dead and silent, to the next request.
      res = await this.send('GET', this.path(rt, opts.namespace), {
        dedicated: true,
        query: {
          watch: true,
          allowWatchBookmarks: true,
          resourceVersion: opts.resourceVersion,
          labelSelector: opts.labelSelector,
          fieldSelector: opts.fieldSelector,
          timeoutSeconds: opts.timeoutSeconds,
        },
        signal: controller.signal,
      });
      idleTimer?.refresh();
      const lines = new LineReader();
      const parse = this.parsers.get(rt);
      const onLine = (line: Buffer) => onEvent((parse ? parse(line) : JSON.parse(line.toString('utf8'))) as WatchEvent<T>);
      await res.each((chunk) => {
        idleTimer?.refresh();
        lines.pushBytes(chunk, onLine);
      });
    } catch (e) {
      if (controller.signal.aborted) throw controller.signal.reason ?? e;
      throw e;
    } finally {
      clearTimeout(idleTimer);
      opts.signal?.removeEventListener('abort', abortFromCaller);
      controller.abort();
      res?.destroy();
    }
  }

  private writeQuery(opts: WriteOptions): Record<string, string | undefined> {
    return { fieldManager: opts.fieldManager ?? this.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
  }
}

/** "/apis/g/v/namespaces/ns/things/x/status" -> "things" (a low-cardinality metrics label). */
function resourceOfPath(path: string): string {
  const parts = path.split('?')[0]?.split('/').filter(Boolean) ?? [];
  const start = parts[0] === 'api' ? 2 : 3;
  const rest = parts.slice(start);
  if (rest[0] === 'namespaces' && rest.length > 2) return rest[2] ?? 'namespaces';
  return rest[0] ?? 'unknown';
}
