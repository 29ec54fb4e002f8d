import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { before, describe, test } from 'node:test';
import { manifestFiles } from '../../src/install/manifests.ts';
import { createCA, issueCert } from '../../src/kube/pki.ts';
import {
  CERT_MANAGER,
  CERT_MANAGER_INJECT_ANNOTATION,
  CERT_SECRETS,
  certManagerObjects,
  chooseCertSource,
  injectAnnotations,
  SERVICE_CA_INJECT_ANNOTATION,
  SERVICE_CA_SECRET_ANNOTATION,
} from '../../src/webhooks/certsource.ts';
import { registrationDrifted } from '../../src/webhooks/registration.ts';
import { bundleTrusts, mergeCABundle, planRotation, rotationDue, splitPem, validityOf } from '../../src/webhooks/rotation.ts';
import { desiredWebhookConfigurations } from '../../src/webhooks/setup.ts';

const DAY = 24 * 60 * 60 * 1000;
type Pair = { caPem: string; certPem: string; keyPem: string };
async function pair(days: number): Promise<Pair> {
  const ca = await createCA('test-ca', days);
  const cert = await issueCert(ca, { commonName: 'osc-webhook-service.ns.svc', usage: 'server', dnsNames: ['localhost'], days });
  return { caPem: ca.certPem, ...cert };
}

describe('webhook certificate rotation (pure)', () => {
  let a: Pair;
  let b: Pair;
  before(async () => {
    a = await pair(3);
    b = await pair(6);
  });

  test('rotation is due at two thirds of the lifetime, counted from notBefore', () => {
    assert.equal(rotationDue({ notBefore: 0, notAfter: 3 * DAY }), 2 * DAY);
    assert.equal(rotationDue({ notBefore: 1000, notAfter: 1000 + 90_000 }, 0.5), 46_000);
    const v = validityOf(a.certPem);
    assert.ok(v && v.notAfter - v.notBefore > 3 * DAY - 1000 && v.notAfter - v.notBefore <= 3 * DAY + 60 * 60 * 1000 + 1000);
  });

  test('the plan: create when nothing usable, wait until due, trust the next CA, then serve the next certificate', () => {
    assert.deepEqual(planRotation(undefined, Date.now()), { kind: 'create', reason: 'no serving certificate' });
    assert.deepEqual(planRotation({ certPem: 'garbage', keyPem: 'k', caBundlePem: a.caPem }, Date.now()).kind, 'create');
    const current = { certPem: a.certPem, keyPem: a.keyPem, caBundlePem: a.caPem };
    const v = validityOf(a.certPem);
    if (!v) throw new Error('unreadable');
    const due = rotationDue(v);
    assert.deepEqual(planRotation(current, Date.now()), { kind: 'wait', at: due });
    assert.deepEqual(planRotation(current, due), { kind: 'trust-next' });
    assert.deepEqual(planRotation({ ...current, caBundlePem: '' }, Date.now()).kind, 'create');
    assert.deepEqual(planRotation(current, v.notAfter), { kind: 'create', reason: 'the serving certificate expired' });
    const pending = { ...current, caBundlePem: a.caPem + b.caPem, nextCertPem: b.certPem, nextKeyPem: b.keyPem };
    assert.deepEqual(planRotation(pending, due), { kind: 'serve-next' });
    // A certificate that outlives a new one by far (an older osc made them for ten years) is due at once.
    assert.deepEqual(planRotation(current, Date.now(), 2 / 3, 1 * DAY), { kind: 'trust-next' });
    assert.deepEqual(planRotation(current, Date.now(), 2 / 3, 3 * DAY), { kind: 'wait', at: due });
    // A pending certificate that expired meanwhile is not served: make a new one.
    assert.deepEqual(planRotation(pending, Date.now() + 7 * DAY).kind, 'create');
  });

  test('the CA bundle: newest first, each CA once, expired and unreadable CAs dropped', () => {
    const merged = mergeCABundle([b.caPem], a.caPem, Date.now());
    const one = (pem: string) => splitPem(pem)[0];
    assert.deepEqual(splitPem(merged), [one(b.caPem), one(a.caPem)]);
    assert.equal(mergeCABundle([b.caPem], merged, Date.now()), merged);
    // After a's CA expired (and with it the last certificate it signed), only b's is left.
    assert.deepEqual(splitPem(mergeCABundle([], merged, Date.now() + 4 * DAY)), [one(b.caPem)]);
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    assert.deepEqual(splitPem(mergeCABundle([broken], a.caPem, Date.now())), [one(a.caPem)]);
  });

  test('a bundle of old and new CA trusts the certificates of both; one without the signer does not', () => {
    const both = mergeCABundle([b.caPem], a.caPem, Date.now());
    assert.equal(bundleTrusts(both, a.certPem), true);
    assert.equal(bundleTrusts(both, b.certPem), true);
    assert.equal(bundleTrusts(a.caPem, b.certPem), false);
    assert.equal(bundleTrusts(both, undefined), false);
    assert.equal(new X509Certificate(b.certPem).checkIssued(new X509Certificate(b.caPem)), true);
  });
});

describe('webhook certificate sources (pure)', () => {
  const none = { serviceCA: false, certManager: false };
  test('auto: the service CA, then cert-manager, then osc; a URL registration always uses osc', () => {
    assert.equal(chooseCertSource('auto', { serviceCA: true, certManager: true }, false), 'service-ca');
    assert.equal(chooseCertSource('auto', { serviceCA: false, certManager: true }, false), 'cert-manager');
    assert.equal(chooseCertSource('auto', none, false), 'self-signed');
    assert.equal(chooseCertSource('auto', { serviceCA: true, certManager: true }, true), 'self-signed');
    assert.equal(chooseCertSource('cert-manager', none, false), 'cert-manager');
    assert.equal(chooseCertSource('self-signed', { serviceCA: true, certManager: false }, false), 'self-signed');
  });

  test('each source reads its own Secret', () => {
    assert.equal(new Set(Object.values(CERT_SECRETS)).size, 3);
  });

  test('service CA: the webhook configurations carry inject-cabundle and no caBundle of ours', () => {
    const endpoint = { service: { namespace: 'ns', name: 'osc-webhook-service', port: 443 } };
    const annotations = injectAnnotations('service-ca', 'ns');
    assert.deepEqual(annotations, { [SERVICE_CA_INJECT_ANNOTATION]: 'true' });
    for (const c of desiredWebhookConfigurations(endpoint, { annotations: annotations ?? {} })) {
      assert.equal(c.metadata.annotations?.[SERVICE_CA_INJECT_ANNOTATION], 'true');
      for (const w of c.webhooks ?? []) assert.equal((w.clientConfig as { caBundle?: string }).caBundle, undefined);
    }
  });

  test("cert-manager: inject-ca-from names the serving Certificate, which a CA Issuer signs with a CA of cert-manager's", () => {
    assert.deepEqual(injectAnnotations('cert-manager', 'ns'), {
      [CERT_MANAGER_INJECT_ANNOTATION]: `ns/${CERT_MANAGER.servingCertificate}`,
    });
    assert.equal(injectAnnotations('self-signed', 'ns'), undefined);
    const objs = certManagerObjects('ns', 'osc-webhook-service') as unknown as {
      kind: string;
      metadata: { name: string; namespace: string };
      spec: Record<string, unknown>;
    }[];
    assert.deepEqual(
      objs.map((o) => `${o.kind}/${o.metadata.name}`),
      [
        'Issuer/osc-selfsigned-issuer',
        'Certificate/osc-webhook-ca',
        'Issuer/osc-webhook-ca-issuer',
        'Certificate/osc-webhook-serving-cert',
      ],
    );
    const serving = objs[3]?.spec as { secretName: string; dnsNames: string[]; issuerRef: { name: string } };
    assert.equal(serving.secretName, CERT_SECRETS['cert-manager']);
    assert.deepEqual(serving.dnsNames, ['osc-webhook-service.ns.svc', 'osc-webhook-service.ns.svc.cluster.local']);
    assert.equal(serving.issuerRef.name, CERT_MANAGER.caIssuer);
    assert.equal((objs[1]?.spec as { isCA?: boolean } | undefined)?.isCA, true);
    assert.ok(objs.every((o) => o.metadata.namespace === 'ns'));
  });

  test('an injected caBundle is not drift when we leave trust to the platform; our own bundle is', () => {
    const endpoint = { service: { namespace: 'ns', name: 'osc-webhook-service', port: 443 } };
    const [platform] = desiredWebhookConfigurations(endpoint, { annotations: { [SERVICE_CA_INJECT_ANNOTATION]: 'true' } });
    if (!platform) throw new Error('no configuration');
    const injected = structuredClone(platform);
    (injected.webhooks?.[0]?.clientConfig as { caBundle?: string }).caBundle = 'aW5qZWN0ZWQ=';
    assert.equal(registrationDrifted(injected, platform), false);
    const unannotated = structuredClone(injected);
    unannotated.metadata.annotations = {};
    assert.equal(registrationDrifted(unannotated, platform), true);
    const [own] = desiredWebhookConfigurations(endpoint, { caPem: 'CA' });
    if (!own) throw new Error('no configuration');
    assert.equal(registrationDrifted(injected, own), true);
  });

  test('the manifests: the webhook Service asks the service CA for its Secret; the configurations say nothing about trust', async () => {
    const objects = (await manifestFiles()).flatMap((f) => f.objects);
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'osc-webhook-service');
    assert.equal(svc?.metadata.annotations?.[SERVICE_CA_SECRET_ANNOTATION], CERT_SECRETS['service-ca']);
    for (const c of objects.filter((o) => o.kind?.endsWith('WebhookConfiguration'))) {
      assert.equal(c.metadata.annotations, undefined);
      for (const w of (c as { webhooks?: { clientConfig: { caBundle?: string } }[] }).webhooks ?? [])
        assert.equal(w.clientConfig.caBundle, undefined);
    }
  });
});
