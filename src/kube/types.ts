/**
 * The wire shapes of Kubernetes objects, as JSON (timestamps are RFC 3339 strings). Only the fields osc
 * reads or writes are typed; everything else passes through untouched.
 */
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
