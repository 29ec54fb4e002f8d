/**
 * The admission webhook's certificate on a real kube-apiserver: osc's own certificate rotated several times
 * while the API server sends admission requests without a pause, and a certificate read from a Secret
 * written the way OpenShift's service CA writes it. The service CA and cert-manager controllers do not run
 * here: their side (issuing, and writing caBundle) is not tested, only what osc does with their output;
 * what osc writes for them is checked in test/unit/webhook-certs.test.ts.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { createCA, issueCert } from '../../src/kube/pki.ts';
import { MutatingWebhookConfigurations, Secrets, ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { CERT_SECRETS, SERVICE_CA_INJECT_ANNOTATION } from '../../src/webhooks/certsource.ts';
import { splitPem } from '../../src/webhooks/rotation.ts';
import { MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

type WebhookConfig = KubeObject & { webhooks?: { clientConfig?: { url?: string; caBundle?: string } }[] };
const PROBE = 'osc-test-probe';

/** The certificate the webhook server presents to a new connection (SHA-256 fingerprint). */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername: PROBE, rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.once('error', reject);
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

/** Dry-run creates of a KataConfig, each admitted by osc's validating webhook through the API server. */
class AdmissionLoad {
  ok = 0;
  readonly failures: string[] = [];
  private stopped = false;
  private readonly loops: Promise<void>[];
  constructor(client: KubeClient, concurrency: number) {
    this.loops = Array.from({ length: concurrency }, async (_, i) => {
      for (let n = 0; !this.stopped; n++) {
        try {
          await client.create(KataConfigs, { metadata: { name: `load-${i}-${n}` }, spec: {} }, { dryRun: true });
          this.ok++;
        } catch (e) {
          this.failures.push(errorMessage(e));
        }
      }
    });
  }
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

describe('webhook certificate from a Secret written the way OpenShift’s service CA writes it', () => {
  const cluster = useDevCluster({ workers: 1 });
  let op: RunningOperator | undefined;
  after(() => op?.stop());

  /** A serving certificate and key as the service CA stores them: tls.crt holds the leaf, then the CA. */
  async function serviceCASecret(): Promise<{ data: Record<string, string>; caPem: string; leafPem: string }> {
    const ca = await createCA('openshift-service-serving-signer@test', 30);
    // The real service CA names the Service only; 127.0.0.1 is added because here the API server calls the
    // operator by URL (it runs outside the cluster).
    const leaf = await issueCert(ca, {
      commonName: 'osc-webhook-service.openshift-sandboxed-containers-operator.svc',
      usage: 'server',
      dnsNames: [
        'osc-webhook-service.openshift-sandboxed-containers-operator.svc',
        'osc-webhook-service.openshift-sandboxed-containers-operator.svc.cluster.local',
      ],
      ipAddresses: ['127.0.0.1'],
      days: 30,
    });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    return {
      data: { 'tls.crt': b64(`${leaf.certPem}\n${ca.certPem}\n`), 'tls.key': b64(leaf.keyPem) },
      caPem: ca.certPem,
      leafPem: leaf.certPem,
    };
  }

  /** What the service CA's injector would do; written here by the test, under a field manager of its own. */
  async function injectCABundle(caPem: string) {
    const caBundle = Buffer.from(caPem).toString('base64');
    for (const [rt, name] of [
      [ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION],
      [MutatingWebhookConfigurations, MUTATING_WEBHOOK_CONFIGURATION],
    ] as const) {
      await cluster.dev.client.patch(rt, name, [{ op: 'add', path: '/webhooks/0/clientConfig/caBundle', value: caBundle }], {
        type: 'json',
        fieldManager: 'test-standing-in-for-the-injector',
      });
    }
  }

  test('osc serves the Secret’s certificate, leaves caBundle to the injector, and picks up a rewritten Secret', async () => {
    const client = cluster.dev.client;
    const first = await serviceCASecret();
    await client.create(Secrets, {
      metadata: {
        name: CERT_SECRETS['service-ca'],
        namespace: OPERATOR_NAMESPACE,
        annotations: {
          'service.beta.openshift.io/originating-service-name': 'osc-webhook-service',
          'service.beta.openshift.io/expiry': new Date(Date.now() + 30 * 86_400_000).toISOString(),
        },
      },
      type: 'kubernetes.io/tls',
      data: first.data,
    });
    op = await startOperator(cluster.dev, {
      webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}', certSource: 'service-ca', certPollMs: 250 },
    });
    const port = op.operator.webhookPort ?? 0;
    assert.equal(await servedFingerprint(port), fingerprintOf(first.leafPem));

    // The registrations ask for injection and carry no CA of osc's.
    const validating = (await client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as WebhookConfig;
    assert.equal(validating.metadata.annotations?.[SERVICE_CA_INJECT_ANNOTATION], 'true');
    assert.equal(validating.webhooks?.[0]?.clientConfig?.caBundle, undefined);

    // With the CA injected, the API server's admission requests reach osc and are answered.
    await injectCABundle(first.caPem);
    const answered = op.operator.webhookServer?.answered ?? 0;
    await waitFor(
      async () => {
        await client.create(KataConfigs, { metadata: { name: 'through-service-ca' }, spec: {} }, { dryRun: true });
        return true;
      },
      { message: 'a dry-run create admitted through the injected CA' },
    );
    assert.ok((op.operator.webhookServer?.answered ?? 0) > answered, 'osc answered the admission request');

    // The service CA rotates the Secret: osc serves the new certificate without a restart.
    const second = await serviceCASecret();
    const bothCAs = `${first.caPem}\n${second.caPem}\n`;
    await injectCABundle(bothCAs);
    const secret = await client.get(Secrets, CERT_SECRETS['service-ca'], OPERATOR_NAMESPACE);
    await client.update(Secrets, { ...secret, data: second.data });
    await waitFor(async () => (await servedFingerprint(port)) === fingerprintOf(second.leafPem), {
      message: 'the rewritten certificate served',
    });
    await client.create(KataConfigs, { metadata: { name: 'after-rotation' }, spec: {} }, { dryRun: true });
    // osc never took caBundle over: it is still the one the "injector" wrote.
    const after = (await client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as WebhookConfig;
    assert.equal(after.webhooks?.[0]?.clientConfig?.caBundle, Buffer.from(bothCAs).toString('base64'));
    await op.stop();
    op = undefined;
  });
});

describe('osc’s own webhook certificate, rotated under load', () => {
  const cluster = useDevCluster({ workers: 1 });
  let op: RunningOperator | undefined;
  const webhook = {
    address: '127.0.0.1:0',
    url: 'https://127.0.0.1:{port}',
    certSource: 'self-signed' as const,
    // Seconds instead of days: rotated about every ten seconds.
    certLifetimeMs: 15_000,
    certPollMs: 250,
    certPropagationMs: 1_000,
  };
  before(async () => {
    op = await startOperator(cluster.dev, { webhook });
  });
  after(() => op?.stop());

  test('several rotations while the API server calls the webhook: no admission request fails', async () => {
    const operator = op?.operator;
    const server = operator?.webhookServer?.tlsServer;
    if (!operator?.webhookPort || !server) throw new Error('the webhook server is not running');
    const port = operator.webhookPort;
    const client = cluster.dev.client;
    // Which certificates the API server itself was shown (its connections, not the test's probes).
    const shownToApiServer = new Set<string>();
    server.on('secureConnection', (s: TLSSocket) => {
      if ((s as TLSSocket & { servername?: string | false }).servername === PROBE) return;
      const fp = (s.getCertificate() as { fingerprint256?: string } | null)?.fingerprint256;
      if (fp) shownToApiServer.add(fp);
    });
    const served = new Set<string>([await servedFingerprint(port)]);
    let mostCAs = 0;
    const answeredBefore = operator.webhookServer?.answered ?? 0;

    const load = new AdmissionLoad(client, 4);
    try {
      await waitFor(
        async () => {
          served.add(await servedFingerprint(port));
          const v = (await client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as WebhookConfig;
          const bundle = Buffer.from(v.webhooks?.[0]?.clientConfig?.caBundle ?? '', 'base64').toString('utf8');
          mostCAs = Math.max(mostCAs, splitPem(bundle).length);
          return served.size >= 4 && shownToApiServer.size >= 2;
        },
        { timeoutMs: 180_000, intervalMs: 200, message: 'three rotations, and a rotated certificate shown to the API server' },
      );
    } finally {
      await load.stop();
    }
    console.log(
      `# ${served.size} certificates served, ${shownToApiServer.size} shown to the API server, ${load.ok} admission requests admitted, ${load.failures.length} failed, at most ${mostCAs} CAs trusted at once`,
    );
    assert.deepEqual(load.failures, [], 'no admission request failed during rotation');
    assert.ok(load.ok > 0, 'admission requests went through');
    assert.ok((operator.webhookServer?.answered ?? 0) - answeredBefore >= load.ok, 'each admitted request was answered by osc');
    assert.ok(mostCAs >= 2, 'old and new CA were trusted side by side during the overlap');
  });

  test('with two replicas, the standby serves each certificate the leader rotates in', async () => {
    await op?.stop();
    op = undefined;
    // A leader that misses its renew deadline stops for good (as in production), so the deadline leaves room
    // for a loaded machine; hand-overs here are releases, which a standby sees at its next retry.
    const leaseTimings = { leaseDurationMs: 9000, renewDeadlineMs: 6000, retryPeriodMs: 200 };
    const a = await startOperator(cluster.dev, { leaderElection: true, leaseTimings, identity: 'cert-a', webhook });
    let b: RunningOperator | undefined;
    try {
      await waitFor(() => a.operator.manager.isLeader, { message: 'replica a leads' });
      const portA = a.operator.webhookPort ?? 0;
      const fromLeader = new Set<string>([await servedFingerprint(portA)]);
      b = await startOperator(cluster.dev, { leaderElection: true, leaseTimings, identity: 'cert-b', webhook });
      const standby = b;
      const portB = standby.operator.webhookPort ?? 0;
      const fromStandby = new Set<string>();
      await waitFor(
        async () => {
          fromLeader.add(await servedFingerprint(portA));
          fromStandby.add(await servedFingerprint(portB));
          return fromStandby.size >= 3;
        },
        { timeoutMs: 180_000, intervalMs: 200, message: 'the standby serving three certificates in turn' },
      );
      // The standby may have read the latest certificate just before the leader's last probe: both converge.
      const same = await waitFor(
        async () => {
          const [x, y] = [await servedFingerprint(portA), await servedFingerprint(portB)];
          return x === y ? x : undefined;
        },
        { message: 'leader and standby serving the same certificate' },
      );
      fromLeader.add(same);
      assert.equal(standby.operator.manager.isLeader, false, 'b stayed a standby');
      for (const fp of fromStandby) assert.ok(fromLeader.has(fp), 'the standby serves only what the leader made');
    } finally {
      await b?.stop();
      await a.stop();
    }
  });
});
