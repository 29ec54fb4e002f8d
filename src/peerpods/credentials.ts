/**
 * Where peer pods get their cloud credentials (docs/cloud-credentials.md), pure: the CredentialsRequest osc
 * ships, the order of the sources, and how the chosen one reaches the cloud-api-adaptor, the image jobs and
 * osc's own cloud client. What each cloud asks for and how its Secret reads is the cloud's own
 * (src/peerpods/clouds/<cloud>/credentials.ts); this module names no cloud.
 *
 * The order: an administrator's peer-pods-secret, as given; else the Secret the request names, in either
 * of the forms the Cloud Credential Operator's tools write: short-lived credentials (a workload identity
 * set up with ccoctl on a Manual-mode cluster), or long-lived ones (minted, or passed through, by the
 * operator). Nothing here reads a key's value for itself; the pods read them from the Secret.
 */
import {
  type AnyProviderSpec,
  AWS_ROOT_SECRET,
  CCO_NAMESPACE,
  type CredentialsMode,
  type CredentialsRequest,
  type CredentialsRequestCondition,
  CredentialsRequests,
  STS_TOKEN_PATH,
} from '../api/cloudcredential.ts';
import {
  type CredentialsTextCloud,
  credentialsText,
  PEER_PODS_CCO_SECRET,
  PEER_PODS_CREDENTIALS_REQUEST,
} from '../api/credentials-text.ts';
import { apiVersionOf } from '../api/meta.ts';
import type { Secret } from '../kube/resources.ts';
import { PEER_PODS_AWS_ACTIONS, PODVM_BUCKET_PREFIX, peerPodsAwsActions, peerPodsStatementEntries } from './clouds/aws/credentials.ts';
import { cloudProvider, cloudProviders, defaultCloud } from './clouds/index.ts';
import { STS_TOKEN_VOLUME } from './clouds/issued.ts';
import type { CloudIssuedCredentials, CloudProvider, CredentialsWiring, IssuedForm } from './clouds/provider.ts';

export type { CredentialsWiring };
export {
  AWS_ROOT_SECRET,
  PEER_PODS_AWS_ACTIONS,
  PEER_PODS_CCO_SECRET,
  PEER_PODS_CREDENTIALS_REQUEST,
  PODVM_BUCKET_PREFIX,
  peerPodsAwsActions,
  peerPodsStatementEntries,
  STS_TOKEN_PATH,
  STS_TOKEN_VOLUME,
};

/** The cloud CLOUD_PROVIDER names, the default one (AWS) when it names none; undefined for one this build lacks. */
const cloudNamed = (name: string | undefined): CloudProvider | undefined => (name === undefined ? defaultCloud() : cloudProvider(name));

/** What the messages say of a cloud. */
export function textCloud(cloud: CloudProvider, issued: CloudIssuedCredentials): CredentialsTextCloud {
  return {
    requestName: issued.requestName,
    ccoctl: issued.ccoctl,
    rootSecret: `${issued.rootSecret.namespace}/${issued.rootSecret.name}`,
    createCommand: cloud.secret.createCommand,
    formsInWords: issued.formsInWords,
  };
}

/**
 * The names of every request osc may make (per cloud with a Cloud Credential Operator side: the pods' and the
 * leaked pod VM collector's), for RBAC and watches.
 */
export const credentialsRequestNames = (): string[] =>
  cloudProviders()
    .flatMap((c) => (c.credentials ? [c.credentials.requestName, c.credentials.collector.requestName] : []))
    .filter((n): n is string => !!n);

/**
 * The CredentialsRequest, where the CCO reads them (its own namespace), naming the Secret it is to write
 * in osc's namespace. serviceAccountNames are the pods' ServiceAccounts, for ccoctl's trust (workload
 * identity). `cloud` is peer-pods-cm's CLOUD_PROVIDER (AWS when unset).
 */
export function desiredCredentialsRequest(namespace: string, serviceAccountNames: readonly string[]): CredentialsRequest;
export function desiredCredentialsRequest(
  namespace: string,
  serviceAccountNames: readonly string[],
  cloud: string | undefined,
): CredentialsRequest<AnyProviderSpec>;
export function desiredCredentialsRequest(
  namespace: string,
  serviceAccountNames: readonly string[],
  cloud?: string,
): CredentialsRequest<AnyProviderSpec> {
  const issued = cloudNamed(cloud)?.credentials;
  if (!issued) throw new Error(`peer pods on cloud ${cloud} get no credentials from the Cloud Credential Operator`);
  return {
    apiVersion: apiVersionOf(CredentialsRequests),
    kind: CredentialsRequests.kind,
    metadata: {
      name: issued.requestName,
      namespace: CCO_NAMESPACE,
      labels: {
        'app.kubernetes.io/name': 'osc',
        'app.kubernetes.io/component': 'peerpods-credentials',
        'app.kubernetes.io/managed-by': 'osc-operator',
      },
    },
    spec: {
      secretRef: { name: PEER_PODS_CCO_SECRET, namespace },
      serviceAccountNames: [...new Set(serviceAccountNames)].sort(),
      cloudTokenPath: STS_TOKEN_PATH,
      providerSpec: issued.providerSpec(),
    },
  } as CredentialsRequest<AnyProviderSpec>;
}

/** Where the credentials come from, once there are some; `cloud` is the cloud whose Secret it is (AWS when unset). */
export type CredentialSource =
  | { kind: 'secret' }
  | { kind: 'sts'; roleArn?: string; tokenPath?: string; cloud?: string }
  | { kind: 'minted'; cloud?: string };

export interface CredentialsInput {
  /** peer-pods-secret. */
  adminSecret?: Secret;
  /** The Secret the CredentialsRequest names (cco-secret). */
  ccoSecret?: Secret;
  request?: CredentialsRequest<AnyProviderSpec>;
  /** Whether this cluster has a Cloud Credential Operator (its API is served). */
  ccoServed: boolean;
  /** The cluster's CloudCredential spec.credentialsMode ('' when unset or unknown). */
  mode: CredentialsMode;
  /** peer-pods-cm's CLOUD_PROVIDER. */
  cloudProvider?: string;
}

export interface CredentialsChoice {
  /** Undefined while no source is usable. */
  source?: CredentialSource;
  /** What is missing and how to fix it (for PeerPodsConfigValid), when no source is usable. */
  problem?: string;
  /** Whether osc's CredentialsRequest should exist. */
  wantRequest: boolean;
}

const decoded = (s: Secret | undefined, key: string): string | undefined => {
  const str = s?.stringData?.[key];
  if (str !== undefined) return str;
  const d = s?.data?.[key];
  return d === undefined ? undefined : Buffer.from(d, 'base64').toString('utf8');
};

/** The form of a Secret the CCO or ccoctl wrote, as `cloud` (AWS when unset) reads it. */
export function ccoSecretForm(s: Secret, cloud?: string): IssuedForm | undefined {
  return cloudNamed(cloud)?.credentials?.form((k) => decoded(s, k));
}

const FAILURE_TYPES = new Set(['InsufficientCloudCreds', 'MissingTargetNamespace', 'CredentialsProvisionFailure']);

/** The CCO's failure conditions on a request that are True. */
export const requestFailures = (r: CredentialsRequest<AnyProviderSpec> | undefined): CredentialsRequestCondition[] =>
  (r?.status?.conditions ?? []).filter((c) => FAILURE_TYPES.has(c.type) && c.status === 'True');

const sourceOf = (form: Exclude<IssuedForm, { kind: 'unusable' }>, cloud: string): CredentialSource =>
  form.kind === 'minted'
    ? { kind: 'minted', cloud }
    : { kind: 'sts', cloud, ...(form.roleArn ? { roleArn: form.roleArn } : {}), ...(form.tokenPath ? { tokenPath: form.tokenPath } : {}) };

/**
 * The credential order. Without a Cloud Credential Operator (or on a cloud it has no side for) only
 * peer-pods-secret counts, and its absence is reported by the Secret's own checks (source and problem both
 * undefined).
 */
export function chooseCredentials(i: CredentialsInput): CredentialsChoice {
  if (i.adminSecret) return { source: { kind: 'secret' }, wantRequest: false };
  const cloud = cloudNamed(i.cloudProvider);
  const issued = cloud?.credentials;
  if (!i.ccoServed || !cloud || !issued) return { wantRequest: false };
  const text = textCloud(cloud, issued);
  if (i.ccoSecret && !i.ccoSecret.metadata.deletionTimestamp) {
    const form = ccoSecretForm(i.ccoSecret, cloud.name);
    if (!form) return { problem: credentialsText.unusableSecret(text), wantRequest: true };
    if (form.kind === 'unusable') return { problem: credentialsText.brokenSecret(text, form.why), wantRequest: true };
    return { source: sourceOf(form, cloud.name), wantRequest: true };
  }
  if (i.mode === 'Manual') return { problem: credentialsText.manualNoSecret(text), wantRequest: true };
  if (!i.request) return { problem: credentialsText.requesting(text), wantRequest: true };
  const failures = requestFailures(i.request);
  return { problem: credentialsText.notProvisioned(text, failures, issued.modeProblem?.(i.mode)), wantRequest: true };
}

/** The form a source stands for. */
const formOf = (source: Exclude<CredentialSource, { kind: 'secret' }>): Exclude<IssuedForm, { kind: 'unusable' }> =>
  source.kind === 'minted'
    ? { kind: 'minted' }
    : { kind: 'sts', ...(source.roleArn ? { roleArn: source.roleArn } : {}), ...(source.tokenPath ? { tokenPath: source.tokenPath } : {}) };

/**
 * peer-pods-secret goes in whole (envFrom), as before; the Secret the request names is mapped, key by key,
 * to the names the adaptor and the image jobs read, as its cloud says (with a projected token for a
 * workload identity).
 */
export function credentialsWiring(source: CredentialSource, adminSecretName: string): CredentialsWiring {
  if (source.kind === 'secret') return { envFrom: [{ secretRef: { name: adminSecretName } }], env: [], volumes: [], volumeMounts: [] };
  const issued = cloudNamed(source.cloud)?.credentials;
  if (!issued) throw new Error(`no credentials wiring for cloud ${source.cloud}`);
  return issued.wiring(formOf(source), PEER_PODS_CCO_SECRET);
}

/** The variables the adaptor reads from the chosen source (besides peer-pods-secret's own). */
export function adaptorKeysOf(source: Exclude<CredentialSource, { kind: 'secret' }>): string[] {
  return cloudNamed(source.cloud)?.credentials?.adaptorKeys(formOf(source)) ?? [];
}
