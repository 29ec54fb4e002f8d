/**
 * The cluster's TLS security profile, followed: read once before the servers start (so that they never
 * serve a weaker profile than the cluster's for a moment), then from a watch of the `APIServer` named
 * `cluster`. A cluster that does not serve the resource (plain Kubernetes) keeps the default, Intermediate.
 */
import type { Logger } from 'pino';
import { type APIServer, APIServers } from '../api/openshift.ts';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage, isNotFound } from '../kube/errors.ts';
import type { Manager } from './manager.ts';
import { DEFAULT_TLS_OPTIONS, type TLSServerOptions, tlsServerOptions } from './tlsprofile.ts';

export const CLUSTER_APISERVER = 'cluster';

/** Whether the API server serves config.openshift.io/v1 apiservers. */
export async function apiServerConfigServed(client: KubeClient): Promise<boolean> {
  try {
    const r = await client.request<{ resources?: { name: string }[] }>('GET', `/apis/${APIServers.group}/${APIServers.version}`);
    return (r.resources ?? []).some((x) => x.name === APIServers.plural);
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/** The options for an APIServer object; a profile osc cannot apply is logged and the fallback kept. */
export function optionsOf(obj: APIServer | undefined, fallback: TLSServerOptions, log: Logger): TLSServerOptions {
  try {
    return tlsServerOptions(obj?.spec?.tlsSecurityProfile);
  } catch (e) {
    log.warn({ apiserver: CLUSTER_APISERVER, err: errorMessage(e), kept: fallback.profile }, 'cluster TLS security profile not applied');
    return fallback;
  }
}

/** The profile now, before anything is served. */
export async function initialClusterTLS(client: KubeClient, served: boolean, log: Logger): Promise<TLSServerOptions> {
  if (!served) return DEFAULT_TLS_OPTIONS;
  return optionsOf(await client.find(APIServers, CLUSTER_APISERVER), DEFAULT_TLS_OPTIONS, log);
}

const same = (a: TLSServerOptions, b: TLSServerOptions) => a.minVersion === b.minVersion && a.ciphers === b.ciphers;

/**
 * Calls `apply` whenever the cluster's profile changes (every replica, leader or not: each one serves).
 * The watch is on the one object, by name.
 */
export function followClusterTLS(manager: Manager, initial: TLSServerOptions, apply: (o: TLSServerOptions) => void, log: Logger): void {
  let current = initial;
  const changed = (obj: APIServer | undefined) => {
    const next = optionsOf(obj, current, log);
    if (same(next, current)) return;
    try {
      apply(next);
    } catch (e) {
      log.warn({ profile: next.profile, err: errorMessage(e), kept: current.profile }, 'cluster TLS security profile not applied');
      return;
    }
    current = next;
    log.info({ profile: next.profile, minVersion: next.minVersion }, 'cluster TLS security profile applied');
  };
  manager.informer(APIServers, { fieldSelector: `metadata.name=${CLUSTER_APISERVER}` }).addEventHandler({
    add: (o) => changed(o),
    update: (_, o) => changed(o),
    delete: () => changed(undefined),
  });
}
