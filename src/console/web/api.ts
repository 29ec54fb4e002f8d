import { useEffect, useState } from 'preact/hooks';
import type { KataConfigSpec, KataConfigStatus } from '../../api/kataconfig.ts';
import type { Status } from './model.ts';

/** Every request the page makes to its own server: the session cookie goes along, writes carry the CSRF header. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<{ ok: boolean; status: number; body: T }> {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { 'x-osc-console': '1', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // plain text
  }
  return { ok: res.ok, status: res.status, body: parsed as T };
}

/** A Kubernetes API request through the console, as the kubeconfig user. */
export const kube = <T = unknown>(method: string, path: string, body?: unknown) => api<T>(method, `/k8s${path}`, body);

export const statusMessage = (s: unknown, code: number): string =>
  (s as Status | undefined)?.message ?? (typeof s === 'string' && s ? s : `HTTP ${code}`);

export interface KubeObj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: unknown;
  };
  // biome-ignore lint/suspicious/noExplicitAny: objects of every kind pass through here; pages read what they show
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: see spec
  status?: any;
}

/** A KataConfig as the console reads it: the spec and status are the API's own types (src/api). */
export interface KataConfigObj extends Omit<KubeObj, 'spec' | 'status'> {
  spec?: KataConfigSpec;
  status?: KataConfigStatus;
}

export interface WatchState<T> {
  items: T[];
  synced: boolean;
  /** Why the list or watch failed (e.g. forbidden, not found); cleared on the next success. */
  error: string;
  code: number;
}

const keyOf = (o: KubeObj) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/**
 * Whether the page is connected: to its own server (a heartbeat, and every request that fails to reach
 * it) and, through it, to the API server (the lists and watches). While either is gone, what the page
 * shows is only what was last known, and the shell says so and disables the actions.
 */
export interface Link {
  connected: boolean;
  /** What is gone, in words; empty when connected. */
  reason: string;
  /** When the link changed last (ms since the epoch). */
  since: number;
  /** Bumped on every reconnect, so that pages re-read what they read once. */
  epoch: number;
}

const up = { console: true, api: true };
const why = { console: '', api: '' };
let link: Link = { connected: true, reason: '', since: Date.now(), epoch: 0 };
const linkListeners = new Set<(l: Link) => void>();

/** Records what a request found out about the console server or the API server behind it. */
export function reportLink(part: 'console' | 'api', ok: boolean, reason = ''): void {
  if (up[part] === ok && (ok || why[part] === reason)) return;
  up[part] = ok;
  why[part] = ok ? '' : reason;
  const connected = up.console && up.api;
  if (connected === link.connected && link.reason === (why.console || why.api)) return;
  link = { connected, reason: why.console || why.api, since: Date.now(), epoch: link.epoch + (connected ? 1 : 0) };
  for (const f of linkListeners) f(link);
}

export function useLink(): Link {
  const [state, setState] = useState(link);
  useEffect(() => {
    linkListeners.add(setState);
    setState(link);
    return () => {
      linkListeners.delete(setState);
    };
  }, []);
  return state;
}

export const CONSOLE_GONE = 'the console server does not answer: is "osc console" (or "npm start") still running?';
/** A console restarted since the page opened has a new token, which this page's cookie is not. */
export const CONSOLE_NEW_TOKEN = 'the console was restarted with a new token: open the URL it printed';

/** An API request the console could not pass on: the API server is unreachable, not refusing. */
const unreachable = (code: number) => code === 502 || code === 503 || code === 504;

/** Resolves after `ms`, or at once when the link comes back (a reconnect re-lists without waiting out a backoff). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      linkListeners.delete(onLink);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const onLink = (l: Link) => {
      if (l.connected) done();
    };
    const t = setTimeout(done, ms);
    linkListeners.add(onLink);
    signal.addEventListener('abort', done);
  });
}

/** Asks the console server every few seconds whether it is still there (faster while it is not). */
export function useHeartbeat(): void {
  const l = useLink();
  useEffect(() => {
    let live = true;
    const beat = async () => {
      try {
        const r = await fetch('/console/info', { credentials: 'same-origin', cache: 'no-store' });
        if (live) reportLink('console', r.ok, r.status === 401 ? CONSOLE_NEW_TOKEN : `the console server answered ${r.status}`);
      } catch {
        if (live) reportLink('console', false, CONSOLE_GONE);
      }
    };
    const t = setInterval(beat, l.connected ? 5000 : 1500);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [l.connected]);
}

/**
 * A live list: list, then watch from its resourceVersion, applying each event; when the watch ends or
 * fails, list again. The server passes the watch through; nothing is cached between pages.
 *
 * Components asking for the same list share one stream: a browser keeps at most six connections to the
 * console, and every watch holds one for as long as it runs, so a page with six watches would leave no
 * connection for a write (a Delete that never leaves the browser).
 */
export function useWatch<T extends KubeObj>(path: string | null, query = ''): WatchState<T> {
  const [state, setState] = useState<WatchState<T>>(EMPTY_WATCH as WatchState<T>);
  useEffect(() => {
    setState(EMPTY_WATCH as WatchState<T>);
    if (!path) return;
    return subscribe(`${path}?${query}`, path, query, setState as (s: WatchState<KubeObj>) => void);
  }, [path, query]);
  return state;
}

const EMPTY_WATCH: WatchState<KubeObj> = { items: [], synced: false, error: '', code: 0 };

interface SharedWatch {
  listeners: Set<(s: WatchState<KubeObj>) => void>;
  last: WatchState<KubeObj>;
  ac: AbortController;
}

const sharedWatches = new Map<string, SharedWatch>();

/** Joins (or starts) the stream of one list; answers how to leave it (the last one to leave ends it). */
function subscribe(key: string, path: string, query: string, listener: (s: WatchState<KubeObj>) => void): () => void {
  let w = sharedWatches.get(key);
  if (!w) {
    const created: SharedWatch = { listeners: new Set(), last: EMPTY_WATCH, ac: new AbortController() };
    sharedWatches.set(key, created);
    const set = (st: WatchState<KubeObj>) => {
      created.last = st;
      for (const l of created.listeners) l(st);
    };
    runWatch(path, query, created.ac.signal, set);
    w = created;
  }
  const shared = w;
  shared.listeners.add(listener);
  if (shared.last !== EMPTY_WATCH) listener(shared.last);
  return () => {
    shared.listeners.delete(listener);
    if (shared.listeners.size > 0) return;
    shared.ac.abort();
    sharedWatches.delete(key);
  };
}

function runWatch(path: string, query: string, signal: AbortSignal, setState: (s: WatchState<KubeObj>) => void): void {
  const store = new Map<string, KubeObj>();
  let pending = false;
  const publish = () => {
    if (pending) return;
    pending = true;
    // Many events in one frame (a thousand nodes) render once.
    requestAnimationFrame(() => {
      pending = false;
      if (!signal.aborted) setState({ items: [...store.values()], synced: true, error: '', code: 200 });
    });
  };
  const q = query ? `${query}&` : '';
  (async () => {
    let failures = 0;
    while (!signal.aborted) {
      try {
        let res: Response;
        try {
          res = await fetch(`/k8s${path}?${q}`, { signal, credentials: 'same-origin' });
        } catch (e) {
          if (!signal.aborted) reportLink('console', false, CONSOLE_GONE);
          throw e;
        }
        const list = await res.json();
        reportLink('console', res.status !== 401, CONSOLE_NEW_TOKEN);
        if (unreachable(res.status)) reportLink('api', false, statusMessage(list, res.status));
        else reportLink('api', true);
        if (!res.ok) {
          setState({ items: [], synced: true, error: statusMessage(list, res.status), code: res.status });
          throw new Error('list failed');
        }
        store.clear();
        for (const it of list.items ?? []) store.set(keyOf(it), it);
        publish();
        const w = await fetch(`/k8s${path}?${q}watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`, {
          signal,
          credentials: 'same-origin',
        });
        if (!w.ok || !w.body) throw new Error(`watch answered ${w.status}`);
        failures = 0;
        const reader = w.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const line = buf.slice(0, nl).trim();
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const ev = JSON.parse(line) as { type: string; object: KubeObj };
            if (ev.type === 'ERROR') throw new Error('watch expired');
            if (ev.type === 'BOOKMARK') continue;
            if (ev.type === 'DELETED') store.delete(keyOf(ev.object));
            else store.set(keyOf(ev.object), ev.object);
            publish();
          }
        }
      } catch {
        if (signal.aborted) return;
        failures++;
        await pause(Math.min(5000, 250 * 2 ** failures), signal);
      }
    }
  })();
}

/** A one-off GET. */
export function useGet<T>(path: string | null): { data: T | undefined; error: string; code: number } {
  const { epoch } = useLink();
  const [state, setState] = useState<{ data: T | undefined; error: string; code: number }>({ data: undefined, error: '', code: 0 });
  useEffect(() => {
    if (!path) return;
    let live = true;
    api<T>('GET', path)
      .then(
        (r) =>
          live &&
          setState(
            r.ok
              ? { data: r.body, error: '', code: r.status }
              : { data: undefined, error: statusMessage(r.body, r.status), code: r.status },
          ),
      )
      .catch((e) => live && setState({ data: undefined, error: String(e), code: 0 }));
    return () => {
      live = false;
    };
  }, [path, epoch]);
  return state;
}

/** Re-renders every `ms` (ages, lease freshness). */
export function useTick(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export const go = (path: string) => {
  location.hash = `#/${path}`;
};

/** What the console server says about itself and the cluster (`GET /console/info`). */
export interface ConsoleInfo {
  version: string;
  context: string;
  user: string;
  server: string;
  prometheus: string;
  /** Why there is no Prometheus (yet). */
  prometheusNote: string;
  localOperator?: { where: string; identity: string; ready: boolean; metricsUrl: string };
}
