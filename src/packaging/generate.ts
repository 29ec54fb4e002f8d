/** Every packaging file (bundle/ and charts/osc/), from the manifests of `osc install` with default options. */
import { DEFAULT_MONITOR_IMAGE } from '../api/names.ts';
import { operatorPriorityClass } from '../install/availability.ts';
import { pinImages } from '../install/images.ts';
import { defaultImage, type ManifestFile, manifestFiles, manifests, packageVersion } from '../install/manifests.ts';
import { CHART_NAME, chartFiles, TEMPLATE_OPTIONS } from './helm.ts';
import { bundleFiles, olmBundle } from './olm.ts';
import { chartDistributions, packagedPlatform } from './platforms.ts';

/** The choices of the operator's --log-level (`osc run`, `osc install`): pino's levels. */
export const OPERATOR_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface PackagingFile {
  /** Path from the repository root. */
  path: string;
  text: string;
}

export { packagedPlatform };

export async function packagingFiles(): Promise<PackagingFile[]> {
  const version = packageVersion();
  const bundle = olmBundle(await manifests({ distribution: packagedPlatform('olm') }), { version });
  // Every platform's manifests, the chart's own platform first (its default distribution).
  const distributions = chartDistributions();
  const templates: Record<string, ManifestFile[]> = {};
  for (const d of distributions) templates[d] = await manifestFiles({ ...TEMPLATE_OPTIONS, distribution: d });
  const chart = chartFiles(templates, {
    version,
    defaultImage: defaultImage(),
    defaultMonitorImage: DEFAULT_MONITOR_IMAGE,
    logLevels: OPERATOR_LOG_LEVELS,
    distributions,
    priorityClassOf: operatorPriorityClass,
  });
  return [
    ...bundleFiles(bundle).map((f) => ({ path: `bundle/${f.path}`, text: f.text })),
    ...chart.map((f) => ({ path: `charts/${CHART_NAME}/${f.path}`, text: f.text })),
  ];
}

/**
 * The release bundle: the bundle of packagingFiles() with every image (the operator's and each one it can
 * deploy, so relatedImages too) named by the digest given for it. Refused, naming each image, when a
 * digest is missing: a release never ships a tag.
 */
export async function releaseBundleFiles(digests: ReadonlyMap<string, string>): Promise<PackagingFile[]> {
  const objects = pinImages(await manifests({ distribution: packagedPlatform('olm') }), digests);
  const bundle = olmBundle(objects, { version: packageVersion(), release: true });
  return bundleFiles(bundle).map((f) => ({ path: f.path, text: f.text }));
}
