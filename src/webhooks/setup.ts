import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists } from '../kube/errors.ts';
import { MutatingWebhookConfigurations, type Secret, Secrets, ValidatingWebhookConfigurations } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import { KATACONFIG_WEBHOOK_PATH } from './kataconfig.ts';

export const WEBHOOK_SECRET = 'osc-webhook-server-cert';
export const WEBHOOK_SERVICE = 'osc-webhook-service';
export const VALIDATING_WEBHOOK_CONFIGURATION = 'osc-validating-webhook-configuration';
export const MUTATING_WEBHOOK_CONFIGURATION = 'osc-mutating-webhook-configuration';
export const PEER_POD_WEBHOOK_PATH = '/mutate-v1-pod';

export interface WebhookTLS {
  caPem: string;
  certPem: string;
  keyPem: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString('utf8') : '');

/**
 * The webhook's serving certificate, kept in a Secret so that every replica serves the same CA and a
 * restart does not need the webhook configurations re-registered. The first replica to start creates it.
 */
export async function loadOrCreateWebhookTLS(client: KubeClient, namespace: string, log?: Logger): Promise<WebhookTLS> {
  const read = (s: Secret | undefined): WebhookTLS | undefined => {
    const caPem = unb64(s?.data?.['ca.crt']);
    const certPem = unb64(s?.data?.['tls.crt']);
    const keyPem = unb64(s?.data?.['tls.key']);
    return caPem && certPem && keyPem ? { caPem, certPem, keyPem } : undefined;
  };
  const existing = read(await client.find(Secrets, WEBHOOK_SECRET, namespace));
  if (existing) return existing;
  // Certificate generation (an X.509 library) is loaded only by the replica that has to make one.
  const { createCA, issueCert } = await import('../devcluster/certs.ts');
  const ca = await createCA('osc-webhook-ca', 3650);
  const serving = await issueCert(ca, {
    commonName: `${WEBHOOK_SERVICE}.${namespace}.svc`,
    usage: 'server',
    dnsNames: [`${WEBHOOK_SERVICE}.${namespace}.svc`, `${WEBHOOK_SERVICE}.${namespace}.svc.cluster.local`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
    days: 3650,
  });
  const tls = { caPem: ca.certPem, certPem: serving.certPem, keyPem: serving.keyPem };
  try {
    await client.create(Secrets, {
      metadata: { name: WEBHOOK_SECRET, namespace, labels: { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': 'webhook' } },
      type: 'kubernetes.io/tls',
      data: { 'ca.crt': b64(tls.caPem), 'tls.crt': b64(tls.certPem), 'tls.key': b64(tls.keyPem) },
    });
    log?.info({ secret: `${namespace}/${WEBHOOK_SECRET}` }, 'created the webhook serving certificate');
    return tls;
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    // Another replica won the race: use its certificate.
    const theirs = read(await client.get(Secrets, WEBHOOK_SECRET, namespace));
    if (!theirs) throw new Error(`secret ${namespace}/${WEBHOOK_SECRET} exists but lacks ca.crt, tls.crt or tls.key`);
    return theirs;
  }
}

/** How the API server reaches the webhook: a URL (operator outside the cluster) or the operator's Service. */
export type WebhookEndpoint = { url: string } | { service: { namespace: string; name: string; port: number } };

function clientConfig(endpoint: WebhookEndpoint, path: string, caPem: string) {
  const caBundle = b64(caPem);
  if ('url' in endpoint) return { url: `${endpoint.url.replace(/\/+$/, '')}${path}`, caBundle };
  return { service: { ...endpoint.service, path }, caBundle };
}

/**
 * The validating webhook that refuses a second KataConfig and the mutating webhook for kata-remote pods.
 * CEL match conditions send only kata-remote pods to the webhook, so an operator outage cannot block
 * other pods.
 */
export function desiredWebhookConfigurations(endpoint: WebhookEndpoint, caPem: string): WebhookConfiguration[] {
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: VALIDATING_WEBHOOK_CONFIGURATION, labels: { 'app.kubernetes.io/name': 'osc' } },
      webhooks: [
        {
          name: 'vkataconfig.kataconfiguration.openshift.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          timeoutSeconds: 10,
          clientConfig: clientConfig(endpoint, KATACONFIG_WEBHOOK_PATH, caPem),
          rules: [
            {
              apiGroups: ['kataconfiguration.openshift.io'],
              apiVersions: ['v1'],
              operations: ['CREATE'],
              resources: ['kataconfigs'],
              scope: 'Cluster',
            },
          ],
        },
      ],
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION, labels: { 'app.kubernetes.io/name': 'osc' } },
      webhooks: [
        {
          name: 'mpod.peerpods.kataconfiguration.openshift.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          reinvocationPolicy: 'Never',
          timeoutSeconds: 10,
          clientConfig: clientConfig(endpoint, PEER_POD_WEBHOOK_PATH, caPem),
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }],
          matchConditions: [
            { name: 'kata-remote-only', expression: "has(object.spec.runtimeClassName) && object.spec.runtimeClassName == 'kata-remote'" },
          ],
        },
      ],
    },
  ];
}

export type WebhookConfiguration = KubeObject & { webhooks?: Record<string, unknown>[] };

/** Registers both webhook configurations (idempotently, by server-side apply). */
export async function registerWebhooks(client: KubeClient, endpoint: WebhookEndpoint, caPem: string): Promise<void> {
  const [validating, mutating] = desiredWebhookConfigurations(endpoint, caPem);
  if (validating) await client.apply(ValidatingWebhookConfigurations, validating);
  if (mutating) await client.apply(MutatingWebhookConfigurations, mutating);
}
