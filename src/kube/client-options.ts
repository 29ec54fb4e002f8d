import type { KubeObject } from '../api/meta.ts';

/** The options of KubeClient's requests (src/kube/client.ts), and what its watches fail with. */

export type PatchType = 'merge' | 'json' | 'strategic' | 'apply';
export const patchContentType: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** The representation asked for (default application/json; the issuer's keys are application/jwk-set+json only). */
  accept?: string;
  signal?: AbortSignal;
}

export interface ListOptions<T = KubeObject> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  limit?: number;
  signal?: AbortSignal;
  /**
   * Applied to each item as its page arrives (e.g. an informer's reduction): only one page of whole
   * objects is in memory at a time, however long the list.
   */
  map?: (item: T) => T;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  /** Ask the server to end the watch after this long (it picks a random time below it). */
  timeoutSeconds?: number;
  signal?: AbortSignal;
  /** Abort the stream when nothing (not even a bookmark) arrived for this long. */
  idleTimeoutMs?: number;
  /**
   * Parses one event's line of JSON (default JSON.parse): a watcher that never reads part of an object may
   * leave it out before it is parsed.
   */
  parseEvent?: (line: string) => unknown;
}

export interface WriteOptions {
  namespace?: string;
  fieldManager?: string;
  dryRun?: boolean;
  signal?: AbortSignal;
}

/** Observes every request: the metrics and the benchmark count API traffic here. */
export type RequestObserver = (verb: string, resource: string, status: number, seconds: number) => void;

export class WatchIdleError extends Error {
  constructor(ms: number) {
    super(`watch stream silent for ${ms}ms`);
    this.name = 'WatchIdleError';
  }
}
