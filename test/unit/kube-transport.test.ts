import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KubeClient, WatchIdleError } from '../../src/kube/client.ts';
import type { Credentials } from '../../src/kube/credentials.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { type CertificateAuthority, createCA, issueCert, type KeyPairPem } from '../../src/kube/pki.ts';
import { ConfigMaps } from '../../src/kube/resources.ts';
import { LineReader, RequestTimeoutError, TransportClosedError } from '../../src/kube/transport.ts';
import { waitFor } from '../support/wait.ts';

/**
 * The REST client's HTTP exchange against a local TLS server that stands in for the network, not for the
 * API server: it answers what each test tells it to, and counts the connections the client opens.
 */
class TestServer {
  readonly server: Server;
  readonly sockets = new Set<Socket>();
  connections = 0;
  readonly requests: IncomingMessage[] = [];
  /** The next requests are handled here; by default a ConfigMap list. */
  handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => json(res, 200, { kind: 'ConfigMapList', items: [] });

  constructor(tls: KeyPairPem, ca: CertificateAuthority) {
    // Client certificates are required: the client must present the ones from its credentials.
    this.server = createServer({ cert: tls.certPem, key: tls.keyPem, ca: ca.certPem, requestCert: true, rejectUnauthorized: true });
    // Like the API server, no keep-alive hint: Node's client would otherwise time its idle connections by it.
    this.server.keepAliveTimeout = 0;
    this.server.on('secureConnection', (s) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server.on('request', (req, res) => {
      this.requests.push(req);
      this.handler(req, res);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `https://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

describe('KubeClient over node:https', () => {
  let ca: CertificateAuthority;
  let srv: TestServer;
  let server: string;
  let creds: Credentials;
  let token = 'first';
  const clients: KubeClient[] = [];
  const client = (opts: { requestTimeoutMs?: number; userAgent?: string } = {}, c: Credentials = creds) => {
    const k = new KubeClient(c, opts);
    clients.push(k);
    return k;
  };

  before(async () => {
    ca = await createCA('test-ca');
    const serving = await issueCert(ca, { commonName: 'localhost', ipAddresses: ['127.0.0.1'], usage: 'server' });
    const user = await issueCert(ca, { commonName: 'tester', usage: 'client' });
    srv = new TestServer(serving, ca);
    server = await srv.listen();
    creds = {
      server,
      tls: async () => ({ ca: ca.certPem, cert: user.certPem, key: user.keyPem }),
      headers: async () => ({ authorization: `Bearer ${token}` }),
    };
  });
  after(async () => {
    for (const k of clients) await k.close();
    await srv.close();
  });
  const reset = () => {
    srv.handler = (_req, res) => json(res, 200, { kind: 'ConfigMapList', items: [] });
    srv.requests.length = 0;
  };

  test('verifies the server with the CA, presents the client certificate, reuses one connection, and sends the current token', async () => {
    reset();
    const k = client();
    const before = srv.connections;
    await k.list(ConfigMaps, { namespace: 'a' });
    token = 'rotated';
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(srv.connections - before, 1, 'the second request reused the pooled connection');
    assert.deepEqual(
      srv.requests.map((r) => r.headers.authorization),
      ['Bearer first', 'Bearer rotated'],
    );
    // Compression is not asked for: on a loopback or a cluster network it costs both ends more than it saves.
    assert.equal(srv.requests[0]?.headers['accept-encoding'], undefined);
    assert.equal(srv.requests[0]?.headers.accept, 'application/json');

    // Without the CA, the server's certificate is not trusted: verification is on unless turned off.
    const untrusted = client({}, { ...creds, tls: async () => ({ cert: (await creds.tls()).cert, key: (await creds.tls()).key }) });
    await assert.rejects(untrusted.list(ConfigMaps, { namespace: 'a' }), (e: NodeJS.ErrnoException) => {
      assert.match(String(e.code), /UNABLE_TO_VERIFY|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
      return true;
    });
  });

  test('a 429 with Retry-After (API Priority and Fairness) is retried after that many seconds, as client-go does; without it, it fails', async () => {
    reset();
    const k = client();
    let n = 0;
    const at: number[] = [];
    srv.handler = (_req, res) => {
      at.push(performance.now());
      if (n++ < 2) {
        res.setHeader('retry-after', '1');
        return json(res, 429, { kind: 'Status', reason: 'TooManyRequests', message: 'too many requests, please try again later' });
      }
      json(res, 200, { kind: 'ConfigMapList', items: [] });
    };
    const seen: number[] = [];
    k.observe((_verb, _resource, status) => seen.push(status));
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(srv.requests.length, 3, 'two 429s, then the answer');
    assert.ok((at[1] ?? 0) - (at[0] ?? 0) >= 950 && (at[2] ?? 0) - (at[1] ?? 0) >= 950, 'a second between attempts');
    assert.deepEqual(seen, [429, 429, 200], 'each attempt counted');
    // A 5xx that says when to come back is retried too; a 429 without Retry-After is the caller's error.
    reset();
    n = 0;
    srv.handler = (_req, res) => {
      if (n++ === 0) {
        res.setHeader('retry-after', '0');
        return json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'shutting down' });
      }
      json(res, 200, { kind: 'ConfigMapList', items: [] });
    };
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(srv.requests.length, 2);
    reset();
    srv.handler = (_req, res) => json(res, 429, { kind: 'Status', reason: 'TooManyRequests', message: 'slow down' });
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }), (e: ApiError) => e.status === 429);
    assert.equal(srv.requests.length, 1);
    // Aborted while it waits: the wait ends at once.
    reset();
    srv.handler = (_req, res) => {
      res.setHeader('retry-after', '30');
      json(res, 429, { kind: 'Status', reason: 'TooManyRequests', message: 'slow down' });
    };
    const ac = new AbortController();
    const started = performance.now();
    const pending = k.list(ConfigMaps, { namespace: 'a', signal: ac.signal });
    await waitFor(() => srv.requests.length === 1);
    ac.abort();
    await assert.rejects(pending);
    assert.ok(performance.now() - started < 5000);
  });

  test('onRecovered: told once when an answer follows a request that found the server unavailable, never while all is well', async () => {
    reset();
    const k = client();
    let recovered = 0;
    k.onRecovered(() => recovered++);
    await k.list(ConfigMaps, { namespace: 'a' });
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(recovered, 0);
    srv.handler = (_req, res) => json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'starting' });
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }));
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }));
    reset();
    await k.list(ConfigMaps, { namespace: 'a' });
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(recovered, 1);
    // A refusal (4xx other than 429) says nothing about the server's health.
    srv.handler = (_req, res) => json(res, 404, { kind: 'Status', reason: 'NotFound', message: 'nope' });
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }));
    reset();
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(recovered, 1);
    // Nor does a request this process gave up itself (a watch reconnected): no loop of reconnects.
    srv.handler = () => {};
    const ac = new AbortController();
    const pending = k.list(ConfigMaps, { namespace: 'a', signal: ac.signal });
    await waitFor(() => srv.requests.length > 0);
    ac.abort();
    await assert.rejects(pending);
    reset();
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(recovered, 1);
    // A deadline that passed with no answer (a lease read on a black-holed connection) is the server not
    // answering: the next answer is a recovery, and the watches open since then are reconnected.
    srv.handler = () => {};
    // (1 s: recoveries come at most one a second.)
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a', signal: AbortSignal.timeout(1000) }), { name: 'TimeoutError' });
    reset();
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(recovered, 2);
  });

  test('a watch answered 410 Gone soon after an outage makes every cache list again, once per outage; one with no outage before it does not', async () => {
    reset();
    const k = client();
    let relists = 0;
    k.onRelistRequested(() => relists++);
    await k.list(ConfigMaps, { namespace: 'a' });
    k.watchExpired(); // a compaction: no outage before it
    assert.equal(relists, 0);
    srv.handler = (_req, res) => json(res, 503, { kind: 'Status', reason: 'ServiceUnavailable', message: 'starting' });
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }));
    reset();
    await k.list(ConfigMaps, { namespace: 'a' }); // the API server is back (an etcd restore, or a restart)
    k.watchExpired();
    k.watchExpired(); // the other informers' 410s of the same outage
    assert.equal(relists, 1);
  });

  test('every request says which osc it comes from in its User-Agent: the version and the pod (or host) name', async () => {
    reset();
    await client().list(ConfigMaps, { namespace: 'a' });
    assert.match(srv.requests[0]?.headers['user-agent'] ?? '', /^osc\/\d+\.\d+\.\d+\S* \(\S+\)$/);
    const previous = process.env.POD_NAME;
    process.env.POD_NAME = 'osc-controller-manager-7d9f-x2x4k';
    try {
      await client().list(ConfigMaps, { namespace: 'a' });
    } finally {
      if (previous === undefined) delete process.env.POD_NAME;
      else process.env.POD_NAME = previous;
    }
    assert.match(srv.requests[1]?.headers['user-agent'] ?? '', /^osc\/\S+ \(osc-controller-manager-7d9f-x2x4k\)$/);
    await client({ userAgent: 'osc/test (replica-a)' }).list(ConfigMaps, { namespace: 'a' });
    assert.equal(srv.requests[2]?.headers['user-agent'], 'osc/test (replica-a)');
  });

  test('bodies: JSON when the content type says so, else text, empty as undefined; statuses >= 400 as ApiError', async () => {
    reset();
    const k = client();
    srv.handler = (req, res) => {
      if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      } else if (req.url === '/empty') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end();
      } else if (req.method === 'POST') {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (c) => (body += c));
        req.on('end', () => json(res, 201, { echoed: JSON.parse(body), type: req.headers['content-type'] }));
      } else if (req.url === '/plain-error') {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('boom');
      } else json(res, 404, { kind: 'Status', reason: 'NotFound', message: 'configmaps "x" not found' });
    };
    assert.equal(await k.request('GET', '/healthz'), 'ok');
    assert.equal(await k.request('GET', '/empty'), undefined);
    assert.deepEqual(await k.request('POST', '/echo', { body: { a: 'ü' } }), { echoed: { a: 'ü' }, type: 'application/json' });
    assert.equal(await k.find(ConfigMaps, 'x', 'a'), undefined, 'find answers undefined on 404');
    await assert.rejects(k.get(ConfigMaps, 'x', 'a'), (e) => {
      assert.ok(e instanceof ApiError);
      assert.deepEqual([e.status, e.reason, e.message], [404, 'NotFound', 'configmaps "x" not found']);
      return true;
    });
    await assert.rejects(k.request('GET', '/plain-error'), (e) => e instanceof ApiError && e.status === 500 && e.message === 'boom');
  });

  test('a request on a connection gone silent fails after the request timeout; its connection is destroyed and the next request gets a fresh one', async () => {
    reset();
    const k = client({ requestTimeoutMs: 300 });
    await k.list(ConfigMaps, { namespace: 'a' }); // a pooled keep-alive connection now exists
    const [pooled] = [...srv.sockets].filter((s) => srv.requests.at(-1)?.socket === s);
    assert.ok(pooled, 'the pooled connection is open');
    const connections = srv.connections;
    srv.handler = () => {}; // the server stops answering, the connection stays open
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a' }), RequestTimeoutError);
    await waitFor(() => pooled.destroyed, { message: 'the silent connection was closed by the client' });
    reset();
    await k.list(ConfigMaps, { namespace: 'a' });
    assert.equal(srv.connections, connections + 1, 'the next request opened a new connection');
  });

  test("a caller's deadline (AbortSignal.timeout) passing on a silent connection closes its idle siblings too: the next request gets a fresh one", async () => {
    reset();
    const k = client();
    // Two pooled keep-alive connections, both idle afterwards.
    let release: () => void = () => {};
    const held = new Promise<void>((r) => (release = r));
    srv.handler = (_req, res) => void held.then(() => json(res, 200, { kind: 'ConfigMapList', items: [] }));
    const both = Promise.all([k.list(ConfigMaps, { namespace: 'a' }), k.list(ConfigMaps, { namespace: 'b' })]);
    await waitFor(() => srv.requests.length === 2, { message: 'two requests in flight' });
    release();
    await both;
    const idle = [...new Set(srv.requests.slice(-2).map((r) => r.socket))];
    assert.equal(idle.length, 2, 'two connections in the pool');
    const connections = srv.connections;
    srv.handler = () => {}; // every connection goes silent, as behind a black hole
    // (1 s: recoveries come at most one a second.)
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a', signal: AbortSignal.timeout(1000) }), { name: 'TimeoutError' });
    await waitFor(() => idle.every((s) => s.destroyed), {
      timeoutMs: 3000,
      message: 'the idle sibling was closed as well (not left to the pool’s 30 s idle timeout)',
    });
    reset();
    await k.list(ConfigMaps, { namespace: 'a', signal: AbortSignal.timeout(5000) });
    assert.equal(srv.connections, connections + 1, 'the next request opened a new connection, not a dead idle one');
  });

  test("a server's keep-alive hint shortens how long a free connection is kept, not how long a request may wait", async () => {
    reset();
    const k = client();
    // Node's pool times a free connection out a second before the hinted 2 s; a reused connection must get
    // the request timeout back, or this answer, 1.5 s late, would be given up.
    srv.handler = (_req, res) => {
      res.setHeader('keep-alive', 'timeout=2');
      json(res, 200, { kind: 'ConfigMapList', items: [] });
    };
    await k.list(ConfigMaps, { namespace: 'a' });
    const connections = srv.connections;
    srv.handler = (_req, res) => setTimeout(() => json(res, 200, { kind: 'ConfigMapList', items: [{ metadata: { name: 'late' } }] }), 1500);
    const list = await k.list(ConfigMaps, { namespace: 'a' });
    assert.deepEqual(
      list.items.map((o) => o.metadata.name),
      ['late'],
    );
    assert.equal(srv.connections, connections, 'on the reused connection');
  });

  test('a caller abort rejects with its reason and closes the connection', async () => {
    reset();
    const k = client();
    let reached: () => void = () => {};
    const arrived = new Promise<void>((r) => (reached = r));
    srv.handler = () => reached();
    const ac = new AbortController();
    const pending = k.list(ConfigMaps, { namespace: 'a', signal: ac.signal });
    await arrived;
    const socket = srv.requests.at(-1)?.socket;
    const reason = new Error('stop');
    ac.abort(reason);
    await assert.rejects(pending, (e) => e === reason);
    await waitFor(() => socket?.destroyed, { message: 'the aborted request closed its connection' });
    await assert.rejects(k.list(ConfigMaps, { namespace: 'a', signal: ac.signal }), (e) => e === reason, 'already aborted');

    // A long-lived signal (a manager's) given to many requests keeps no listener once they are done.
    reset();
    const life = new AbortController();
    for (let i = 0; i < 20; i++) await k.list(ConfigMaps, { namespace: 'a', signal: life.signal });
    srv.handler = (_req, res) => json(res, 404, { reason: 'NotFound' });
    await assert.rejects(k.get(ConfigMaps, 'missing', 'a', life.signal), ApiError);
    assert.equal(getEventListeners(life.signal, 'abort').length, 0);
  });

  test('every request is observed: verb (WATCH for watches), resource, status', async () => {
    reset();
    const k = client();
    const seen: string[] = [];
    k.observe((verb, resource, status, seconds) => {
      assert.ok(seconds >= 0);
      seen.push(`${verb} ${resource} ${status}`);
    });
    await k.list(ConfigMaps, { namespace: 'a' });
    srv.handler = (_req, res) => json(res, 404, { reason: 'NotFound' });
    await k.find(ConfigMaps, 'x', 'a');
    srv.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end();
    };
    await k.watch(ConfigMaps, { namespace: 'a' }, () => {});
    assert.deepEqual(seen, ['GET configmaps 200', 'GET configmaps 404', 'WATCH configmaps 200']);
  });

  describe('watches', () => {
    test('events split anywhere across chunks, several in one chunk, blank lines: each event once, in order', async () => {
      const events = [
        { type: 'ADDED', object: { metadata: { name: 'a' }, data: { text: 'grüße ✓ 🚀' } } },
        { type: 'MODIFIED', object: { metadata: { name: 'b' }, data: { big: 'x'.repeat(70_000) } } },
        { type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } },
      ];
      const bytes = Buffer.from(`${events.map((e) => JSON.stringify(e)).join('\n')}\n\n`);
      // Every cut position through the first event (inside multi-byte characters too), then fixed-size chunks.
      const firstEnd = bytes.indexOf(10) + 1;
      for (let cut = 1; cut < firstEnd + 2; cut++) {
        const got: unknown[] = [];
        const lines = new LineReader();
        const chunks = [bytes.subarray(0, cut)];
        for (let i = cut; i < bytes.length; i += 1000) chunks.push(bytes.subarray(i, i + 1000));
        for (const c of chunks) lines.push(c, (l) => got.push(JSON.parse(l)));
        assert.deepEqual(got, events, `cut at ${cut}`);
      }
      // One byte at a time.
      const got: unknown[] = [];
      const lines = new LineReader();
      for (let i = 0; i < firstEnd; i++) lines.push(bytes.subarray(i, i + 1), (l) => got.push(JSON.parse(l)));
      assert.deepEqual(got, events.slice(0, 1));
    });

    test('a watch streams events from its own connection and resolves when the server ends it', async () => {
      reset();
      const k = client();
      await k.list(ConfigMaps, { namespace: 'a' }); // the pool has a connection the watch must not take
      const connections = srv.connections;
      srv.handler = (req, res) => {
        assert.match(req.url ?? '', /watch=true/);
        assert.match(req.url ?? '', /allowWatchBookmarks=true/);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
        setImmediate(() => res.end('IFIED","object":{"metadata":{"name":"a"}}}\n'));
      };
      const got: string[] = [];
      await k.watch(ConfigMaps, { namespace: 'a' }, (ev) => got.push(`${ev.type} ${ev.object.metadata.name}`));
      assert.deepEqual(got, ['ADDED a', 'MODIFIED a']);
      assert.equal(srv.connections, connections + 1, 'the watch opened a connection of its own');
    });

    test("a kind's parser reads its lists, gets, write answers and watch events; other kinds get JSON.parse", async () => {
      reset();
      const seen: string[] = [];
      const k = new KubeClient(creds, {
        parsers: new Map([
          [
            ConfigMaps,
            (bytes: Buffer) => {
              const doc = JSON.parse(bytes.toString('utf8'));
              seen.push(doc.kind ?? doc.type);
              return { ...doc, parsedBy: 'test' };
            },
          ],
        ]),
      });
      clients.push(k);
      const cm = { kind: 'ConfigMap', metadata: { name: 'a', namespace: 'a', resourceVersion: '2' } };
      srv.handler = (req, res) => {
        if ((req.url ?? '').includes('watch=true')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(`${JSON.stringify({ type: 'ADDED', object: cm })}\r\n\n`);
        } else if (req.method === 'GET' && !(req.url ?? '').includes('/configmaps/'))
          json(res, 200, { kind: 'ConfigMapList', items: [cm] });
        else json(res, 200, cm);
      };
      assert.equal(((await k.list(ConfigMaps, { namespace: 'a' })) as unknown as { items: unknown[] }).items.length, 1);
      const got = (await k.get(ConfigMaps, 'a', 'a')) as unknown as { parsedBy?: string };
      assert.equal(got.parsedBy, 'test');
      const patched = (await k.patch(ConfigMaps, 'a', { data: {} }, { namespace: 'a' })) as unknown as { parsedBy?: string };
      assert.equal(patched.parsedBy, 'test');
      const events: string[] = [];
      await k.watch(ConfigMaps, { namespace: 'a' }, (ev) => events.push(`${ev.type} ${(ev as unknown as { parsedBy?: string }).parsedBy}`));
      assert.deepEqual(events, ['ADDED test'], 'one event; the blank and carriage-return lines skipped');
      assert.deepEqual(seen, ['ConfigMapList', 'ConfigMap', 'ConfigMap', 'ADDED']);
    });

    test('a watch quiet for longer than the request timeout is not given up (its idle timer decides)', async () => {
      reset();
      const k = client({ requestTimeoutMs: 200 });
      srv.handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        setTimeout(() => res.end('{"type":"DELETED","object":{"metadata":{"name":"a"}}}\n'), 800);
      };
      const got: string[] = [];
      await k.watch(ConfigMaps, { namespace: 'a' }, (ev) => got.push(ev.type));
      assert.deepEqual(got, ['ADDED', 'DELETED']);
    });

    const openWatch = async (k: KubeClient, opts: { idleTimeoutMs?: number; signal?: AbortSignal } = {}) => {
      let opened: () => void = () => {};
      const isOpen = new Promise<void>((r) => (opened = r));
      srv.handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
      };
      const got: string[] = [];
      const watch = k.watch(ConfigMaps, { namespace: 'a', ...opts }, (ev) => {
        got.push(ev.type);
        opened();
      });
      watch.catch(() => {});
      await isOpen;
      return { watch, socket: srv.requests.at(-1)?.socket, got };
    };

    test('close() ends an open watch and its connection', async () => {
      reset();
      const k = client();
      const { watch, socket } = await openWatch(k);
      await k.close();
      await assert.rejects(watch, TransportClosedError);
      await waitFor(() => socket?.destroyed, { message: 'the watch connection was closed' });
      reset();
      await k.list(ConfigMaps, { namespace: 'a' }); // a closed client opens a new pool when used again
    });

    test('a caller abort rejects with its reason; a silent stream with WatchIdleError', async () => {
      reset();
      const k = client();
      const ac = new AbortController();
      const aborted = await openWatch(k, { signal: ac.signal });
      const reason = new Error('leadership lost');
      ac.abort(reason);
      await assert.rejects(aborted.watch, (e) => e === reason);
      await waitFor(() => aborted.socket?.destroyed, { message: 'the aborted watch closed its connection' });

      const idle = await openWatch(k, { idleTimeoutMs: 200 });
      await assert.rejects(idle.watch, WatchIdleError);
      await waitFor(() => idle.socket?.destroyed, { message: 'the silent watch closed its connection' });
    });

    test('an error status rejects the watch with ApiError', async () => {
      reset();
      const k = client();
      srv.handler = (_req, res) => json(res, 410, { kind: 'Status', reason: 'Expired', message: 'too old resource version' });
      await assert.rejects(
        k.watch(ConfigMaps, { namespace: 'a', resourceVersion: '1' }, () => {}),
        (e) => e instanceof ApiError && e.status === 410,
      );
    });
  });
});
