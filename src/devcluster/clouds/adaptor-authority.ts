/**
 * The adaptor's calls on Azure and Google Cloud, as those clouds judge them (../podvms.ts asks): each call
 * the cloud-api-adaptor makes, with the permission it needs, checked against the identity its container's
 * credentials sign in as. The error is the one the cloud's SDK gives the adaptor.
 */
import type { AdaptorAuthority } from '../podvms.ts';
import { azureCallerOf, type SimulatedAzure } from './azure.ts';
import type { SimulatedGcp } from './gcp.ts';
import { gcpCallerOf } from './gcp-identity.ts';

/** The first refusal of a sequence of checks, or undefined. */
const first = (...checks: (() => string | undefined)[]): string | undefined => {
  for (const c of checks) {
    const r = c();
    if (r !== undefined) return r;
  }
  return undefined;
};

export function azureAdaptorAuthority(azure: SimulatedAzure): AdaptorAuthority {
  const t = azure.tenant;
  const a = azure.account;
  const vm = (name: string) => azure.scope(`/providers/Microsoft.Compute/virtualMachines/${name}`);
  const many = (env: Record<string, string>, files: object, method: string, scope: string, actions: string[]) => {
    const caller = azureCallerOf(env, files);
    return first(...actions.map((action) => () => t.check(caller, action, method, scope)));
  };
  return {
    startup: (env, files) =>
      first(
        () =>
          many(env, files, 'GET', `/subscriptions/${a.subscriptionId}/providers/Microsoft.Compute/locations/${a.region}/vmSizes`, [
            'Microsoft.Compute/locations/vmSizes/read',
          ]),
        () => many(env, files, 'GET', env.AZURE_IMAGE_ID || azure.scope(), ['Microsoft.Compute/galleries/images/versions/read']),
      ),
    create: (env, files, name) =>
      many(env, files, 'PUT', vm(name), [
        'Microsoft.Compute/virtualMachines/write',
        'Microsoft.Compute/disks/write',
        'Microsoft.Network/networkInterfaces/write',
        'Microsoft.Network/networkInterfaces/join/action',
        'Microsoft.Network/virtualNetworks/subnets/join/action',
        'Microsoft.Network/networkSecurityGroups/join/action',
        ...(env.USE_PUBLIC_IP === 'true'
          ? ['Microsoft.Network/publicIPAddresses/write', 'Microsoft.Network/publicIPAddresses/join/action']
          : []),
      ]),
    terminate: (env, files, id) =>
      many(env, files, 'DELETE', id.startsWith('/subscriptions/') ? id : vm(id), [
        'Microsoft.Compute/virtualMachines/delete',
        'Microsoft.Network/networkInterfaces/delete',
        'Microsoft.Compute/disks/delete',
      ]),
  };
}

export function gcpAdaptorAuthority(gcp: SimulatedGcp): AdaptorAuthority {
  const iam = gcp.iam;
  const zone = (env: Record<string, string>) => `projects/${env.GCP_PROJECT_ID ?? ''}/zones/${env.GCP_ZONE ?? ''}`;
  const many = (env: Record<string, string>, files: object, resource: string, permissions: string[]) => {
    const caller = gcpCallerOf(env, files);
    return first(...permissions.map((p) => () => iam.check(caller, p, resource)));
  };
  return {
    startup: (env, files) =>
      many(env, files, `${zone(env)}/machineTypes/${env.GCP_MACHINE_TYPE || 'e2-medium'}`, ['compute.machineTypes.get']),
    create: (env, files, name) =>
      many(env, files, `${zone(env)}/instances/${name}`, [
        'compute.instances.create',
        'compute.disks.create',
        'compute.images.useReadOnly',
        'compute.instances.setLabels',
        'compute.instances.setMetadata',
        'compute.subnetworks.use',
        ...(env.USE_PUBLIC_IP === 'true' ? ['compute.subnetworks.useExternalIp'] : []),
        'compute.zoneOperations.get',
      ]),
    terminate: (env, files, id) =>
      many(env, files, `${zone(env)}/instances/${id.split('/').pop()}`, ['compute.instances.delete', 'compute.zoneOperations.get']),
  };
}
