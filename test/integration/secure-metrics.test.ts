/**
 * The operator's /metrics over HTTPS, authenticated (TokenReview) and authorised (SubjectAccessReview on
 * the non-resource URL /metrics) by the real API server; the probes stay plain HTTP.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { ServiceAccounts } from '../../src/kube/resources.ts';
import { type RunningOperator, scrapeMetrics, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

describe('secure metrics', () => {
  const cluster = useDevCluster({ workers: 1 });

  async function tokenFor(sa: string): Promise<string> {
    const client = cluster.dev.client;
    await client.apply(ServiceAccounts, { metadata: { name: sa, namespace: OPERATOR_NAMESPACE } });
    const r = await client.request<{ status: { token: string } }>('POST', `${client.path(ServiceAccounts, OPERATOR_NAMESPACE, sa)}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    });
    return r.status.token;
  }

  test('a scraper needs a token the API server accepts and get on /metrics; probes stay plain', async () => {
    let op: RunningOperator | undefined;
    try {
      op = await startOperator(cluster.dev, { healthAddress: '127.0.0.1:0' });
      const o = op.operator;
      const endpoint = await waitFor(() => o.manager.metricsEndpoint, { message: 'the metrics server listening' });
      assert.equal(endpoint?.secure, true, 'HTTPS by default');
      assert.ok(o.metricsCA, 'osc made the certificate and says which CA signed it');

      // Bound to osc-metrics-reader: the metrics.
      const ok = await scrapeMetrics(cluster.dev, o);
      assert.equal(ok.status, 200, ok.text);
      assert.match(ok.text, /^# TYPE controller_runtime_reconcile_total counter$/m);

      // No token, a token the API server refuses, a real token without the role.
      const none = await scrapeMetrics(cluster.dev, o, '');
      assert.equal(none.status, 401, none.text);
      const forged = await scrapeMetrics(cluster.dev, o, 'not-a-real-token');
      assert.equal(forged.status, 401, forged.text);
      const stranger = await scrapeMetrics(cluster.dev, o, await tokenFor('metrics-stranger'));
      assert.equal(stranger.status, 403, stranger.text);
      assert.match(stranger.text, /system:serviceaccount:openshift-sandboxed-containers-operator:metrics-stranger" may not get \/metrics/);
      assert.doesNotMatch(stranger.text, /controller_runtime/);

      // Plain HTTP to the TLS port gets no metrics.
      const plain = await fetch(`http://${endpoint?.address}/metrics`).then(
        (r) => r.text(),
        (e: Error) => `refused: ${e.message}`,
      );
      assert.doesNotMatch(plain, /controller_runtime/);

      // A client that does not trust the operator's CA refuses the connection.
      const untrusted = new Agent();
      await assert.rejects(undiciFetch(`https://${endpoint?.address}/metrics`, { dispatcher: untrusted }));
      await untrusted.close();

      // The probes: plain HTTP, no credentials, and no metrics there.
      const health = o.manager.healthAddress;
      assert.equal((await fetch(`http://${health}/healthz`)).status, 200);
      await waitFor(async () => (await fetch(`http://${health}/readyz`)).status === 200, { message: '/readyz 200' });
      assert.equal((await fetch(`http://${health}/metrics`)).status, 404);
    } finally {
      await op?.stop();
    }
  });

  test('plain-HTTP metrics only on loopback', async () => {
    await assert.rejects(
      startOperator(cluster.dev, { metricsAddress: '0.0.0.0:0', metricsSecure: false }),
      /plain-HTTP metrics may only listen on a loopback address, not 0\.0\.0\.0:0/,
    );
    const op = await startOperator(cluster.dev, { metricsAddress: '127.0.0.1:0', metricsSecure: false });
    try {
      const endpoint = await waitFor(() => op.operator.manager.metricsEndpoint, { message: 'the metrics server listening' });
      assert.equal(endpoint?.secure, false);
      const r = await fetch(`http://${endpoint?.address}/metrics`);
      assert.equal(r.status, 200);
      assert.match(await r.text(), /controller_runtime_reconcile_total/);
    } finally {
      await op.stop();
    }
  });
});
