import type { KubeObject, ResourceType } from './meta.ts';

/**
 * The Cloud Credential Operator's API (cloudcredential.openshift.io/v1) and its cluster configuration
 * (operator.openshift.io/v1 CloudCredential), as far as osc and the dev cluster's simulator use them. On a
 * real OpenShift cluster the CCO serves them; the dev cluster installs them as CRDs.
 */

/** Where the CCO reads CredentialsRequests from; the requested Secret goes to spec.secretRef's namespace. */
export const CCO_NAMESPACE = 'openshift-cloud-credential-operator';
/** The root (cluster) credentials on AWS, Azure and Google Cloud. */
export const AWS_ROOT_SECRET = { namespace: 'kube-system', name: 'aws-creds' } as const;
export const AZURE_ROOT_SECRET = { namespace: 'kube-system', name: 'azure-credentials' } as const;
export const GCP_ROOT_SECRET = { namespace: 'kube-system', name: 'gcp-credentials' } as const;
/** On a Secret the CCO wrote: the namespace/name of the CredentialsRequest it satisfies. */
export const CREDENTIALS_REQUEST_ANNOTATION = 'cloudcredential.openshift.io/credentials-request';
/** The CCO's finalizer on a CredentialsRequest: the cloud user is deleted before the request goes. */
export const CCO_DEPROVISION_FINALIZER = 'cloudcredential.openshift.io/deprovision';
/**
 * On the root credentials Secret: what the CCO found they can do (`mint`, `passthrough`, `insufficient`),
 * or the mode an administrator forced in the CloudCredential.
 */
export const ROOT_CREDENTIALS_MODE_ANNOTATION = 'cloudcredential.openshift.io/mode';
/** On a minted Secret: the IAM user policy last applied (JSON). */
export const AWS_POLICY_LAST_APPLIED_ANNOTATION = 'cloudcredential.openshift.io/aws-policy-last-applied';

/** One IAM policy statement of an AWSProviderSpec. */
export interface StatementEntry {
  effect: 'Allow' | 'Deny';
  action: string[];
  resource: string;
}

export interface AWSProviderSpec {
  apiVersion: 'cloudcredential.openshift.io/v1';
  kind: 'AWSProviderSpec';
  statementEntries: StatementEntry[];
  stsIAMRoleARN?: string;
}

/** An Azure request: built-in roles to bind, and permissions for a custom role (ccoctl makes it in Manual mode). */
export interface AzureProviderSpec {
  apiVersion: 'cloudcredential.openshift.io/v1';
  kind: 'AzureProviderSpec';
  roleBindings: { role: string }[];
  permissions?: string[];
  dataPermissions?: string[];
  /** Workload identity brokered by the CCO (OLM's short-lived credentials flow); osc leaves these to ccoctl. */
  azureClientID?: string;
  azureTenantID?: string;
  azureSubscriptionID?: string;
  azureRegion?: string;
}

/** A Google Cloud request: predefined roles, and permissions for a custom role the CCO (or ccoctl) makes. */
export interface GCPProviderSpec {
  apiVersion: 'cloudcredential.openshift.io/v1';
  kind: 'GCPProviderSpec';
  predefinedRoles: string[];
  permissions?: string[];
  skipServiceCheck?: boolean;
  serviceAccountEmail?: string;
  audience?: string;
}

export type AnyProviderSpec = AWSProviderSpec | AzureProviderSpec | GCPProviderSpec;

/** The condition types the real CCO sets on a CredentialsRequest. */
export const CR_CONDITIONS = {
  insufficientCloudCreds: 'InsufficientCloudCreds',
  missingTargetNamespace: 'MissingTargetNamespace',
  provisionFailure: 'CredentialsProvisionFailure',
  deprovisionFailure: 'CredentialsDeprovisionFailure',
  ignored: 'Ignored',
  staleCredentials: 'StaleCredentials',
} as const;

export interface CredentialsRequestCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastProbeTime?: string;
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

/** A request; its providerSpec is AWS's unless said (`CredentialsRequest<AnyProviderSpec>` for any cloud's). */
export interface CredentialsRequest<P extends AnyProviderSpec = AWSProviderSpec> extends KubeObject {
  spec: {
    secretRef: { name: string; namespace: string };
    providerSpec: P;
    /** For short-lived credentials (ccoctl): the ServiceAccounts the cloud role trusts. */
    serviceAccountNames?: string[];
    /** Where the projected ServiceAccount token is mounted (STS); the CCO's default is below. */
    cloudTokenPath?: string;
  };
  status?: {
    provisioned: boolean;
    lastSyncTimestamp?: string;
    lastSyncGeneration: number;
    lastSyncCloudCredsSecretResourceVersion?: string;
    /** AWS: the IAM user minted; Azure: the (long gone) minted app; Google Cloud: the service account and custom role. */
    providerStatus?: {
      apiVersion: string;
      kind: 'AWSProviderStatus' | 'AzureProviderStatus' | 'GCPProviderStatus';
      user?: string;
      policy?: string;
      serviceAccountID?: string;
      roleID?: string;
    };
    conditions?: CredentialsRequestCondition[];
  };
}

export const CredentialsRequests: ResourceType<CredentialsRequest<AnyProviderSpec>> = {
  group: 'cloudcredential.openshift.io',
  version: 'v1',
  plural: 'credentialsrequests',
  kind: 'CredentialsRequest',
  namespaced: true,
};

/** `""` is the default: mint where the root credentials allow it (as Mint on AWS). */
export type CredentialsMode = '' | 'Mint' | 'Passthrough' | 'Manual';
export const CREDENTIALS_MODES: readonly CredentialsMode[] = ['', 'Mint', 'Passthrough', 'Manual'];

export interface CloudCredential extends KubeObject {
  spec?: { credentialsMode?: CredentialsMode; managementState?: string; logLevel?: string };
}
export const CLOUD_CREDENTIAL_NAME = 'cluster';
export const CloudCredentials: ResourceType<CloudCredential> = {
  group: 'operator.openshift.io',
  version: 'v1',
  plural: 'cloudcredentials',
  kind: 'CloudCredential',
  namespaced: false,
};

/** The token path the CCO's STS credentials file names, and the audience the token is issued for. */
export const STS_TOKEN_PATH = '/var/run/secrets/openshift/serviceaccount/token';
export const STS_TOKEN_AUDIENCE = 'openshift';

/** The `credentials` file (AWS shared credentials format) the CCO writes beside the two keys. */
export const awsCredentialsFile = (accessKeyId: string, secretAccessKey: string): string =>
  `[default]\naws_access_key_id = ${accessKeyId}\naws_secret_access_key = ${secretAccessKey}`;

/** The `credentials` file ccoctl writes for a role on an STS cluster. */
export const awsStsCredentialsFile = (roleArn: string, tokenPath: string = STS_TOKEN_PATH): string =>
  `[default]\nsts_regional_endpoints = regional\nrole_arn = ${roleArn}\nweb_identity_token_file = ${tokenPath}\n`;

/** The key = value pairs of an AWS shared credentials file's [default] profile. */
export function parseAwsCredentialsFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]?.trim() ?? '';
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0 && section === 'default') out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}
