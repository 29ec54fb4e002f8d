import { randomBytes, randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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

/** The built-in roles the account models, on the subscription: Contributor does everything, Reader only reads. */
export type AzureRole = 'Contributor' | 'Reader';

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
 * AZURE_IMAGE_ID; failure injection as for AWS (../cloud.ts).
 */
export class SimulatedAzure extends ImageJobCloud {
  readonly account: AzureAccount;
  private readonly principals = new Map<string, AzureServicePrincipal & { role: AzureRole }>();

  constructor(opts: ImageJobCloudOptions & { infrastructureName: string; region?: string }) {
    const subscriptionId = randomUUID();
    const resourceGroup = `${opts.infrastructureName}-rg`;
    const network = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network`;
    const vnet = `${opts.infrastructureName}-vnet`;
    const account: AzureAccount = {
      subscriptionId,
      tenantId: randomUUID(),
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
      refuse: (cm, secret, env) => this.refusal(cm, secret, env),
    });
    this.account = account;
  }

  /** `az ad sp create-for-rbac --role <role> --scopes /subscriptions/<id>`: a new service principal. */
  createServicePrincipal(role: AzureRole = 'Contributor'): AzureServicePrincipal {
    const sp = { clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url'), tenantId: this.account.tenantId };
    this.principals.set(sp.clientId, { ...sp, role });
    return sp;
  }

  /** `az ad sp delete`: its secret is refused from then on. */
  deleteServicePrincipal(clientId: string): void {
    this.principals.delete(clientId);
  }

  /**
   * Entra ID's client-credentials sign-in: the principal's role on the subscription, or the refusal Entra ID
   * answers (an unknown tenant, an application the directory does not have, a wrong secret).
   */
  signIn(tenantId: string, clientId: string, clientSecret: string): { role: AzureRole } | AzureSignInError {
    const a = this.account;
    if (tenantId.toLowerCase() !== a.tenantId) {
      return {
        error: 'invalid_request',
        code: 90002,
        status: 400,
        description: `AADSTS90002: Tenant '${tenantId}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
      };
    }
    const sp = this.principals.get(clientId);
    if (!sp) {
      return {
        error: 'unauthorized_client',
        code: 700016,
        status: 400,
        description: `AADSTS700016: Application with identifier '${clientId}' was not found in the directory '${a.tenantId}'.`,
      };
    }
    if (sp.clientSecret !== clientSecret) {
      return {
        error: 'invalid_client',
        code: 7000215,
        status: 401,
        description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${clientId}'.`,
      };
    }
    return { role: sp.role };
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

  /** What the cloud answers a creation job with this peer-pods-cm, Secret and parameters: its error, or undefined when it builds. */
  refusal(cm: Record<string, string>, secret: Record<string, string>, env: Record<string, string>): string | undefined {
    const a = this.account;
    for (const name of ['IMAGE_GALLERY_NAME', 'IMAGE_DEFINITION_NAME']) {
      if (!/^[A-Za-z0-9][\w.]{0,79}$/.test(env[name] ?? ''))
        return `InvalidParameter: ${name} "${env[name] ?? ''}" is not a gallery or image definition name.`;
    }
    const tenant = secret.AZURE_TENANT_ID ?? '';
    if (tenant !== a.tenantId) return `AADSTS90002: Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID`;
    const sp = this.principals.get(secret.AZURE_CLIENT_ID ?? '');
    if (!sp) {
      return `AADSTS700016: Application with identifier '${secret.AZURE_CLIENT_ID ?? ''}' was not found in the directory '${a.tenantId}'`;
    }
    if (sp.clientSecret !== secret.AZURE_CLIENT_SECRET)
      return `AADSTS7000215: Invalid client secret provided for application '${sp.clientId}'`;
    if ((cm.AZURE_SUBSCRIPTION_ID ?? '').toLowerCase() !== a.subscriptionId) {
      return `SubscriptionNotFound: The subscription '${cm.AZURE_SUBSCRIPTION_ID ?? ''}' could not be found.`;
    }
    if ((cm.AZURE_RESOURCE_GROUP ?? '').toLowerCase() !== a.resourceGroup.toLowerCase()) {
      return `ResourceGroupNotFound: Resource group '${cm.AZURE_RESOURCE_GROUP ?? ''}' could not be found.`;
    }
    if (cm.AZURE_SUBNET_ID && cm.AZURE_SUBNET_ID.toLowerCase() !== a.subnetId.toLowerCase()) {
      return `InvalidResourceReference: Resource ${cm.AZURE_SUBNET_ID} referenced by the pod VM image build was not found.`;
    }
    return undefined;
  }
}
