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
 * A live list: list, then watch from its resourceVersion, applying each event; when the watch ends or
 * fails, list again. The server passes the watch through; nothing is cached between pages.
 */
export function useWatch<T extends KubeObj>(path: string | null, query = ''): WatchState<T> {
  const [state, setState] = useState<WatchState<T>>({ items: [], synced: false, error: '', code: 0 });
  useEffect(() => {
    setState({ items: [], synced: false, error: '', code: 0 });
    if (!path) return;
    const ac = new AbortController();
    const store = new Map<string, T>();
    let pending = false;
    const publish = () => {
      if (pending) return;
      pending = true;
      // Many events in one frame (a thousand nodes) render once.
      requestAnimationFrame(() => {
        pending = false;
        if (!ac.signal.aborted) setState({ items: [...store.values()], synced: true, error: '', code: 200 });
      });
    };
    const q = query ? `${query}&` : '';
    (async () => {
      let failures = 0;
      while (!ac.signal.aborted) {
        try {
          const res = await fetch(`/k8s${path}?${q}`, { signal: ac.signal, credentials: 'same-origin' });
          const list = await res.json();
          if (!res.ok) {
            setState({ items: [], synced: true, error: statusMessage(list, res.status), code: res.status });
            throw new Error('list failed');
          }
          store.clear();
          for (const it of list.items ?? []) store.set(keyOf(it), it);
          publish();
          const w = await fetch(`/k8s${path}?${q}watch=1&allowWatchBookmarks=true&resourceVersion=${list.metadata.resourceVersion}`, {
            signal: ac.signal,
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
              const ev = JSON.parse(line) as { type: string; object: T };
              if (ev.type === 'ERROR') throw new Error('watch expired');
              if (ev.type === 'BOOKMARK') continue;
              if (ev.type === 'DELETED') store.delete(keyOf(ev.object));
              else store.set(keyOf(ev.object), ev.object);
              publish();
            }
          }
        } catch {
          if (ac.signal.aborted) return;
          failures++;
          await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** failures)));
        }
      }
    })();
    return () => ac.abort();
  }, [path, query]);
  return state;
}

/** A one-off GET. */
export function useGet<T>(path: string | null): { data: T | undefined; error: string; code: number } {
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
  }, [path]);
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
