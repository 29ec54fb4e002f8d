/**
 * The operator's open ports under a flood of unauthenticated requests (loopback, bounded in count and time):
 * bad tokens on the metrics port and forged AdmissionReviews on the webhook port must not slow its
 * reconciles down, and the KataConfig webhook, which reads the cache, still lets only one of two
 * simultaneous creates through.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { KATACONFIG_WEBHOOK_PATH } from '../../src/webhooks/kataconfig.ts';
import { PEER_POD_WEBHOOK_PATH } from '../../src/webhooks/setup.ts';
import { startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

/** Sends `count` bad requests to each URL from another process (its own event loop and connections). */
function flood(targets: { url: string; method: string; body?: string; tokens?: boolean }[], count: number): Promise<string> {
  const script = `
    const targets = ${JSON.stringify(targets)};
    let dispatcher, request;
    let sent = 0, answered = 0, failed = 0;
    const one = async (i) => {
      const t = targets[i % targets.length];
      const headers = { 'content-type': 'application/json' };
      if (t.tokens) headers.authorization = 'Bearer bad-token-' + i;
      try {
        const r = await request(t.url, { method: t.method, headers, body: t.body, dispatcher });
        await r.body.dump();
        answered++;
      } catch { failed++; }
    };
    (async () => {
      const undici = await import(${JSON.stringify(import.meta.resolve('undici'))});
      request = undici.request;
      dispatcher = new undici.Agent({ connect: { rejectUnauthorized: false }, connections: 16 });
      const workers = Array.from({ length: 16 }, async () => { while (sent < ${count}) await one(sent++); });
      await Promise.all(workers);
      console.log(JSON.stringify({ answered, failed }));
      await dispatcher.close();
    })();`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.on('error', reject);
    child.on('exit', () => resolve(out.trim()));
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

describe('unauthenticated load', () => {
  const cluster = useDevCluster({ workers: 1 });

  test('two KataConfigs created at the same moment: exactly one gets through the webhook', async () => {
    const op = await startOperator(cluster.dev);
    try {
      await waitFor(() => op.operator.manager.isReady, { message: 'the operator ready' });
      const kc = (name: string): KataConfig => ({
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        metadata: { name },
        spec: { kataConfigPoolSelector: { matchLabels: { 'osc-test/none': 'x' } } },
      });
      // Two clients, two connections: the API server admits both creates side by side.
      const clients = [0, 1].map(() => new KubeClient(cluster.dev.controlPlane.kubeConfig));
      const results = await Promise.allSettled(clients.map((c, i) => c.create(KataConfigs, kc(`twin-${i}`))));
      await Promise.all(clients.map((c) => c.close()));
      const created = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
      assert.equal(created.length, 1, `exactly one create must pass; refused: ${refused.join('; ')}`);
      assert.match(refused[0] ?? '', /A KataConfig instance already exists, refusing to create a duplicate/);
    } finally {
      // Whatever got in goes (the operator removes its finalizer), so that the next test starts clean.
      for (const name of ['twin-0', 'twin-1']) await cluster.dev.client.delete(KataConfigs, name).catch(() => {});
      await waitFor(async () => (await cluster.dev.client.list(KataConfigs)).items.length === 0, {
        timeoutMs: 180_000,
        message: 'the KataConfigs gone',
      });
      await op.stop();
    }
  });

  test('a flood of bad requests on the metrics and webhook ports leaves reconcile latency where it was', async () => {
    const op = await startOperator(cluster.dev);
    const client = cluster.dev.client;
    try {
      await waitFor(() => op.operator.manager.isReady, { message: 'the operator ready' });
      await client.create(KataConfigs, {
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        metadata: { name: 'load-probe' },
        spec: { kataConfigPoolSelector: { matchLabels: { 'osc-test/none': 'x' } } },
      } as KataConfig);
      let level = 0;
      const reconciles = async () =>
        (await op.operator.manager.metrics.reconcileTotal.get()).values
          .filter((v) => v.labels.controller === 'kataconfig')
          .reduce((n, v) => n + v.value, 0);
      /** One reconcile, timed: from a spec change until the KataConfig controller has reconciled again. */
      const reconcileMs = async (): Promise<number> => {
        const before = await reconciles();
        const t0 = performance.now();
        await client.patch(KataConfigs, 'load-probe', { spec: { logLevel: ++level % 2 ? 'debug' : 'info' } });
        await waitFor(async () => (await reconciles()) > before, { intervalMs: 10, message: 'the KataConfig controller reconciled' });
        return performance.now() - t0;
      };
      await reconcileMs(); // warm up
      const quiet: number[] = [];
      for (let i = 0; i < 5; i++) quiet.push(await reconcileMs());

      /** GETs (reads and lists) of what the webhooks look at, by the operator's client. */
      const webhookReads = async () =>
        (await op.operator.manager.metrics.restRequests.get()).values
          .filter((v) => v.labels.verb === 'GET' && /kataconfigs|configmaps/.test(String(v.labels.resource)))
          .reduce((n, v) => n + v.value, 0);
      const readsBefore = await webhookReads();
      const metrics = op.operator.manager.metricsEndpoint?.address;
      const webhook = `https://127.0.0.1:${op.operator.webhookPort}`;
      const review = (kind: string, operation: string, object: unknown) =>
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          request: { uid: 'forged', kind: { group: '', version: 'v1', kind }, resource: {}, operation, name: 'forged', object },
        });
      const flooding = flood(
        [
          { url: `https://${metrics}/metrics`, method: 'GET', tokens: true },
          { url: `https://${metrics}/metrics`, method: 'GET' },
          {
            url: `${webhook}${KATACONFIG_WEBHOOK_PATH}`,
            method: 'POST',
            body: review('KataConfig', 'UPDATE', { metadata: { name: 'forged' } }),
          },
          {
            url: `${webhook}${PEER_POD_WEBHOOK_PATH}`,
            method: 'POST',
            body: review('Pod', 'CREATE', {
              metadata: { name: 'forged' },
              spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c' }] },
            }),
          },
          { url: `${webhook}${PEER_POD_WEBHOOK_PATH}`, method: 'POST', body: '{not json' },
        ],
        4000,
      );
      const before = op.operator.webhookServer?.answered ?? 0;
      await waitFor(() => (op.operator.webhookServer?.answered ?? 0) > before, { message: 'the flood under way' });
      const loaded: number[] = [];
      for (let i = 0; i < 5; i++) loaded.push(await reconcileMs());
      const summary = await flooding;
      console.log(`# reconcile ms quiet ${quiet.map(Math.round).join(' ')}; flooded ${loaded.map(Math.round).join(' ')}; flood ${summary}`);
      assert.match(summary, /"answered":4000/, 'the flood ran');
      // 1,600 forged reviews reached the webhooks: they read the caches, never the API server.
      const reads = (await webhookReads()) - readsBefore;
      assert.ok(reads < 50, `the webhooks read the API server ${reads} times during the flood`);
      const bound = Math.max(4 * median(quiet), median(quiet) + 2000);
      assert.ok(median(loaded) <= bound, `reconcile median ${Math.round(median(loaded))} ms under the flood, over ${Math.round(bound)} ms`);
      await client.delete(KataConfigs, 'load-probe');
      await waitFor(async () => !(await client.find(KataConfigs, 'load-probe')), { message: 'load-probe gone' });
    } finally {
      await op.stop();
    }
  });
});
