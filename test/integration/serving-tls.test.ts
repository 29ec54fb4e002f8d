/**
 * What the operator's TLS servers present, seen from a client: the metrics certificate the platform writes
 * into the certificate directory after the start and rotates later, picked up without a restart.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { connect } from 'node:tls';
import { createCA, issueCert } from '../../src/devcluster/certs.ts';
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

  async function runOperator(certDir: string): Promise<{ operator: Operator; stop(): Promise<void> }> {
    const operator = await createOperator({
      kubeConfig: plane.cp.kubeConfig,
      log: testLogger(),
      leaderElection: false,
      platform: 'kubernetes',
      metricsAddress: '127.0.0.1:0',
      metricsCertDir: certDir,
      healthAddress: '',
      webhook: false,
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
});
