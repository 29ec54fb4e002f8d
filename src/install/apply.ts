import { CCO_NAMESPACE } from '../api/cloudcredential.ts';
import { objectName } from '../api/meta.ts';
import { OPERATOR_FIELD_MANAGER } from '../api/names.ts';
import { SecurityContextConstraintsType } from '../api/scc.ts';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
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
import { briefPaths, changedPaths } from './changes.ts';

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

/**
 * Namespaces of other operators that osc's objects go into only where that operator runs: OpenShift can be
 * installed without the Cloud Credential Operator (a capability that can be turned off), and then the Role
 * that lets osc make its CredentialsRequest has nowhere to go and nothing to do.
 */
const OPTIONAL_NAMESPACES: Record<string, string> = {
  [CCO_NAMESPACE]: 'no Cloud Credential Operator: peer pods then need peer-pods-secret',
};

async function namespaceExists(client: KubeClient, name: string, created: readonly KubeObject[]): Promise<boolean> {
  return created.some((o) => o.kind === 'Namespace' && o.metadata.name === name) || !!(await client.find(Namespaces, name));
}

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
 * The label `osc install` puts on every object it applies, so that a later install can tell which objects
 * of the cluster are its own and remove those a newer version no longer ships. (The webhook configurations
 * are the operator's to keep, under its field manager: they are always shipped, and never labelled here.)
 */
export const INSTALLED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const INSTALLED_BY = 'osc-install';

/** Kinds whose removal would take data with it: reported when no longer shipped, never deleted. */
const NEVER_PRUNED = new Set(['CustomResourceDefinition', 'Namespace']);

export interface ApplyOptions {
  fieldManager?: string;
  /** Ask the API server what would change (server-side dry run) and write nothing. */
  dryRun?: boolean;
  /** Put INSTALLED_BY_LABEL on each object (default: under osc install's own field manager). */
  label?: boolean;
}

function labelled(obj: KubeObject): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, labels: { ...obj.metadata.labels, [INSTALLED_BY_LABEL]: INSTALLED_BY } } };
}

/**
 * Server-side applies the objects in order (idempotent: a second install changes nothing); CRDs are
 * waited for until the API server serves them. Answers one line per object, as `kubectl apply` does, with
 * the fields an update changed: `created`, `configured (paths)`, `unchanged`.
 */
export async function applyAll(
  client: KubeClient,
  objects: KubeObject[],
  onApplied?: (line: string) => void,
  opts: ApplyOptions | string = {},
): Promise<void> {
  const { fieldManager = INSTALL_FIELD_MANAGER, dryRun = false, label } = typeof opts === 'string' ? { fieldManager: opts } : opts;
  const mark = label ?? fieldManager === INSTALL_FIELD_MANAGER;
  const suffix = dryRun ? ' (dry run)' : '';
  for (const shipped of objects) {
    const rt = resourceOf(shipped);
    if (OPTIONAL.includes(rt) && !(await served(client, rt))) {
      onApplied?.(`${displayName(shipped)} skipped: ${rt.group}/${rt.version} ${rt.kind} is not served here (no Prometheus Operator)`);
      continue;
    }
    const ns = shipped.metadata.namespace;
    if (ns && OPTIONAL_NAMESPACES[ns] && !(await namespaceExists(client, ns, objects))) {
      onApplied?.(`${displayName(shipped)} skipped: namespace ${ns} does not exist (${OPTIONAL_NAMESPACES[ns]})`);
      continue;
    }
    const obj = mark ? labelled(shipped) : shipped;
    const before = await client.find(rt, objectName(obj), obj.metadata.namespace);
    let after: KubeObject;
    try {
      after = await client.apply(rt, obj, { fieldManager, dryRun });
    } catch (e) {
      // A dry run creates nothing, so an object in the namespace it would create finds no namespace.
      if (!(dryRun && !before && isNotFound(e))) throw e;
      onApplied?.(`${displayName(obj)} created${suffix}`);
      continue;
    }
    onApplied?.(`${displayName(obj)} ${verbOf(obj, before, after)}${suffix}`);
  }
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  // Already applied above; this only waits for Established (re-applying an identical CRD is a no-op).
  if (crds.length && !dryRun) await waitEstablished(client, crds);
}

function verbOf(desired: KubeObject, before: KubeObject | undefined, after: KubeObject): string {
  if (!before) return 'created';
  // By content, not resourceVersion: a dry run answers the old resourceVersion even for a change, and
  // another writer's status update (a disruption budget's, a Deployment's) moves it with no change of ours.
  if (sameContent(before, after)) return 'unchanged';
  const paths = changedPaths(desired, before, after);
  return paths.length ? `configured (${briefPaths(paths)})` : 'configured';
}

/** The same object but for what the API server and other writers keep: versions, field owners, status. */
function sameContent(a: KubeObject, b: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const { resourceVersion: _r, managedFields: _m, generation: _g, ...meta } = o.metadata;
    const { status: _s, ...rest } = o as KubeObject & { status?: unknown };
    return { ...rest, metadata: meta };
  };
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

/**
 * The objects an earlier `osc install` made (INSTALLED_BY_LABEL) that this one no longer ships: removed
 * (or, in a dry run, said to be), except CRDs and the namespace, which would take data with them and are
 * only reported. Answers one line per object.
 */
export async function pruneUnshipped(
  client: KubeClient,
  shipped: readonly KubeObject[],
  onRemoved?: (line: string) => void,
  dryRun = false,
): Promise<void> {
  const ids = new Set(shipped.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`));
  for (const rt of [...KINDS].reverse()) {
    let found: KubeObject[];
    try {
      found = (await client.list(rt, { labelSelector: `${INSTALLED_BY_LABEL}=${INSTALLED_BY}` })).items;
    } catch (e) {
      // An API this cluster does not serve (an add-on's) holds nothing of ours.
      if (isNotFound(e)) continue;
      throw e;
    }
    for (const o of found) {
      const obj = { ...o, apiVersion: rt.group ? `${rt.group}/${rt.version}` : rt.version, kind: rt.kind };
      if (ids.has(`${rt.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`) || o.metadata.deletionTimestamp) continue;
      if (NEVER_PRUNED.has(rt.kind)) {
        onRemoved?.(`${displayName(obj)} kept: no longer shipped, but removing it would delete what it holds (delete it yourself)`);
        continue;
      }
      if (!dryRun) await client.delete(rt, objectName(o), { namespace: o.metadata.namespace, propagationPolicy: 'Background' });
      onRemoved?.(`${displayName(obj)} removed: no longer shipped${dryRun ? ' (dry run)' : ''}`);
    }
  }
}

async function waitEstablished(client: KubeClient, crds: KubeObject[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const got = await client.get(CustomResourceDefinitions, objectName(crd));
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
    if (await client.delete(rt, objectName(obj), { namespace: obj.metadata.namespace, propagationPolicy: 'Background' })) {
      deleted++;
      onDeleted?.(`${displayName(obj)} deleted`);
    }
  }
  return deleted;
}
