import {
  AZURE_ROOT_SECRET,
  CR_CONDITIONS,
  CREDENTIALS_REQUEST_ANNOTATION,
  type CredentialsMode,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
} from '../../api/cloudcredential.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Secret } from '../../kube/resources.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { SimulatedAzure } from '../clouds/azure.ts';
import {
  type AnyCredentialsRequest,
  b64,
  type CcoActuator,
  markRoot,
  nsKey,
  type ProviderStatus,
  ProvisionError,
  writeRequestSecret,
  writeRootSecret,
} from './actuator.ts';

/** The role the installer's service principal holds (the documented installer permissions). */
export const AZURE_ROOT_ROLES = ['Contributor', 'User Access Administrator'];

/**
 * The Cloud Credential Operator's Azure side, as the real one is since Azure retired the Graph API it minted
 * with: no Mint mode. Its secret annotator marks the root credentials (kube-system/azure-credentials, the
 * installer's service principal) `passthrough` in the default mode (it cannot check Azure rights), the
 * forced mode otherwise; a request's Secret is the root Secret's keys copied, again whenever the root Secret
 * changes; a root Secret marked `mint` is refused as the real actuator refuses it. Nothing is minted, so
 * nothing is deleted with a request but its Secret.
 */
export class AzureActuator implements CcoActuator {
  readonly kind = 'AzureProviderSpec' as const;
  readonly rootSecret = AZURE_ROOT_SECRET;
  private readonly client: KubeClient;
  private readonly secrets: Informer<Secret>;
  private readonly azure: SimulatedAzure;
  private rootClientId = '';

  constructor(opts: { client: KubeClient; secrets: Informer<Secret>; azure: SimulatedAzure }) {
    this.client = opts.client;
    this.secrets = opts.secrets;
    this.azure = opts.azure;
  }

  async annotateRoot(mode: CredentialsMode, _requests: readonly AnyCredentialsRequest[], signal: AbortSignal): Promise<void> {
    const root = this.secrets.get(nsKey(AZURE_ROOT_SECRET.namespace, AZURE_ROOT_SECRET.name));
    if (!root || mode === 'Manual') return;
    const want = mode === 'Mint' ? 'mint' : 'passthrough';
    await markRoot(this.client, root, AZURE_ROOT_SECRET, want, signal);
  }

  needsUpdate(cr: AnyCredentialsRequest, root: Secret | undefined, _mode: CredentialsMode): boolean {
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    if (!existing || existing.metadata.deletionTimestamp) return true;
    if (root && root.metadata.resourceVersion !== cr.status?.lastSyncCloudCredsSecretResourceVersion) return true;
    return ['azure_client_id', 'azure_client_secret'].some((k) => existing.data?.[k] !== root?.data?.[k]);
  }

  async sync(cr: AnyCredentialsRequest, root: Secret | undefined, mode: CredentialsMode, signal: AbortSignal): Promise<ProviderStatus> {
    const p = CR_CONDITIONS.provisionFailure;
    if (!root) throw new ProvisionError(p, `unable to fetch root cloud cred secret: secrets "${AZURE_ROOT_SECRET.name}" not found`);
    const annotation = root.metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION];
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    if (mode === 'Mint' && existing) throw new ProvisionError(p, 'error determining whether a credentials update is needed');
    if (annotation === 'insufficient')
      throw new ProvisionError(CR_CONDITIONS.insufficientCloudCreds, 'cloud credentials insufficient to satisfy credentials request');
    if (annotation !== 'passthrough')
      throw new ProvisionError(p, `unexpected value or missing ${ROOT_CREDENTIALS_MODE_ANNOTATION} annotation on admin credentials Secret`);
    const { name, namespace } = cr.spec.secretRef;
    const annotations = { [CREDENTIALS_REQUEST_ANNOTATION]: nsKey(cr.metadata.namespace, cr.metadata.name) };
    const data = { ...(root.data ?? {}) };
    await writeRequestSecret(this.client, { name, namespace }, existing, { annotations, data }, signal);
    return { apiVersion: 'cloudcredential.openshift.io/v1', kind: 'AzureProviderStatus' };
  }

  deprovision(): void {}

  /** The installer's service principal, with every key the installer writes (docs: azure-credentials). */
  async seedRoot(): Promise<void> {
    const sp = this.azure.tenant.createServicePrincipal(AZURE_ROOT_ROLES, 'cluster-installer');
    this.rootClientId = sp.clientId;
    await this.writeRoot(sp.clientId, sp.clientSecret, true);
  }

  /** A new client secret for the installer's service principal (the old one refused), written to the root Secret. */
  async rotateRoot(): Promise<string> {
    const secret = this.azure.tenant.resetSecret(this.rootClientId);
    await this.writeRoot(this.rootClientId, secret, false);
    return this.rootClientId;
  }

  private async writeRoot(clientId: string, clientSecret: string, create: boolean): Promise<void> {
    const a = this.azure.account;
    const data = Object.fromEntries(
      Object.entries({
        azure_client_id: clientId,
        azure_client_secret: clientSecret,
        azure_tenant_id: a.tenantId,
        azure_subscription_id: a.subscriptionId,
        azure_region: a.region,
        azure_resource_prefix: a.resourceGroup.replace(/-rg$/, ''),
        azure_resourcegroup: a.resourceGroup,
      }).map(([k, v]) => [k, b64(v)]),
    );
    await writeRootSecret(this.client, AZURE_ROOT_SECRET, data, create);
  }
}
