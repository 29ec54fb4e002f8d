/** Every packaging file (bundle/ and charts/osc/), from the manifests of `osc install` with default options. */
import { DEFAULT_MONITOR_IMAGE } from '../controllers/monitor/desired.ts';
import { defaultImage, manifestFiles, manifests, packageVersion } from '../install/manifests.ts';
import { CHART_NAME, chartFiles, TEMPLATE_OPTIONS } from './helm.ts';
import { bundleFiles, olmBundle } from './olm.ts';

/** The choices of the operator's --log-level (`osc run`, `osc install`): pino's levels. */
export const OPERATOR_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface PackagingFile {
  /** Path from the repository root. */
  path: string;
  text: string;
}

export async function packagingFiles(): Promise<PackagingFile[]> {
  const version = packageVersion();
  const bundle = olmBundle(await manifests(), { version });
  const templates = {
    openshift: await manifestFiles({ ...TEMPLATE_OPTIONS, distribution: 'openshift' }),
    kubernetes: await manifestFiles({ ...TEMPLATE_OPTIONS, distribution: 'kubernetes' }),
  };
  const chart = chartFiles(templates, {
    version,
    defaultImage: defaultImage(),
    defaultMonitorImage: DEFAULT_MONITOR_IMAGE,
    logLevels: OPERATOR_LOG_LEVELS,
  });
  return [
    ...bundleFiles(bundle).map((f) => ({ path: `bundle/${f.path}`, text: f.text })),
    ...chart.map((f) => ({ path: `charts/${CHART_NAME}/${f.path}`, text: f.text })),
  ];
}
