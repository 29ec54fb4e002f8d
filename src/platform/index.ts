import type { KubeClient } from '../kube/client.ts';
import type { Platform, PlatformName, PlatformOptions } from './platform.ts';

/**
 * Which platform the operator runs on, and how each is made. Each factory imports its platform lazily,
 * so the operator process loads only the one it uses.
 */

export type { PlatformOptions };

export type PlatformFactory = (opts: PlatformOptions) => Promise<Platform>;

/** The platforms this build has; one missing here is refused by name. */
export const platformFactories: Partial<Record<PlatformName, PlatformFactory>> = {
  openshift: async (opts) => (await import('./openshift/platform.ts')).openShiftPlatform(opts),
  kubernetes: async (opts) => (await import('./kubernetes/platform.ts')).createKubernetesPlatform(opts),
};

/** The API group that tells OpenShift (with its Machine Config Operator) from any other Kubernetes. */
export const MACHINE_CONFIG_GROUP = 'machineconfiguration.openshift.io';

/** The platform of a cluster that serves these API groups: OpenShift when the MCO's group is there. */
export const discoverPlatform = (servedGroups: ReadonlySet<string>): PlatformName =>
  servedGroups.has(MACHINE_CONFIG_GROUP) ? 'openshift' : 'kubernetes';

/** Makes the named platform, or says clearly that this build has none by that name. */
export async function createPlatform(name: PlatformName, opts: PlatformOptions = {}): Promise<Platform> {
  const factory = platformFactories[name];
  if (!factory)
    throw new Error(
      `the ${name} platform is not available in this build of osc: run it on ${Object.keys(platformFactories).join(' or ')} (--distribution)`,
    );
  return factory(opts);
}

/** The API groups the cluster serves (discovery, readable by any authenticated account). */
export async function servedGroups(client: KubeClient, signal?: AbortSignal): Promise<Set<string>> {
  const res = await client.request<{ groups?: { name: string }[] }>('GET', '/apis', { ...(signal ? { signal } : {}) });
  return new Set((res.groups ?? []).map((g) => g.name));
}

/**
 * The platform to run on: the one asked for (`osc run --distribution`), else the one discovery finds.
 * Answers it with how it was chosen, for the log.
 */
export async function choosePlatform(
  client: KubeClient,
  requested: PlatformName | undefined,
  opts: PlatformOptions = {},
): Promise<{ platform: Platform; chosenBy: 'flag' | 'discovery' }> {
  const name = requested ?? discoverPlatform(await servedGroups(client));
  return { platform: await createPlatform(name, opts), chosenBy: requested ? 'flag' : 'discovery' };
}
