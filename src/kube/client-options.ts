import type { KubeObject, ResourceType } from '../api/meta.ts';

/** The options of KubeClient (src/kube/client.ts) and of its requests, their defaults, and what its watches fail with. */

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
  /** Parses a JSON answer (default JSON.parse): see KubeClientOptions.parsers. */
  parse?: JsonParser;
}

/** Parses a JSON document from its bytes (UTF-8). */
export type JsonParser = (json: Buffer) => unknown;

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

/**
 * How long a request's connection may carry nothing before the request fails and the connection is dropped.
 * The API server answers an ordinary request in well under a second even when busy (lists are paged); a
 * connection silent for this long is far more likely dead (a forgotten keep-alive connection) than slow, and
 * every second here is a second a controller waits before it tries a fresh one.
 */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** How many times a request answered 429 (or a 5xx) with Retry-After is retried: client-go's default. */
export const MAX_RETRY_AFTER = 10;
/** The longest Retry-After honoured as sent (a larger one is waited this long, then retried). */
export const MAX_RETRY_AFTER_SECONDS = 60;

export interface KubeClientOptions {
  fieldManager?: string;
  requestTimeoutMs?: number;
  userAgent?: string;
  /**
   * How to parse the JSON of some kinds, wherever this client reads it (a get, a list page, a write's answer,
   * a watch event), instead of JSON.parse: for a client whose callers never read part of a large kind (the
   * operator leaves out Node images: nodejson.ts).
   */
  parsers?: ReadonlyMap<ResourceType, JsonParser>;
}
