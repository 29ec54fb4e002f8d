/**
 * The registry of clouds peer pods run on: one line per cloud folder. Nothing outside a cloud's folder
 * names a cloud; the rest of osc asks the registry for the provider that CLOUD_PROVIDER (or the cluster's
 * Infrastructure) names.
 */
import { aws } from './aws/provider.ts';
import { azure } from './azure/provider.ts';
import { gcp } from './gcp/provider.ts';
import type { CloudProvider } from './provider.ts';

const clouds: CloudProvider[] = [aws, azure, gcp];

export type { CloudProvider };

/** Every cloud of this build, in the registry's order. */
export const cloudProviders = (): readonly CloudProvider[] => clouds;

/** The CLOUD_PROVIDER values this build takes. */
export const cloudNames = (): string[] => clouds.map((c) => c.name);

/** The provider CLOUD_PROVIDER names, if this build has it. */
export const cloudProvider = (name: string | undefined): CloudProvider | undefined => clouds.find((c) => c.name === name);

/** The provider of a cluster whose Infrastructure reports `platformStatus.type` (AWS, Azure, GCP). */
export const cloudOfInfrastructure = (type: string | undefined): CloudProvider | undefined =>
  clouds.find((c) => c.infrastructureType === type);

/** The default cloud for messages when nothing says which one: the first registered (AWS). */
export const defaultCloud = (): CloudProvider => clouds[0] as CloudProvider;

/**
 * Adds a cloud (a build or a test that brings its own). Answers the function that takes it out again.
 */
export function registerCloud(provider: CloudProvider): () => void {
  if (clouds.some((c) => c.name === provider.name)) throw new Error(`a cloud named ${provider.name} is already registered`);
  clouds.push(provider);
  return () => {
    const i = clouds.indexOf(provider);
    if (i >= 0) clouds.splice(i, 1);
  };
}

/** `"aws", "azure" or "gcp"` (or `and`). */
export function cloudChoices(conjunction: 'or' | 'and' = 'or'): string {
  const names = cloudNames().map((n) => `"${n}"`);
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} ${conjunction} ${names[names.length - 1]}`;
}

/** The pod VM image of the cloud peer-pods-cm names (its key, noun...); AWS's when it names none this build has. */
export function imageOf(data: Record<string, string> | undefined): CloudProvider['image'] {
  return (cloudProvider(data?.CLOUD_PROVIDER) ?? defaultCloud()).image;
}

/** The image key of the cloud peer-pods-cm names (PODVM_AMI_ID, AZURE_IMAGE_ID, ...). */
export function imageKeyOf(data: Record<string, string> | undefined): string {
  return imageOf(data).key;
}

/** The pod VM image peer-pods-cm names, '' when none. */
export function imageIdOf(data: Record<string, string> | undefined): string {
  return data?.[imageKeyOf(data)] ?? '';
}

/** The variable a deletion job reads the image from (AMI_ID on AWS). */
export function imageDeletionEnvOf(data: Record<string, string> | undefined): string {
  return (cloudProvider(data?.CLOUD_PROVIDER) ?? defaultCloud()).image.deletionEnv;
}
