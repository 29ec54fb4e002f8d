import { type DeploymentMode, featureGateTexts } from '../api/featuregates.ts';
import type { KubeClient } from '../kube/client.ts';
import { kubernetes } from './kubernetes/descriptor.ts';
import { openshift } from './openshift/descriptor.ts';
import type { Platform, PlatformCluster, PlatformDescriptor, PlatformName, PlatformOptions } from './platform.ts';

/**
 * The registry of platforms: one line per platform folder. Discovery asks them in this order, so the
 * catch-all (kubernetes) comes last. Each descriptor loads its platform's code only when it is made, so
 * the operator process loads only the one it uses.
 */
const platforms: PlatformDescriptor[] = [
  openshift,
  kubernetes, // any other cluster: keep last
];

export type { PlatformOptions };

/** The platform osc assumes when none is named and none discovered (`osc install`, `osc start`). */
export const DEFAULT_PLATFORM: PlatformName = openshift.name;

/** What the named platform's clusters have (PlatformCluster); nothing for a name this build lacks. */
export const platformCluster = (name: PlatformName): PlatformCluster => platforms.find((p) => p.name === name)?.cluster ?? {};

/** The runtime handler nodes of this platform have for a runtime named so by OpenShift's extension and by kata-deploy. */
export const runtimeHandler = (name: PlatformName, extension: string, shim: string): string =>
  platformCluster(name).runtimeHandler?.(extension, shim) ?? `kata-${shim}`;

/**
 * Whether osc installed for this platform may run kata's node installer (kata-deploy): the platform's own, or
 * that of a platform its deploymentMode may choose (OpenShift's DaemonSet). Its identity then ships too.
 */
export const runsNodeInstaller = (name: PlatformName): boolean =>
  [name, ...(platformDescriptor(name).modePlatforms ?? [])].some((p) => platformCluster(p).nodeInstaller);

/** Every platform of this build, in the registry's order. */
export const platformDescriptors = (): readonly PlatformDescriptor[] => platforms;

/** The names `--distribution` takes. */
export const platformNames = (): PlatformName[] => platforms.map((p) => p.name);

/**
 * Adds a platform ahead of the others (so that its discovery is asked first), for a build or a test that
 * brings one of its own. Answers the function that takes it out again.
 */
export function registerPlatform(descriptor: PlatformDescriptor): () => void {
  if (platforms.some((p) => p.name === descriptor.name)) throw new Error(`a platform named ${descriptor.name} is already registered`);
  platforms.unshift(descriptor);
  return () => {
    const i = platforms.indexOf(descriptor);
    if (i >= 0) platforms.splice(i, 1);
  };
}

/** The named platform's descriptor, or a clear error naming the choices. */
export function platformDescriptor(name: PlatformName): PlatformDescriptor {
  const found = platforms.find((p) => p.name === name);
  if (!found)
    throw new Error(
      `the ${name} platform is not available in this build of osc: run it on ${platformNames().join(' or ')} (--distribution)`,
    );
  return found;
}

/** The platform of a cluster that serves these API groups: the first in the registry that recognises it. */
export function discoverPlatform(servedGroups: ReadonlySet<string>): PlatformName {
  const found = platforms.find((p) => p.recognises(servedGroups));
  if (!found)
    throw new Error(
      `no platform of this build of osc recognises this cluster: choose one of ${platformNames().join(', ')} (--distribution)`,
    );
  return found.name;
}

/** Makes the named platform with its own settings checked, or says clearly what is wrong. */
export async function createPlatform(name: PlatformName, opts: PlatformOptions = {}): Promise<Platform> {
  const descriptor = platformDescriptor(name);
  return descriptor.create(opts, descriptor.parseSettings(opts.settings?.[name] ?? {}));
}

/** The API groups the cluster serves (discovery, readable by any authenticated account). */
export async function servedGroups(client: KubeClient, signal?: AbortSignal): Promise<Set<string>> {
  const res = await client.request<{ groups?: { name: string }[] }>('GET', '/apis', { ...(signal ? { signal } : {}) });
  return new Set((res.groups ?? []).map((g) => g.name));
}

/**
 * The platform the deploymentMode feature gate asks for on a cluster serving these groups: `DaemonSet`
 * osc's kata-deploy installer (kubernetes) even on OpenShift, `MachineConfig` the Machine Config Operator
 * (openshift; where its API is absent, discovery's choice and a warning), `DaemonSetFallback` discovery.
 */
export function platformForMode(mode: DeploymentMode, served: ReadonlySet<string>): { name: PlatformName; warning?: string } {
  const discovered = discoverPlatform(served);
  if (mode === 'DaemonSet') return { name: 'kubernetes' };
  if (mode === 'MachineConfig' && !platformDescriptor('openshift').recognises(served))
    return { name: discovered, warning: featureGateTexts.noMachineConfigApi(discovered) };
  return { name: mode === 'MachineConfig' ? 'openshift' : discovered };
}

/** Whether the running platform is the one deploymentMode asks for (DaemonSetFallback: whichever discovery chose). */
export const modeMatches = (mode: DeploymentMode, running: string): boolean =>
  mode === 'DaemonSetFallback' || (mode === 'DaemonSet' ? running === 'kubernetes' : running === 'openshift');

/**
 * The platform to run on: the one asked for (`osc run --distribution`), else the one the deploymentMode
 * feature gate asks for, else the one discovery finds. Answers it with how it was chosen, for the log.
 */
export async function choosePlatform(
  client: KubeClient,
  requested: PlatformName | undefined,
  opts: PlatformOptions = {},
  mode: DeploymentMode = 'DaemonSetFallback',
): Promise<{ platform: Platform; chosenBy: 'flag' | 'discovery' | 'deploymentMode' | 'in use'; warning?: string }> {
  if (requested) return { platform: await createPlatform(requested, opts), chosenBy: 'flag' };
  const served = await servedGroups(client);
  const chosen = platformForMode(mode, served);
  const kept = opts.namespace ? await platformInUseElsewhere(client, chosen.name, opts.namespace, served) : undefined;
  if (kept)
    return { platform: await createPlatform(kept, opts), chosenBy: 'in use', warning: featureGateTexts.modeKept(mode, chosen.name, kept) };
  return {
    platform: await createPlatform(chosen.name, opts),
    chosenBy: mode === 'DaemonSetFallback' ? 'discovery' : 'deploymentMode',
    ...(chosen.warning ? { warning: chosen.warning } : {}),
  };
}

/**
 * Another platform than the one chosen, when it has kata on the nodes and the chosen one has not: a
 * deploymentMode changed after the install must not start a second installer beside the first (whose
 * configuration nobody would then remove). The uninstall goes through the platform that installed.
 */
async function platformInUseElsewhere(
  client: KubeClient,
  chosen: PlatformName,
  namespace: string,
  served: ReadonlySet<string>,
): Promise<PlatformName | undefined> {
  const inUse = async (d: PlatformDescriptor) => (d.inUse ? d.inUse(client, namespace) : false);
  if (await inUse(platformDescriptor(chosen))) return undefined;
  // Only platforms this cluster could run are asked (the operator may read nothing of the others' APIs).
  for (const d of platforms) if (d.name !== chosen && d.recognises(served) && (await inUse(d))) return d.name;
  return undefined;
}
