/** Which platforms each package form carries, from the platform registry. */
import { platformDescriptors, platformNames } from '../platform/index.ts';
import type { PlatformName } from '../platform/platform.ts';

/**
 * The platform whose clusters install operators this way (its descriptor's `packaging`): the OLM bundle
 * carries its RBAC, and the Helm chart defaults to it.
 */
export function packagedPlatform(packaging: 'olm' | 'helm'): PlatformName {
  const found = platformDescriptors().filter((p) => p.packaging === packaging);
  if (found.length !== 1 || !found[0])
    throw new Error(`exactly one platform must be packaged as ${packaging}, not ${found.map((p) => p.name).join(', ') || 'none'}`);
  return found[0].name;
}

/** The distributions the Helm chart renders (every platform's), its own first: the default of its values. */
export function chartDistributions(): PlatformName[] {
  const own = packagedPlatform('helm');
  return [own, ...platformNames().filter((p) => p !== own)];
}
