/**
 * The Workloads page's pure logic: the documented sample workloads, what a pasted YAML creates (and
 * where), and the pods by kata runtime class. Unit tested.
 */
import { parse, stringify } from 'yaml';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from '../../api/names.ts';

/** The runtime classes a kata workload can ask for, in the order the page offers them (kata-cc: confidential containers). */
export const KATA_RUNTIME_CLASS_NAMES = [KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS, 'kata-cc'];

export type WorkloadKind = 'Pod' | 'Deployment';

/** The example container of the documented web console procedure for a sandboxed workload: hello-openshift, unprivileged. */
const helloContainer = () => ({
  name: 'hello-openshift',
  image: 'quay.io/openshift/origin-hello-openshift',
  ports: [{ containerPort: 8888 }],
  securityContext: {
    privileged: false,
    allowPrivilegeEscalation: false,
    runAsNonRoot: true,
    runAsUser: 1001,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  },
});

/** The sample YAML of a Pod or a Deployment that runs in a sandboxed container of `runtimeClass`. */
export function sampleWorkload(kind: WorkloadKind, runtimeClass: string): string {
  const labels = { app: 'hello-openshift' };
  const podSpec = { runtimeClassName: runtimeClass, containers: [helloContainer()] };
  const obj =
    kind === 'Pod'
      ? { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hello-openshift', labels }, spec: podSpec }
      : {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'hello-openshift', labels },
          spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec } },
        };
  return stringify(obj, { lineWidth: 0 });
}

export interface WorkloadRequest {
  kind: WorkloadKind;
  name: string;
  namespace: string;
  /** The API path to POST to. */
  path: string;
  body: Record<string, unknown>;
  /** The pod's runtimeClassName, if any. */
  runtimeClassName?: string;
}

/**
 * What a YAML document creates: a v1 Pod or an apps/v1 Deployment, in its own namespace or `namespace`.
 * Answers an error in words when it is something else.
 */
export function workloadRequest(text: string, namespace: string): WorkloadRequest | { error: string } {
  let obj: unknown;
  try {
    obj = parse(text);
  } catch (e) {
    return { error: `the YAML does not parse: ${(e as Error).message}` };
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return { error: 'the YAML must be one object: a Pod or a Deployment' };
  const o = obj as { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string }; spec?: Record<string, unknown> };
  const ns = o.metadata?.namespace || namespace;
  if (!ns) return { error: 'metadata.namespace: give a namespace (or fill in Namespace above)' };
  const name = o.metadata?.name ?? '';
  if (!name) return { error: 'metadata.name: give the workload a name' };
  const body = { ...o, metadata: { ...o.metadata, namespace: ns } } as Record<string, unknown>;
  const enc = encodeURIComponent(ns);
  if (o.kind === 'Pod' && o.apiVersion === 'v1') {
    const rc = (o.spec as { runtimeClassName?: string } | undefined)?.runtimeClassName;
    return { kind: 'Pod', name, namespace: ns, path: `/api/v1/namespaces/${enc}/pods`, body, ...(rc ? { runtimeClassName: rc } : {}) };
  }
  if (o.kind === 'Deployment' && o.apiVersion === 'apps/v1') {
    const rc = (o.spec as { template?: { spec?: { runtimeClassName?: string } } } | undefined)?.template?.spec?.runtimeClassName;
    return {
      kind: 'Deployment',
      name,
      namespace: ns,
      path: `/apis/apps/v1/namespaces/${enc}/deployments`,
      body,
      ...(rc ? { runtimeClassName: rc } : {}),
    };
  }
  return {
    error: `kind: this page creates a Pod (apiVersion v1) or a Deployment (apiVersion apps/v1), not ${o.kind ?? 'an object without a kind'}${o.apiVersion ? ` (${o.apiVersion})` : ''}`,
  };
}

interface PodLike {
  metadata: {
    name: string;
    namespace?: string;
    deletionTimestamp?: string;
    creationTimestamp?: string;
    ownerReferences?: { kind: string; name: string }[];
  };
  spec?: { runtimeClassName?: string; nodeName?: string };
  status?: { phase?: string };
}

/** A pod's phase as `kubectl get pods` shows it first: Terminating while it is being deleted. */
export const podPhase = (p: PodLike): string => (p.metadata.deletionTimestamp ? 'Terminating' : (p.status?.phase ?? 'Pending'));

/** Pods grouped by the kata runtime class they ask for, in KATA_RUNTIME_CLASS_NAMES order; pods without one are left out. */
export function podsByRuntimeClass<P extends PodLike>(pods: readonly P[], runtimeClasses: readonly string[]): Map<string, P[]> {
  const out = new Map<string, P[]>(runtimeClasses.map((rc) => [rc, []]));
  for (const p of pods) {
    const rc = p.spec?.runtimeClassName;
    if (rc && out.has(rc)) out.get(rc)?.push(p);
  }
  const key = (p: P) => `${p.metadata.namespace}/${p.metadata.name}`;
  for (const list of out.values()) list.sort((a, b) => key(a).localeCompare(key(b)));
  return out;
}
