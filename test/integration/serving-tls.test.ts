/**
 * What the operator's TLS servers present, seen from a client: the metrics certificate the platform writes
 * into the certificate directory after the start and rotates later, picked up without a restart; and the
 * cluster's TLS security profile (OpenShift's APIServer `cluster`) on the webhook and metrics ports, from
 * the start and after each change.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { connect, type SecureVersion } from 'node:tls';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { APIServers } from '../../src/api/openshift.ts';
import { apiServerCRD } from '../../src/devcluster/openshift/crds.ts';
import { createCA, issueCert } from '../../src/kube/pki.ts';
import { Namespaces } from '../../src/kube/resources.ts';
import { createOperator, type Operator } from '../../src/operator.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { testLogger, useControlPlane } from '../support/controlplane.ts';
import { waitFor } from '../support/wait.ts';

/** The certificate a server presents (its SHA-256 fingerprint and issuer), trusting anything. */
function presented(address: string): Promise<{ fingerprint: string; issuer: string }> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, rejectUnauthorized: false, servername: 'localhost' }, () => {
      const c = s.getPeerCertificate();
      s.end();
      resolve({ fingerprint: c.fingerprint256, issuer: String(c.issuer?.CN ?? '') });
    });
    s.on('error', reject);
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

describe('serving TLS', () => {
  const plane = useControlPlane();
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function runOperator(certDir?: string, withWebhook = false): Promise<{ operator: Operator; stop(): Promise<void> }> {
    const operator = await createOperator({
      kubeConfig: plane.cp.kubeConfig,
      log: testLogger(),
      leaderElection: false,
      platform: 'kubernetes',
      metricsAddress: '127.0.0.1:0',
      metricsCertDir: certDir,
      healthAddress: '',
      webhook: withWebhook && { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}', register: false },
      metrics: new RuntimeMetrics(),
    });
    const ac = new AbortController();
    const run = operator.run(ac.signal);
    return {
      operator,
      stop: async () => {
        ac.abort();
        await run;
      },
    };
  }

  /** Writes a certificate and key the way a mounted Secret changes: each file replaced whole. */
  function writePair(dir: string, pair: { certPem: string; keyPem: string }) {
    for (const [name, text] of [
      ['tls.crt', pair.certPem],
      ['tls.key', pair.keyPem],
    ] as const) {
      writeFileSync(join(dir, `.${name}.new`), text);
      renameSync(join(dir, `.${name}.new`), join(dir, name));
    }
  }

  test("the platform's metrics certificate arriving after the start, then rotated, is served without a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osc-metrics-cert-'));
    dirs.push(dir);
    const ca = await createCA('service-ca-test');
    const issue = () => issueCert(ca, { commonName: 'osc-metrics', usage: 'server', dnsNames: ['localhost'], days: 1 });
    const op = await runOperator(dir);
    try {
      const address = await waitFor(() => op.operator.manager.metricsEndpoint?.address, { message: 'the metrics server listening' });
      const first = await presented(address);
      assert.equal(first.issuer, 'osc-metrics-ca', 'nothing in the directory yet: osc serves its own');

      const late = await issue();
      writePair(dir, late);
      await waitFor(async () => (await presented(address)).fingerprint === fingerprintOf(late.certPem), {
        message: 'the late certificate served',
      });
      assert.equal(op.operator.metricsCA, undefined, "osc's own CA is no longer the one to trust");

      const rotated = await issue();
      writePair(dir, rotated);
      await waitFor(async () => (await presented(address)).fingerprint === fingerprintOf(rotated.certPem), {
        message: 'the rotated certificate served',
      });
    } finally {
      await op.stop();
    }
  });

  /** Whether a TLS handshake with these client limits succeeds. */
  function handshake(
    address: string,
    client: { maxVersion?: SecureVersion; minVersion?: SecureVersion; ciphers?: string },
  ): Promise<boolean> {
    const cut = address.lastIndexOf(':');
    return new Promise((resolve) => {
      const s = connect({ host: address.slice(0, cut), port: Number(address.slice(cut + 1)), rejectUnauthorized: false, ...client }, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
  }

  // The certificates osc makes use ECDSA keys: the clients offer the ECDSA form of each cipher.
  const TLS12 = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' } as const;
  const clients = {
    tls13: { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' },
    tls12Gcm128: { ...TLS12, ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' },
    tls12Gcm256: { ...TLS12, ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384' },
    tls12Cbc: { ...TLS12, ciphers: 'ECDHE-ECDSA-AES128-SHA' },
  } as const;
  type Outcome = Record<keyof typeof clients, boolean>;
  // A Custom profile's ciphers limit TLS 1.2 and older; TLS 1.3 keeps its standard suites (as in Go's servers).
  const expected: Record<string, [Record<string, unknown>, Outcome]> = {
    Modern: [
      { type: 'Modern', modern: {} },
      { tls13: true, tls12Gcm128: false, tls12Gcm256: false, tls12Cbc: false },
    ],
    Intermediate: [
      { type: 'Intermediate', intermediate: {} },
      { tls13: true, tls12Gcm128: true, tls12Gcm256: true, tls12Cbc: false },
    ],
    Old: [
      { type: 'Old', old: {} },
      { tls13: true, tls12Gcm128: true, tls12Gcm256: true, tls12Cbc: true },
    ],
    Custom: [
      {
        type: 'Custom',
        custom: {
          minTLSVersion: 'VersionTLS12',
          ciphers: ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384'],
        },
      },
      { tls13: true, tls12Gcm128: false, tls12Gcm256: true, tls12Cbc: false },
    ],
  };

  async function outcome(address: string): Promise<Outcome> {
    const out = {} as Outcome;
    for (const [name, c] of Object.entries(clients)) out[name as keyof Outcome] = await handshake(address, c);
    return out;
  }

  test("the cluster's TLS profile governs the webhook and metrics ports from the start, and each change to it", async () => {
    const client = plane.cp.client;
    await plane.cp.installCRDs([apiServerCRD()]);
    await client.apply(Namespaces, { metadata: { name: OPERATOR_NAMESPACE } });
    const setProfile = async (profile: Record<string, unknown>) => {
      const found = await client.find(APIServers, 'cluster');
      const body = {
        apiVersion: 'config.openshift.io/v1',
        kind: 'APIServer',
        metadata: { name: 'cluster' },
        spec: { tlsSecurityProfile: profile },
      };
      if (found) await client.update(APIServers, { ...body, metadata: found.metadata });
      else await waitFor(() => client.create(APIServers, body).then(() => true), { message: 'the APIServer CRD served' });
    };
    await setProfile(expected.Modern?.[0] ?? {});
    const op = await runOperator(undefined, true);
    try {
      const metrics = await waitFor(() => op.operator.manager.metricsEndpoint?.address, { message: 'the metrics server listening' });
      const webhook = `127.0.0.1:${op.operator.webhookPort}`;
      // Modern from the first handshake: a TLS 1.2 client never gets in, not even before the watch syncs.
      assert.deepEqual(await outcome(webhook), expected.Modern?.[1], 'webhook port under Modern at start');
      assert.deepEqual(await outcome(metrics), expected.Modern?.[1], 'metrics port under Modern at start');
      for (const name of ['Intermediate', 'Old', 'Custom', 'Modern']) {
        const [profile, want] = expected[name] ?? [{}, {}];
        await setProfile(profile);
        for (const [port, address] of [
          ['webhook', webhook],
          ['metrics', metrics],
        ]) {
          await waitFor(async () => JSON.stringify(await outcome(address ?? '')) === JSON.stringify(want), {
            message: `the ${port} port under ${name}: ${JSON.stringify(want)}`,
          });
        }
      }
    } finally {
      await op.stop();
    }
  });
});
