/**
 * The webhook certificate followed through a cache of its Secret: what changes there is served at once,
 * and the leader's rotation plans from the cache, so that an idle operator reads nothing from the API
 * server for its certificate (it read the Secret twice every 30 s before).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { createCA, issueCert } from '../../src/kube/pki.ts';
import type { Secret } from '../../src/kube/resources.ts';
import { WebhookCertificates } from '../../src/webhooks/certificates.ts';
import { CERT_SECRETS } from '../../src/webhooks/certsource.ts';
import { KEYS } from '../../src/webhooks/rotation.ts';

const NS = 'osc-ns';
type Handler = { add?(s: Secret): void; update?(o: Secret, s: Secret): void; delete?(s: Secret): void };

/** An API server's Secrets and an informer of them: a write is shown in the cache a moment later. */
function fakeCluster() {
  const store = new Map<string, Secret>();
  const cache = new Map<string, Secret>();
  const handlers: Handler[] = [];
  const calls = { reads: 0, writes: 0 };
  let rv = 1;
  const show = (old: Secret | undefined, s: Secret) =>
    setTimeout(() => {
      cache.set(`${NS}/${s.metadata?.name}`, s);
      for (const h of handlers) old ? h.update?.(old, s) : h.add?.(s);
    }, 5);
  const key = (name: string) => `${NS}/${name}`;
  const client = {
    find: async (_rt: unknown, name: string) => {
      calls.reads++;
      return store.get(key(name));
    },
    create: async (_rt: unknown, s: Secret) => {
      calls.writes++;
      const name = s.metadata?.name ?? '';
      if (store.has(key(name))) throw new ApiError(409, 'AlreadyExists', 'exists');
      const made = { ...s, metadata: { ...s.metadata, namespace: NS, resourceVersion: String(rv++) } };
      store.set(key(name), made);
      show(undefined, made);
      return made;
    },
    update: async (_rt: unknown, s: Secret) => {
      calls.writes++;
      const name = s.metadata?.name ?? '';
      const old = store.get(key(name));
      if (old?.metadata?.resourceVersion !== s.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', 'conflict');
      const made = { ...s, metadata: { ...s.metadata, resourceVersion: String(rv++) } };
      store.set(key(name), made);
      show(old, made);
      return made;
    },
  };
  const informer = {
    get: (k: string) => cache.get(k),
    addEventHandler: (h: Handler) => handlers.push(h),
  };
  return { client: client as unknown as KubeClient, informer, store, cache, calls, handlers };
}

async function waitFor(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('the webhook certificate followed through its Secret’s cache', () => {
  test('a rewritten Secret is served from the watch, with no read of the API server', async () => {
    const cluster = fakeCluster();
    const certs = new WebhookCertificates({
      client: cluster.client,
      namespace: NS,
      service: 'osc-webhook-service',
      source: 'service-ca',
      log: pino({ enabled: false }),
    });
    const served: string[] = [];
    certs.onServe((tls) => served.push(tls.certPem));
    certs.follow(cluster.informer);
    const ca = await createCA('service-ca', 1);
    for (const cn of ['first', 'second']) {
      const cert = await issueCert(ca, { commonName: cn, usage: 'server', dnsNames: ['localhost'], days: 1 });
      const name = CERT_SECRETS['service-ca'];
      const old = cluster.cache.get(`${NS}/${name}`);
      const s: Secret = { metadata: { name, namespace: NS }, data: { [KEYS.cert]: b64(cert.certPem), [KEYS.key]: b64(cert.keyPem) } };
      cluster.cache.set(`${NS}/${name}`, s);
      for (const h of cluster.handlers) old ? h.update?.(old, s) : h.add?.(s);
      assert.equal(certs.serving.certPem, cert.certPem);
    }
    assert.equal(served.length, 2, 'each new certificate served once');
    assert.equal(cluster.calls.reads, 0);
  });

  test("the leader creates and rotates osc's own certificate from the cache: no reads, no conflicts", async () => {
    const cluster = fakeCluster();
    const certs = new WebhookCertificates({
      client: cluster.client,
      namespace: NS,
      service: 'osc-webhook-service',
      source: 'self-signed',
      log: pino({ enabled: false }),
      // Seconds instead of days: due for rotation four seconds after it is made.
      lifetimeMs: 6_000,
      pollMs: 100,
      propagationMs: 50,
    });
    const served: string[] = [];
    certs.onServe((tls) => served.push(tls.certPem));
    certs.follow(cluster.informer);
    const stop = new AbortController();
    const rotating = certs.rotate(stop.signal);
    try {
      await waitFor(() => served.length >= 2, 'the certificate created, then rotated and served');
    } finally {
      stop.abort();
      await rotating;
    }
    // Made, the next CA trusted beside it, the next certificate served: three writes, each after the cache
    // showed the one before (a write planned from a stale cache would have been a conflict, a fourth write).
    assert.equal(cluster.calls.writes, 3);
    assert.equal(cluster.calls.reads, 0);
    assert.notEqual(served[0], served[1]);
  });
});
