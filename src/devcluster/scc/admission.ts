import { objectName } from '../../api/meta.ts';
import { REQUIRED_SCC_ANNOTATION, SCC_REFUSAL, type SecurityContextConstraints } from '../../api/scc.ts';
import { sortSCCs } from './order.ts';
import { type AdmittedPod, createProvider, type NamespaceAnnotations, type Provider } from './provider.ts';

// SCC admission's decision for one pod, as OpenShift makes it: the SCCs in order (or only the required
// one), each either not usable by the requesting user nor by the pod's ServiceAccount, or applied to the
// pod; the first usable one that admits the pod wins. Who may use what is asked through `authorized`, so
// that this stays pure of I/O.

export interface UserInfo {
  username: string;
  groups: string[];
}

/** Whether the subject may `use` the SCC in the namespace, by RBAC (the caller asks the API server). */
export type Authorize = (subject: UserInfo, scc: string, namespace: string) => Promise<boolean>;

export type SubjectType = 'user' | 'serviceaccount';

export type Verdict = { allowed: true; scc: string; subject: SubjectType; pod: AdmittedPod } | { allowed: false; message: string };

export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    username: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
  };
}

/** By the SCC's own users and groups, else by RBAC. */
async function appliesTo(scc: SecurityContextConstraints, who: UserInfo, namespace: string, authorize: Authorize): Promise<boolean> {
  if ((scc.users ?? []).includes(who.username)) return true;
  if (who.groups.some((g) => (scc.groups ?? []).includes(g))) return true;
  return authorize(who, objectName(scc), namespace);
}

/** An apimachinery aggregate error: duplicates once, brackets only around several. */
export function aggregate(errors: string[]): string {
  const unique = [...new Set(errors)];
  return unique.length === 1 ? (unique[0] ?? '') : `[${unique.join(', ')}]`;
}

/**
 * Every pod of a namespace is checked against the same SCCs with the same allocation: the sorted providers
 * are made once per SCC version and namespace allocation (a DaemonSet on a thousand nodes is a thousand pods).
 */
const providerCache = new Map<string, { providers: Provider[] } | { errors: string[] }>();
const PROVIDER_CACHE_SIZE = 512;

function providersFor(
  sccs: SecurityContextConstraints[],
  namespace: string,
  annotations: NamespaceAnnotations,
): { providers: Provider[] } | { errors: string[] } {
  const version = (s: SecurityContextConstraints) => s.metadata.resourceVersion ?? JSON.stringify(s);
  const key = JSON.stringify([namespace, annotations, sccs.map((s) => `${s.metadata.name}@${version(s)}`).sort()]);
  const cached = providerCache.get(key);
  if (cached) return cached;
  const providers: Provider[] = [];
  const errors: string[] = [];
  for (const s of sortSCCs(sccs)) {
    try {
      providers.push(createProvider(s, namespace, annotations));
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  const made = errors.length ? { errors } : { providers };
  if (providerCache.size >= PROVIDER_CACHE_SIZE) providerCache.clear();
  providerCache.set(key, made);
  return made;
}

export async function admitPod(input: {
  pod: AdmittedPod;
  namespace: string;
  namespaceAnnotations: NamespaceAnnotations;
  sccs: readonly SecurityContextConstraints[];
  user: UserInfo;
  authorize: Authorize;
}): Promise<Verdict> {
  const { pod, namespace, authorize } = input;
  const requiredName = pod.metadata.annotations?.[REQUIRED_SCC_ANNOTATION];
  let candidates: SecurityContextConstraints[];
  if (requiredName) {
    const required = input.sccs.find((s) => s.metadata.name === requiredName);
    if (!required)
      return {
        allowed: false,
        message: `failed to retrieve the required SCC "${requiredName}": securitycontextconstraints.security.openshift.io "${requiredName}" not found`,
      };
    candidates = [required];
  } else {
    if (input.sccs.length === 0) return { allowed: false, message: 'no SecurityContextConstraints found in cluster' };
    candidates = [...input.sccs];
  }
  const made = providersFor(candidates, namespace, input.namespaceAnnotations);
  if ('errors' in made) return { allowed: false, message: aggregate(made.errors) };
  const providers = made.providers;

  const sa = pod.spec.serviceAccountName ? serviceAccountUser(namespace, pod.spec.serviceAccountName) : undefined;
  const subjectFor = async (p: Provider): Promise<SubjectType | undefined> => {
    if (await appliesTo(p.scc, input.user, namespace, authorize)) return 'user';
    if (sa && (await appliesTo(p.scc, sa, namespace, authorize))) return 'serviceaccount';
    return undefined;
  };

  // Validating is cheap and asking who may use an SCC is not: an SCC that does not fit the pod is asked
  // about only when the pod is refused, for the message. The outcome is the same as asking first.
  const attempts: { provider: Provider; errors: string[] }[] = [];
  for (const provider of providers) {
    const { pod: applied, errors } = provider.apply(pod);
    if (errors.length === 0) {
      const subject = await subjectFor(provider);
      if (subject) return { allowed: true, scc: provider.name, subject, pod: applied };
    }
    attempts.push({ provider, errors });
  }
  const usable = await Promise.all(attempts.map((a) => (a.errors.length ? subjectFor(a.provider) : Promise.resolve(undefined))));
  const errors: string[] = [];
  attempts.forEach((a, i) => {
    if (!usable[i]) errors.push(`provider "${a.provider.name}": Forbidden: not usable by user or serviceaccount`);
    else errors.push(...a.errors);
  });
  const restrictedV2 = attempts.find((a) => a.provider.name === 'restricted-v2');
  const restricted = attempts.findIndex((a) => a.provider.name === 'restricted');
  if (restrictedV2 && restricted >= 0 && !usable[restricted] && attempts[restricted]?.errors.length === 0)
    errors.push(
      'no access to scc/restricted: Forbidden: the pod fails to validate against the `restricted-v2` security context constraint, but would validate successfully against the `restricted` security context constraint',
    );
  return { allowed: false, message: `${SCC_REFUSAL}: ${aggregate(errors)}` };
}
