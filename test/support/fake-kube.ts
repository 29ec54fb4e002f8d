/**
 * A stand-in Kubernetes API for the console's browser tests that need states a real rollout reaches only
 * slowly or never (a 12-node uninstall half done, a dead end, 1,000 nodes): lists and watches of objects
 * the test sets, and a record of every write the console sent. It answers like the API server does
 * (List objects with a resourceVersion, one JSON event per line on a watch), and nothing more.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

// biome-ignore lint/suspicious/noExplicitAny: objects of any kind, as the test writes them
type Obj = { metadata: { name: string; namespace?: string; resourceVersion?: string; [k: string]: unknown }; [k: string]: any };

interface Watcher {
  res: ServerResponse;
  namespace?: string;
  name?: string;
}

/** `/api/v1/namespaces/default/pods/x` → resource `/api/v1/pods`, namespace default, name x. */
function parsePath(pathname: string): { resource: string; namespace?: string; name?: string } {
  const parts = pathname.split('/').filter(Boolean);
  const prefix = parts[0] === 'api' ? parts.slice(0, 2) : parts.slice(0, 3);
  let rest = parts.slice(prefix.length);
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  return { resource: `/${[...prefix, rest[0]].join('/')}`, namespace, name: rest[1] };
}

export class FakeKube {
  private server: Server | undefined;
  private rv = 1;
  private readonly store = new Map<string, Map<string, Obj>>();
  private readonly watchers = new Map<string, Set<Watcher>>();
  /**
   * Every event, per resource, so that a watch from a list's resourceVersion is told what happened between
   * the list and the watch, as the API server does. Without it a change made in that gap is lost for good.
   */
  private readonly history = new Map<string, { rv: number; type: string; object: Obj }[]>();
  /** Every write the console sent: method, path and body. */
  readonly writes: { method: string; path: string; body: unknown }[] = [];
  /** Answers for writes, by `METHOD path`; default: 201 with the body (POST), 200 (DELETE). */
  readonly answers = new Map<string, { code: number; body: unknown }>();
  port = 0;

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch(() => res.destroy());
    });
    await new Promise<void>((r) => this.server?.listen(port, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Ends every watch and stops answering, like an API server that went away. */
  async stop(): Promise<void> {
    for (const set of this.watchers.values()) for (const w of set) w.res.destroy();
    this.watchers.clear();
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    this.server = undefined;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: `http://127.0.0.1:${this.port}`, skipTLSVerify: true }],
      users: [{ name: 'fake-admin' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'fake-admin' }],
      currentContext: 'fake',
    });
    return kc;
  }

  /** Creates or replaces objects of a resource (`/api/v1/nodes`), telling the watchers. */
  set(resource: string, ...objects: Obj[]): void {
    const m = this.collection(resource);
    for (const o of objects) {
      const key = `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      const type = m.has(key) ? 'MODIFIED' : 'ADDED';
      const stored = { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } };
      m.set(key, stored);
      this.tell(resource, type, stored);
    }
  }

  remove(resource: string, name: string, namespace?: string): void {
    const m = this.collection(resource);
    const key = `${namespace ?? ''}/${name}`;
    const o = m.get(key);
    if (!o) return;
    m.delete(key);
    this.tell(resource, 'DELETED', { ...o, metadata: { ...o.metadata, resourceVersion: String(++this.rv) } });
  }

  /** Removes every object of a resource (a test starts from nothing). */
  clear(resource: string): void {
    for (const o of [...this.collection(resource).values()]) this.remove(resource, o.metadata.name, o.metadata.namespace);
  }

  get(resource: string, name: string, namespace?: string): Obj | undefined {
    return this.collection(resource).get(`${namespace ?? ''}/${name}`);
  }

  /** Open watches on every resource: each holds one of the browser's six connections to the console. */
  openWatches(): number {
    let n = 0;
    for (const set of this.watchers.values()) n += set.size;
    return n;
  }

  /** Open watches on a resource (a test waits for the page to watch before it changes things). */
  watching(resource: string): number {
    return this.watchers.get(resource)?.size ?? 0;
  }

  private collection(resource: string): Map<string, Obj> {
    let m = this.store.get(resource);
    if (!m) this.store.set(resource, (m = new Map()));
    return m;
  }

  private tell(resource: string, type: string, object: Obj): void {
    let events = this.history.get(resource);
    if (!events) this.history.set(resource, (events = []));
    events.push({ rv: Number(object.metadata.resourceVersion), type, object });
    for (const w of this.watchers.get(resource) ?? []) send(w, type, object);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const { resource, namespace, name: pathName } = parsePath(url.pathname);
    const method = req.method ?? 'GET';
    const json = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (method !== 'GET') {
      let text = '';
      for await (const chunk of req) text += chunk;
      const body = text ? JSON.parse(text) : undefined;
      this.writes.push({ method, path: url.pathname, body });
      const answer = this.answers.get(`${method} ${url.pathname}`);
      if (answer) return json(answer.code, answer.body);
      if (method === 'POST') {
        this.set(resource, { ...body, metadata: { ...body.metadata, namespace } });
        return json(201, body);
      }
      if (method === 'DELETE' && pathName) {
        this.remove(resource, pathName, namespace);
        return json(200, { kind: 'Status', status: 'Success' });
      }
      return json(405, { kind: 'Status', code: 405, message: `${method} not faked` });
    }
    const nameSelector = /metadata\.name=([^,]+)/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
    const name = pathName ?? nameSelector;
    if (pathName && !url.searchParams.has('watch')) {
      const o = this.get(resource, pathName, namespace);
      return o ? json(200, o) : json(404, { kind: 'Status', code: 404, reason: 'NotFound', message: `"${pathName}" not found` });
    }
    if (url.searchParams.get('watch') === '1' || url.searchParams.get('watch') === 'true') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      let set = this.watchers.get(resource);
      if (!set) this.watchers.set(resource, (set = new Set()));
      const w: Watcher = { res, namespace, name };
      const since = Number(url.searchParams.get('resourceVersion') ?? '');
      if (since > 0) for (const ev of this.history.get(resource) ?? []) if (ev.rv > since) send(w, ev.type, ev.object);
      set.add(w);
      res.on('close', () => set.delete(w));
      return;
    }
    const items = [...this.collection(resource).values()].filter(
      (o) => (!namespace || o.metadata.namespace === namespace) && (!name || o.metadata.name === name),
    );
    json(200, { kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
  }
}

function send(w: Watcher, type: string, object: Obj): void {
  if (w.namespace && object.metadata.namespace !== w.namespace) return;
  if (w.name && object.metadata.name !== w.name) return;
  w.res.write(`${JSON.stringify({ type, object })}\n`);
}
