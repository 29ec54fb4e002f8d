/**
 * What `ccoctl` does for a Manual-mode cluster with short-lived credentials, for one CredentialsRequest, in
 * the dev cluster's clouds: the cloud identity the request describes, trusting the request's ServiceAccounts
 * through the cluster's OIDC issuer, and the Secret manifest's data it writes (as stringData). Tests and
 * the docs' procedures apply that Secret as an administrator would.
 */
import type { AzureProviderSpec, CredentialsRequest, GCPProviderSpec } from '../../api/cloudcredential.ts';
import { STS_TOKEN_PATH } from '../../api/cloudcredential.ts';
import type { SimulatedAzure } from './azure.ts';
import type { SimulatedGcp } from './gcp.ts';

const subjects = (cr: CredentialsRequest<AzureProviderSpec | GCPProviderSpec>) =>
  (cr.spec.serviceAccountNames ?? []).map((sa) => `system:serviceaccount:${cr.spec.secretRef.namespace}:${sa}`);

/** `ccoctl azure create-managed-identities`: a managed identity with the request's roles and permissions. */
export function ccoctlAzure(azure: SimulatedAzure, cr: CredentialsRequest<AzureProviderSpec>): Record<string, string> {
  const spec = cr.spec.providerSpec;
  const name = `${azure.account.resourceGroup.replace(/-rg$/, '')}-${cr.spec.secretRef.namespace}-${cr.spec.secretRef.name}`;
  const roles = spec.roleBindings.map((b) => b.role);
  if (spec.permissions?.length) roles.push(azure.tenant.createCustomRole(`${name}-role`, spec.permissions));
  const clientId = azure.tenant.createManagedIdentity(name, roles, subjects(cr));
  return {
    azure_client_id: clientId,
    azure_tenant_id: azure.account.tenantId,
    azure_region: azure.account.region,
    azure_subscription_id: azure.account.subscriptionId,
    azure_federated_token_file: cr.spec.cloudTokenPath || STS_TOKEN_PATH,
  };
}

/** `ccoctl gcp create-service-accounts`: a service account with the request's roles, impersonable by the pool. */
export function ccoctlGcp(gcp: SimulatedGcp, cr: CredentialsRequest<GCPProviderSpec>): Record<string, string> {
  const spec = cr.spec.providerSpec;
  const id = `${cr.metadata.name}`.slice(0, 24).replace(/-$/, '');
  const roles = [...spec.predefinedRoles];
  if (spec.permissions?.length) roles.push(gcp.iam.createCustomRole(id.replace(/-/g, '_'), spec.permissions));
  const email = gcp.iam.createServiceAccount(id, roles);
  gcp.iam.allowImpersonation(email, subjects(cr));
  const config = {
    type: 'external_account',
    audience: gcp.iam.poolAudience,
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: 'https://sts.googleapis.com/v1/token',
    service_account_impersonation_url: `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/${email}:generateAccessToken`,
    credential_source: { file: cr.spec.cloudTokenPath || STS_TOKEN_PATH, format: { type: 'text' } },
  };
  return { 'service_account.json': JSON.stringify(config, null, 2) };
}
