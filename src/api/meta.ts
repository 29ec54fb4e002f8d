/**
 * The wire shapes of Kubernetes objects, as JSON (timestamps are RFC 3339 strings), and where each kind
 * lives in the API: the object model every API type of osc is written in, as apimachinery is to Kubernetes'
 * own APIs. Only the fields osc reads or writes are typed; everything else passes through untouched. The
 * REST client (`src/kube/`) re-exports these for its users.
 */

/** Where a kind of resource lives in the API: enough to build every URL for it without discovery. */
export interface ResourceType<T extends KubeObject = KubeObject> {
  group: string; // '' for the core group
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Phantom field so that a descriptor carries its object type; never set. */
  readonly _type?: T;
}

/**
 * Whether two string maps (labels, annotations) hold the same keys and values. Called for every watch event
 * of a thousand nodes: a plain loop, where a generic deep comparison costs several times more.
 */
export function sameStrings(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    if (b?.[k] !== a[k]) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}

/** An object's name, or '' when it has none (an object being made with generateName, or no object at all). */
export const objectName = (o: { metadata: { name?: string } } | undefined): string => o?.metadata.name ?? '';

export const apiVersionOf = (rt: ResourceType): string => (rt.group ? `${rt.group}/${rt.version}` : rt.version);

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
}

export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** metav1.Condition, but reason and message may be empty (the KataConfig API allows it). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/** The namespace/name key of an object, as the work queue and caches use it. */
export function keyOf(o: KubeObject): string {
  const { namespace, name } = o.metadata;
  return namespace ? `${namespace}/${name}` : (name ?? '');
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export interface CustomResourceDefinition extends KubeObject {
  spec: Record<string, unknown>;
  status?: { conditions?: Condition[] };
}
