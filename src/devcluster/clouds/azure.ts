import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PEER_PODS_AZURE_PERMISSIONS } from '../../peerpods/clouds/azure/credentials.ts';
import type { ContainerCredentialFiles } from '../pod-credentials.ts';
import { type AzureCaller, AzureTenant } from './azure-identity.ts';
import { ImageJobCloud, type ImageJobCloudOptions } from './image-jobs.ts';

/** What `az account show`, `az group show` and `az network ... list` answer for the dev cluster's Azure account. */
export interface AzureAccount {
  subscriptionId: string;
  tenantId: string;
  resourceGroup: string;
  region: string;
  vnet: string;
  subnetId: string;
  nsgId: string;
}

/** A service principal, as `az ad sp create-for-rbac` prints it. */
export interface AzureServicePrincipal {
  clientId: string;
  clientSecret: string;
  tenantId: string;
}

/** A role on the subscription: a built-in one (./azure-identity.ts), or a custom role the tenant has. */
export type AzureRole = string;

/** Entra ID's refusal of a sign-in: its OAuth2 error, the AADSTS code and text, the HTTP status. */
export interface AzureSignInError {
  error: string;
  code: number;
  description: string;
  status: number;
}

/**
 * The dev cluster's Azure (`osc start --cloud Azure`): an account (subscription, the cluster's resource
 * group, its virtual network, worker subnet and network security group), the service principals made for
 * it, and the pod VM image jobs' work. A creation job is refused as Azure's API refuses it: credentials of
 * an unknown tenant or application or a wrong secret (Azure AD's AADSTS errors), a subscription or resource
 * group the account does not have. Images are versions in a compute gallery of the resource group and fill
 * AZURE_IMAGE_ID; failure injection as for AWS (./image-jobs.ts).
 */
export class SimulatedAzure extends ImageJobCloud {
  readonly account: AzureAccount;
  /** Who may do what: service principals, managed identities and their roles. */
  readonly tenant = new AzureTenant();

  constructor(opts: ImageJobCloudOptions & { infrastructureName: string; region?: string }) {
    const subscriptionId = randomUUID();
    const resourceGroup = `${opts.infrastructureName}-rg`;
    const network = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network`;
    const vnet = `${opts.infrastructureName}-vnet`;
    const account: AzureAccount = {
      subscriptionId,
      tenantId: '',
      resourceGroup,
      region: opts.region ?? 'eastus',
      vnet,
      subnetId: `${network}/virtualNetworks/${vnet}/subnets/${opts.infrastructureName}-worker-subnet`,
      nsgId: `${network}/networkSecurityGroups/${opts.infrastructureName}-nsg`,
    };
    let version = 0;
    super(opts, {
      imageKey: 'AZURE_IMAGE_ID',
      deletionEnv: 'IMAGE_ID',
      newImage: (cm, env) =>
        `/subscriptions/${cm.AZURE_SUBSCRIPTION_ID}/resourceGroups/${cm.AZURE_RESOURCE_GROUP}/providers/Microsoft.Compute/galleries/${env.IMAGE_GALLERY_NAME}/images/${env.IMAGE_DEFINITION_NAME}/versions/0.0.${++version}`,
      refuse: (kind, { cm, secret, env, files }) =>
        kind === 'creation' ? this.refusal(cm, secret, env, files) : this.deletionRefusal(cm, secret, files),
    });
    account.tenantId = this.tenant.tenantId;
    this.account = account;
  }

  /** `az ad sp create-for-rbac --role <role> --scopes /subscriptions/<id>`: a new service principal. */
  createServicePrincipal(role: AzureRole = 'Contributor'): AzureServicePrincipal {
    return this.tenant.createServicePrincipal([role]);
  }

  /** `az ad sp delete`: its secret is refused from then on. */
  deleteServicePrincipal(clientId: string): void {
    this.tenant.deletePrincipal(clientId);
  }

  /** Entra ID's client-credentials sign-in: the principal, or the refusal Entra ID answers. */
  signIn(tenantId: string, clientId: string, clientSecret: string) {
    return this.tenant.signIn({ tenantId, clientId, clientSecret });
  }

  /** The resource group's scope, where roles are checked. */
  scope(path = ''): string {
    return `/subscriptions/${this.account.subscriptionId}/resourceGroups/${this.account.resourceGroup}${path}`;
  }

  /**
   * For `osc start`: what the administrator would look up with az, and a service principal made for them
   * (written to `dir`, mode 0600), as lines for the banner.
   */
  async handOut(dir: string): Promise<string[]> {
    const sp = this.createServicePrincipal();
    const path = join(dir, 'azure-service-principal.env');
    await writeFile(path, `AZURE_CLIENT_ID=${sp.clientId}\nAZURE_CLIENT_SECRET=${sp.clientSecret}\nAZURE_TENANT_ID=${sp.tenantId}\n`, {
      mode: 0o600,
    });
    const a = this.account;
    return [
      'The simulated Azure answers what az would (for peer-pods-cm):',
      `  AZURE_SUBSCRIPTION_ID=${a.subscriptionId} AZURE_RESOURCE_GROUP=${a.resourceGroup} AZURE_REGION=${a.region}`,
      `  AZURE_SUBNET_ID=${a.subnetId}`,
      `  AZURE_NSG_ID=${a.nsgId}`,
      `  a service principal for peer-pods-secret: kubectl create secret generic peer-pods-secret -n openshift-sandboxed-containers-operator --from-env-file ${path}`,
    ];
  }

  /** What the OpenShift Infrastructure reports for a cluster in this account. */
  infrastructureStatus(): Record<string, unknown> {
    const rg = this.account.resourceGroup;
    return { azure: { resourceGroupName: rg, networkResourceGroupName: rg, cloudName: 'AzurePublicCloud' } };
  }

  /**
   * What the cloud answers a creation job with this peer-pods-cm, these credentials (the container's
   * variables, and the files a workload identity reads) and parameters: its error, or undefined when it builds.
   */
  refusal(
    cm: Record<string, string>,
    secret: Record<string, string>,
    env: Record<string, string>,
    files: ContainerCredentialFiles = {},
  ): string | undefined {
    const a = this.account;
    for (const name of ['IMAGE_GALLERY_NAME', 'IMAGE_DEFINITION_NAME']) {
      if (!/^[A-Za-z0-9][\w.]{0,79}$/.test(env[name] ?? ''))
        return `InvalidParameter: ${name} "${env[name] ?? ''}" is not a gallery or image definition name.`;
    }
    const who = this.jobSignIn(secret, files);
    if (typeof who === 'string') return who;
    if ((cm.AZURE_SUBSCRIPTION_ID ?? '').toLowerCase() !== a.subscriptionId) {
      return `SubscriptionNotFound: The subscription '${cm.AZURE_SUBSCRIPTION_ID ?? ''}' could not be found.`;
    }
    if ((cm.AZURE_RESOURCE_GROUP ?? '').toLowerCase() !== a.resourceGroup.toLowerCase()) {
      return `ResourceGroupNotFound: Resource group '${cm.AZURE_RESOURCE_GROUP ?? ''}' could not be found.`;
    }
    if (cm.AZURE_SUBNET_ID && cm.AZURE_SUBNET_ID.toLowerCase() !== a.subnetId.toLowerCase()) {
      return `InvalidResourceReference: Resource ${cm.AZURE_SUBNET_ID} referenced by the pod VM image build was not found.`;
    }
    return this.jobAuthorize(
      who.clientId,
      PEER_PODS_AZURE_PERMISSIONS.imageCreation,
      `/providers/Microsoft.Compute/galleries/${env.IMAGE_GALLERY_NAME}`,
    );
  }

  /** What the cloud answers a deletion job: its error, or undefined when the image version goes. */
  deletionRefusal(_cm: Record<string, string>, secret: Record<string, string>, files: ContainerCredentialFiles = {}): string | undefined {
    const who = this.jobSignIn(secret, files);
    if (typeof who === 'string') return who;
    return this.jobAuthorize(who.clientId, PEER_PODS_AZURE_PERMISSIONS.imageDeletion, '/providers/Microsoft.Compute/galleries');
  }

  /** The credentials a container presents (a client secret, else a federated token), signed in as `az login` does. */
  private jobSignIn(secret: Record<string, string>, files: ContainerCredentialFiles): { clientId: string } | string {
    const caller = azureCallerOf(secret, files);
    if (!caller) return 'ERROR: Please run az login to setup account. (no AZURE_CLIENT_SECRET, and no federated token file)';
    const who = this.tenant.signIn(caller);
    return 'error' in who ? who.description : who;
  }

  private jobAuthorize(clientId: string, actions: readonly string[], path: string): string | undefined {
    for (const action of actions) {
      try {
        this.tenant.authorize(clientId, action, this.scope(path));
      } catch (e) {
        return `(AuthorizationFailed) ${(e as Error).message}`;
      }
    }
    return undefined;
  }
}

/**
 * What an Azure SDK signs in with from a container's variables: a client secret (AZURE_CLIENT_SECRET), else
 * a workload identity (AZURE_FEDERATED_TOKEN_FILE naming a projected token); undefined when neither.
 */
export function azureCallerOf(env: Record<string, string>, files: ContainerCredentialFiles = {}): AzureCaller | undefined {
  const ids = { tenantId: env.AZURE_TENANT_ID ?? '', clientId: env.AZURE_CLIENT_ID ?? '' };
  if (env.AZURE_CLIENT_SECRET) return { ...ids, clientSecret: env.AZURE_CLIENT_SECRET };
  if (env.AZURE_FEDERATED_TOKEN_FILE && files.token) return { ...ids, federatedToken: files.token };
  return undefined;
}
