import { isDeepStrictEqual } from 'node:util';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import { MutatingWebhookConfigurations, ValidatingWebhookConfigurations } from '../kube/resources.ts';
import type { Manager } from '../runtime/manager.ts';
import {
  desiredWebhookConfigurations,
  MUTATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_CONFIGURATION,
  type WebhookConfiguration,
  type WebhookEndpoint,
  type WebhookTrust,
} from './setup.ts';

export const WEBHOOK_REGISTRATION_CONTROLLER = 'webhook-registration';
const KEY = 'webhooks';

/**
 * Whether a webhook configuration in the cluster differs from ours in anything we set: missing, another
 * endpoint (e.g. a replica that has since died registered itself), another CA bundle, rules, or a
 * webhook added or removed by hand. Fields the API server defaults (namespaceSelector, matchPolicy...) are
 * not ours and do not count.
 */
export function registrationDrifted(existing: WebhookConfiguration | undefined, desired: WebhookConfiguration): boolean {
  if (!existing) return true;
  const annotations = existing.metadata.annotations ?? {};
  if (Object.entries(desired.metadata.annotations ?? {}).some(([k, v]) => annotations[k] !== v)) return true;
  const have = existing.webhooks ?? [];
  const want = desired.webhooks ?? [];
  if (have.length !== want.length) return true;
  return want.some((w, i) => {
    const h = have[i] ?? {};
    return Object.entries(w).some(([k, v]) => !isDeepStrictEqual(k === 'clientConfig' ? ownClientConfig(h[k], v) : h[k], v));
  });
}

/**
 * The live clientConfig without caBundle when we do not set one: a platform's injector owns it then
 * (OpenShift's service CA, cert-manager), and what it writes there is not drift.
 */
function ownClientConfig(live: unknown, desired: unknown): unknown {
  if (!live || typeof live !== 'object' || (desired as { caBundle?: string }).caBundle !== undefined) return live;
  const { caBundle: _injected, ...rest } = live as Record<string, unknown>;
  return rest;
}

/**
 * Keeps the webhook registrations true while this replica leads: recreated when deleted, rewritten when
 * edited or pointed elsewhere. Only the leader writes them, so a standby (or a replica that died) never
 * leaves the API server calling an endpoint that does not answer. See docs/security.md.
 */
export function setupWebhookRegistration(mgr: Manager, endpoint: WebhookEndpoint, trust: () => WebhookTrust): { resync(): void } {
  const kinds: [ResourceType<WebhookConfiguration>, string][] = [
    [ValidatingWebhookConfigurations as ResourceType<WebhookConfiguration>, VALIDATING_WEBHOOK_CONFIGURATION],
    [MutatingWebhookConfigurations as ResourceType<WebhookConfiguration>, MUTATING_WEBHOOK_CONFIGURATION],
  ];
  const informers = kinds.map(([rt, name]) => mgr.informer(rt, { fieldSelector: `metadata.name=${name}` }));
  const controller = mgr.addController({
    name: WEBHOOK_REGISTRATION_CONTROLLER,
    watches: informers.map((informer) => ({ informer, keys: () => [KEY] })),
    reconcile: async (_key, { log, signal }) => {
      // The trust may change under us (osc's own CA bundle grows at each rotation): read it at each pass.
      const desired = desiredWebhookConfigurations(endpoint, trust());
      for (const [i, [rt, name]] of kinds.entries()) {
        const want = desired[i];
        if (!want || !registrationDrifted(informers[i]?.get(name), want)) continue;
        await mgr.client.apply(rt, want, { signal });
        log.info({ kind: rt.kind, name }, 'webhook registration restored');
      }
      return undefined;
    },
  });
  // Each time this replica starts leading, one pass: registrations deleted meanwhile send no event.
  mgr.addLeaderRunnable(async () => controller.queue.add(KEY));
  // A new CA bundle sends no event from the registrations: the certificate rotation asks for a pass.
  return { resync: () => controller.queue.add(KEY) };
}

/** Whether both registrations, as the API server holds them, carry exactly this CA bundle. */
export async function registrationsCarry(client: KubeClient, caPem: string): Promise<boolean> {
  const want = Buffer.from(caPem).toString('base64');
  const configs = await Promise.all([
    client.find(ValidatingWebhookConfigurations as ResourceType<WebhookConfiguration>, VALIDATING_WEBHOOK_CONFIGURATION),
    client.find(MutatingWebhookConfigurations as ResourceType<WebhookConfiguration>, MUTATING_WEBHOOK_CONFIGURATION),
  ]);
  return configs.every(
    (c) => c?.webhooks?.length && c.webhooks.every((w) => (w.clientConfig as { caBundle?: string } | undefined)?.caBundle === want),
  );
}
