import { OPERATOR_FIELD_MANAGER } from '../api/names.ts';
import { SecurityContextConstraintsType } from '../api/scc.ts';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import {
  CertManagerCertificates,
  CertManagerIssuers,
  ClusterRoleBindings,
  ClusterRoles,
  CustomResourceDefinitions,
  Deployments,
  Leases,
  MutatingWebhookConfigurations,
  Namespaces,
  NetworkPolicies,
  PodDisruptionBudgets,
  PriorityClasses,
  RoleBindings,
  Roles,
  Secrets,
  ServiceAccounts,
  ServiceMonitors,
  Services,
  ValidatingWebhookConfigurations,
} from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';

const KINDS: ResourceType[] = [
  Namespaces,
  CustomResourceDefinitions,
  ServiceAccounts,
  ClusterRoles,
  ClusterRoleBindings,
  Roles,
  RoleBindings,
  Services,
  PriorityClasses,
  NetworkPolicies,
  Deployments,
  PodDisruptionBudgets,
  ValidatingWebhookConfigurations,
  MutatingWebhookConfigurations,
  Secrets,
  Leases,
  ServiceMonitors,
  CertManagerIssuers,
  CertManagerCertificates,
  SecurityContextConstraintsType,
];

/** Kinds applied only where their API is served (an add-on's CRD), else reported as skipped. */
const OPTIONAL: ResourceType[] = [ServiceMonitors];

/** Whether a manifest's kind is one of the optional APIs (served only where an add-on runs). */
export function isOptionalAPI(obj: KubeObject): boolean {
  return OPTIONAL.includes(resourceOf(obj));
}

async function served(client: KubeClient, rt: ResourceType): Promise<boolean> {
  try {
    const res = await client.request<{ resources?: { name: string }[] }>('GET', `/apis/${rt.group}/${rt.version}`);
    return res.resources?.some((r) => r.name === rt.plural) ?? false;
  } catch {
    return false;
  }
}

/** The API location of a manifest's kind (only the kinds osc install writes). */
export function resourceOf(obj: KubeObject): ResourceType {
  const rt = KINDS.find((k) => k.kind === obj.kind && (k.group ? `${k.group}/${k.version}` : k.version) === obj.apiVersion);
  if (!rt) throw new Error(`osc install does not know how to apply ${obj.apiVersion} ${obj.kind}`);
  return rt;
}

/** `kind/name` as kubectl prints it, e.g. `deployment.apps/osc-controller-manager`. */
export function displayName(obj: KubeObject): string {
  const rt = resourceOf(obj);
  const kind = rt.kind.toLowerCase();
  return `${rt.group ? `${kind}.${rt.group}` : kind}/${obj.metadata.name}`;
}

export const INSTALL_FIELD_MANAGER = 'osc-install';

/**
 * The field manager the operator registers its webhooks with (src/operator.ts's KubeClient). `osc install`
 * applies the webhook configurations under the same manager: when the operator later registers them (by
 * Service, or by URL when it runs outside the cluster), server-side apply then replaces our clientConfig
 * instead of merging a url into a service (which the API server rejects: exactly one of them).
 */
export { OPERATOR_FIELD_MANAGER };

/**
 * Server-side applies the objects in order (idempotent: a second install changes nothing); CRDs are
 * waited for until the API server serves them. Answers one line per object, as `kubectl apply` does.
 */
export async function applyAll(
  client: KubeClient,
  objects: KubeObject[],
  onApplied?: (line: string) => void,
  fieldManager = INSTALL_FIELD_MANAGER,
): Promise<void> {
  for (const obj of objects) {
    const rt = resourceOf(obj);
    if (OPTIONAL.includes(rt) && !(await served(client, rt))) {
      onApplied?.(`${displayName(obj)} skipped: ${rt.group}/${rt.version} ${rt.kind} is not served here (no Prometheus Operator)`);
      continue;
    }
    const before = await client.find(rt, obj.metadata.name ?? '', obj.metadata.namespace);
    const after = await client.apply(rt, obj, { fieldManager });
    const verb = !before ? 'created' : before.metadata.resourceVersion === after.metadata.resourceVersion ? 'unchanged' : 'configured';
    onApplied?.(`${displayName(obj)} ${verb}`);
  }
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  // Already applied above; this only waits for Established (re-applying an identical CRD is a no-op).
  if (crds.length) await waitEstablished(client, crds);
}

async function waitEstablished(client: KubeClient, crds: KubeObject[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const got = await client.get(CustomResourceDefinitions, crd.metadata.name ?? '');
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not established after 60s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Deletes the objects in reverse order; answers one line per object that existed. */
export async function deleteAll(client: KubeClient, objects: KubeObject[], onDeleted?: (line: string) => void): Promise<number> {
  let deleted = 0;
  for (const obj of [...objects].reverse()) {
    const rt = resourceOf(obj);
    if (await client.delete(rt, obj.metadata.name ?? '', { namespace: obj.metadata.namespace, propagationPolicy: 'Background' })) {
      deleted++;
      onDeleted?.(`${displayName(obj)} deleted`);
    }
  }
  return deleted;
}
