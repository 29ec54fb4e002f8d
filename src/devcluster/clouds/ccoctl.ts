/**
 * What `ccoctl` does for a Manual-mode cluster with short-lived credentials, for one CredentialsRequest, in
 * the dev cluster's clouds: the cloud identity the request describes, trusting the request's ServiceAccounts
 * through the cluster's OIDC issuer, and the Secret manifest's data it writes (as stringData). Tests and
 * the docs' procedures apply that Secret as an administrator would.
 */
import { createHash } from 'node:crypto';
import type { AWSProviderSpec, AzureProviderSpec, CredentialsRequest, GCPProviderSpec } from '../../api/cloudcredential.ts';
import { awsStsCredentialsFile, STS_TOKEN_PATH } from '../../api/cloudcredential.ts';
import type { AwsAccount } from './aws-account.ts';
import type { SimulatedAzure } from './azure.ts';
import type { SimulatedGcp } from './gcp.ts';

const subjects = (cr: CredentialsRequest<AWSProviderSpec | AzureProviderSpec | GCPProviderSpec>) =>
  (cr.spec.serviceAccountNames ?? []).map((sa) => `system:serviceaccount:${cr.spec.secretRef.namespace}:${sa}`);

/** `ccoctl aws create-iam-roles`: a role with the request's policy, trusting its ServiceAccounts; the credentials file. */
export function ccoctlAws(account: AwsAccount, cr: CredentialsRequest<AWSProviderSpec>, name = 'osc-dev'): Record<string, string> {
  const role = `${name}-${cr.spec.secretRef.namespace}-${cr.spec.secretRef.name}`.slice(0, 64);
  const arn = account.createRole(role, cr.spec.providerSpec.statementEntries, subjects(cr));
  return { credentials: awsStsCredentialsFile(arn, cr.spec.cloudTokenPath || STS_TOKEN_PATH) };
}

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
  // At most 30 characters, distinct per request (the adaptor's and the collector's share a long prefix).
  const request = cr.metadata.name ?? '';
  const id = `${request.slice(0, 23).replace(/-$/, '')}-${createHash('sha256').update(request).digest('hex').slice(0, 6)}`;
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
