import type { KubeClient } from '../kube/client.ts';
import { MutatingWebhookConfigurations, ValidatingWebhookConfigurations } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import { KATACONFIG_WEBHOOK_PATH } from './kataconfig.ts';

/** osc's own webhook certificate (other sources use their own Secrets: src/webhooks/certsource.ts). */
export const WEBHOOK_SECRET = 'osc-webhook-server-cert';
export const WEBHOOK_SERVICE = 'osc-webhook-service';
export const VALIDATING_WEBHOOK_CONFIGURATION = 'osc-validating-webhook-configuration';
export const MUTATING_WEBHOOK_CONFIGURATION = 'osc-mutating-webhook-configuration';
export const PEER_POD_WEBHOOK_PATH = '/mutate-v1-pod';

/**
 * What the API server is told to trust: the CA bundle osc keeps itself (`caPem`), or annotations that have a
 * platform's injector (OpenShift's service CA, cert-manager) write caBundle; then osc leaves caBundle alone.
 */
export type WebhookTrust = { caPem: string } | { annotations: Record<string, string> };

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** How the API server reaches the webhook: a URL (operator outside the cluster) or the operator's Service. */
export type WebhookEndpoint = { url: string } | { service: { namespace: string; name: string; port: number } };

function clientConfig(endpoint: WebhookEndpoint, path: string, trust: WebhookTrust) {
  const ca = 'caPem' in trust && trust.caPem ? { caBundle: b64(trust.caPem) } : {};
  if ('url' in endpoint) return { url: `${endpoint.url.replace(/\/+$/, '')}${path}`, ...ca };
  return { service: { ...endpoint.service, path }, ...ca };
}

/**
 * The validating webhook that refuses a second KataConfig and the mutating webhook for kata-remote pods.
 * CEL match conditions send only kata-remote pods to the webhook, so an operator outage cannot block
 * other pods.
 */
export function desiredWebhookConfigurations(endpoint: WebhookEndpoint, trustOrCA: WebhookTrust | string): WebhookConfiguration[] {
  const trust = typeof trustOrCA === 'string' ? { caPem: trustOrCA } : trustOrCA;
  const annotations = 'annotations' in trust ? { annotations: trust.annotations } : {};
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: VALIDATING_WEBHOOK_CONFIGURATION, labels: { 'app.kubernetes.io/name': 'osc' }, ...annotations },
      webhooks: [
        {
          name: 'vkataconfig.kataconfiguration.openshift.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          timeoutSeconds: 10,
          clientConfig: clientConfig(endpoint, KATACONFIG_WEBHOOK_PATH, trust),
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
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION, labels: { 'app.kubernetes.io/name': 'osc' }, ...annotations },
      webhooks: [
        {
          name: 'mpod.peerpods.kataconfiguration.openshift.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          reinvocationPolicy: 'Never',
          timeoutSeconds: 10,
          clientConfig: clientConfig(endpoint, PEER_POD_WEBHOOK_PATH, trust),
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
export async function registerWebhooks(client: KubeClient, endpoint: WebhookEndpoint, trust: WebhookTrust | string): Promise<void> {
  const [validating, mutating] = desiredWebhookConfigurations(endpoint, trust);
  if (validating) await client.apply(ValidatingWebhookConfigurations, validating);
  if (mutating) await client.apply(MutatingWebhookConfigurations, mutating);
}
