/** Every packaging file (bundle/ and charts/osc/), from the manifests of `osc install` with default options. */
import { DEFAULT_MONITOR_IMAGE } from '../api/names.ts';
import { operatorPriorityClass } from '../install/availability.ts';
import { defaultImage, manifestFiles, manifests, packageVersion } from '../install/manifests.ts';
import { platformDescriptors } from '../platform/index.ts';
import type { PlatformName } from '../platform/platform.ts';
import { CHART_NAME, chartFiles, TEMPLATE_OPTIONS } from './helm.ts';
import { bundleFiles, olmBundle } from './olm.ts';

/** The choices of the operator's --log-level (`osc run`, `osc install`): pino's levels. */
export const OPERATOR_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface PackagingFile {
  /** Path from the repository root. */
  path: string;
  text: string;
}

/**
 * The platform whose clusters install operators this way (its descriptor's `packaging`): the OLM bundle
 * carries its RBAC, and so does the Helm chart.
 */
export function packagedPlatform(packaging: 'olm' | 'helm'): PlatformName {
  const found = platformDescriptors().filter((p) => p.packaging === packaging);
  if (found.length !== 1 || !found[0])
    throw new Error(`exactly one platform must be packaged as ${packaging}, not ${found.map((p) => p.name).join(', ') || 'none'}`);
  return found[0].name;
}

export async function packagingFiles(): Promise<PackagingFile[]> {
  const version = packageVersion();
  const bundle = olmBundle(await manifests({ distribution: packagedPlatform('olm') }), { version });
  const chart = chartFiles(await manifestFiles({ ...TEMPLATE_OPTIONS, distribution: packagedPlatform('helm') }), {
    version,
    defaultImage: defaultImage(),
    defaultMonitorImage: DEFAULT_MONITOR_IMAGE,
    logLevels: OPERATOR_LOG_LEVELS,
    defaultPriorityClass: operatorPriorityClass(packagedPlatform('helm')),
  });
  return [
    ...bundleFiles(bundle).map((f) => ({ path: `bundle/${f.path}`, text: f.text })),
    ...chart.map((f) => ({ path: `charts/${CHART_NAME}/${f.path}`, text: f.text })),
  ];
}
