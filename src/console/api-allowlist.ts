/**
 * The Kubernetes API paths the console passes on, and nothing else. A deny-list of dangerous paths lost
 * against percent-encoding (`%73ecrets` is `secrets` to the API server) and against subresources it did not
 * know (an image stream's `secrets`); an allow-list of what the pages use cannot be walked around that way,
 * as long as the path it matches is the one the API server will see: `consoleApiPath` decodes each segment
 * once, refuses anything ambiguous, and the server forwards the path it rebuilt, not the one it was sent.
 *
 * `{ns}` and `{name}` stand for one namespace or object name. A collection's GET is a list, or a watch with
 * `?watch=1`.
 */

type Method = 'GET' | 'POST' | 'DELETE';

interface AllowedPath {
  path: string;
  methods: readonly Method[];
}

export const CONSOLE_API_PATHS: readonly AllowedPath[] = [
  // KataConfigs page and the header's count (list, watch); the create form (POST).
  { path: '/apis/kataconfiguration.openshift.io/v1/kataconfigs', methods: ['GET', 'POST'] },
  // KataConfig detail page: its Delete button.
  { path: '/apis/kataconfiguration.openshift.io/v1/kataconfigs/{name}', methods: ['DELETE'] },
  // Operator page: which resources the installed CRD serves (API discovery of the group).
  { path: '/apis/kataconfiguration.openshift.io/v1', methods: ['GET'] },
  // KataConfig detail page: the node table and its per-node progress.
  { path: '/api/v1/nodes', methods: ['GET'] },
  // KataConfig detail page: the RuntimeClasses the install created.
  { path: '/apis/node.k8s.io/v1/runtimeclasses', methods: ['GET'] },
  // KataConfig detail page: the pods that run with a kata RuntimeClass, in every namespace.
  { path: '/api/v1/pods', methods: ['GET'] },
  // KataConfig detail page: the events about this KataConfig.
  { path: '/apis/events.k8s.io/v1/events', methods: ['GET'] },
  // Operator page: the leader election lease.
  { path: '/apis/coordination.k8s.io/v1/namespaces/{ns}/leases', methods: ['GET'] },
  // Operator page: the operator's Deployment (list, watch); Workloads page: a namespace's Deployments
  // (list, watch, create).
  { path: '/apis/apps/v1/namespaces/{ns}/deployments', methods: ['GET', 'POST'] },
  // Workloads page: one Deployment (read, delete).
  { path: '/apis/apps/v1/namespaces/{ns}/deployments/{name}', methods: ['GET', 'DELETE'] },
  // Operator page: the platform the cluster runs on.
  { path: '/apis/config.openshift.io/v1/infrastructures/cluster', methods: ['GET'] },
  // Peer pods page: peer-pods-cm.
  { path: '/api/v1/namespaces/{ns}/configmaps', methods: ['GET'] },
  // Peer pods page: the PeerPodConfig.
  { path: '/apis/confidentialcontainers.org/v1alpha1/namespaces/{ns}/peerpodconfigs', methods: ['GET'] },
  // Peer pods page: the image build and deletion Jobs.
  { path: '/apis/batch/v1/namespaces/{ns}/jobs', methods: ['GET'] },
  // Workloads page: a namespace's Pods (list, watch, create).
  { path: '/api/v1/namespaces/{ns}/pods', methods: ['GET', 'POST'] },
  // Workloads page: one Pod (read, delete).
  { path: '/api/v1/namespaces/{ns}/pods/{name}', methods: ['GET', 'DELETE'] },
];

/** A namespace or object name as the API server accepts it (DNS subdomain); API groups and versions fit too. */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export type ApiPathDecision = { path: string; refusal?: undefined } | { refusal: string; path?: undefined };

const refuse = (refusal: string): ApiPathDecision => ({ refusal });

/**
 * The path to forward for a request's method and raw (still percent-encoded) API path, or why the console
 * refuses it. Each segment is decoded exactly once; a segment that is empty (`//`, a trailing `/`), `.` or
 * `..`, holds a slash or backslash once decoded, or still holds a `%` (double encoding) is refused before any
 * matching, so the path matched is the path the API server acts on.
 */
export function consoleApiPath(method: string, rawPath: string): ApiPathDecision {
  if (!rawPath.startsWith('/')) return refuse('only Kubernetes API paths (/api, /apis) are proxied');
  const segments: string[] = [];
  for (const raw of rawPath.slice(1).split('/')) {
    let seg: string;
    try {
      seg = decodeURIComponent(raw);
    } catch {
      return refuse(`malformed percent-encoding in the path segment "${raw}"`);
    }
    if (seg === '') return refuse('empty path segments (// or a trailing /) are refused');
    if (seg === '.' || seg === '..') return refuse('path segments . and .. are refused');
    if (/[/\\]/.test(seg)) return refuse('encoded slashes in the path are refused');
    if (seg.includes('%')) return refuse('double percent-encoding in the path is refused');
    segments.push(seg);
  }
  if (segments[0] !== 'api' && segments[0] !== 'apis') return refuse('only Kubernetes API paths (/api, /apis) are proxied');
  if (segments.includes('secrets')) return refuse('the console never shows Secret values: use kubectl for Secrets');
  const bad = segments.find((s) => !NAME.test(s));
  if (bad !== undefined) return refuse(`the path segment "${bad}" is not a Kubernetes name`);
  const entry = CONSOLE_API_PATHS.find((e) => matches(e.path, segments));
  const path = `/${segments.join('/')}`;
  if (!entry) return refuse(`the console's pages do not use ${path}: use kubectl for it`);
  if (!(entry.methods as readonly string[]).includes(method)) {
    return refuse(`the console's pages do not ${method} ${path} (only ${entry.methods.join(', ')}): use kubectl for it`);
  }
  return { path };
}

function matches(pattern: string, segments: readonly string[]): boolean {
  const parts = pattern.slice(1).split('/');
  return parts.length === segments.length && parts.every((p, i) => p === '{ns}' || p === '{name}' || p === segments[i]);
}
