/**
 * The leaked pod VM collector's cloud credentials (docs/cloud-credentials.md, "The leaked pod VM
 * collector"), pure. The collector runs in the operator's pod, under the operator's ServiceAccount. With
 * long-lived credentials it signs in with the adaptor's (peer-pods-secret, or the key the Cloud Credential
 * Operator minted or passed through). A workload identity made by ccoctl trusts only the ServiceAccounts its
 * request names, so on a Manual-mode cluster the collector has its own request (list and delete pod VMs,
 * nothing else) naming the operator's ServiceAccount; ccoctl writes its Secret, and the operator trades its
 * own projected token for the cloud's short-lived credentials.
 */
import {
  type AnyProviderSpec,
  CCO_NAMESPACE,
  type CredentialsRequest,
  CredentialsRequests,
  STS_TOKEN_PATH,
} from '../api/cloudcredential.ts';
import { COLLECTOR_CCO_SECRET, PEER_PODS_CCO_SECRET } from '../api/credentials-text.ts';
import { apiVersionOf } from '../api/meta.ts';
import { OPERATOR_SERVICE_ACCOUNT } from '../api/names.ts';
import type { Secret } from '../kube/resources.ts';
import { GCP_SECRET_KEY } from './clouds/gcp/credentials.ts';
import { cloudProvider, defaultCloud } from './clouds/index.ts';

const cloudNamed = (name: string | undefined) => (name === undefined ? defaultCloud() : cloudProvider(name));

/** The collector's request for `cloud` (AWS when unset), naming the operator's ServiceAccount for ccoctl's trust. */
export function desiredCollectorRequest(namespace: string, cloud?: string): CredentialsRequest<AnyProviderSpec> {
  const collector = cloudNamed(cloud)?.credentials?.collector;
  if (!collector) throw new Error(`the leaked pod VM collector on cloud ${cloud} gets no credentials from the Cloud Credential Operator`);
  return {
    apiVersion: apiVersionOf(CredentialsRequests),
    kind: CredentialsRequests.kind,
    metadata: {
      name: collector.requestName,
      namespace: CCO_NAMESPACE,
      labels: {
        'app.kubernetes.io/name': 'osc',
        'app.kubernetes.io/component': 'podvm-collector-credentials',
        'app.kubernetes.io/managed-by': 'osc-operator',
      },
    },
    spec: {
      secretRef: { name: COLLECTOR_CCO_SECRET, namespace },
      serviceAccountNames: [OPERATOR_SERVICE_ACCOUNT],
      cloudTokenPath: STS_TOKEN_PATH,
      providerSpec: collector.providerSpec(),
    },
  } as CredentialsRequest<AnyProviderSpec>;
}

const decoded = (s: Secret | undefined, key: string): string | undefined => {
  const str = s?.stringData?.[key];
  if (str !== undefined) return str;
  const d = s?.data?.[key];
  return d === undefined ? undefined : Buffer.from(d, 'base64').toString('utf8');
};

export interface CollectorCredentialsInput {
  /** peer-pods-secret. */
  adminSecret?: Secret;
  /** The Secret of the collector's own request (ccoctl's, in Manual mode). */
  collectorSecret?: Secret;
  /** The adaptor's Secret from the Cloud Credential Operator (cco-secret). */
  ccoSecret?: Secret;
  /** peer-pods-cm's CLOUD_PROVIDER. */
  cloud?: string;
  /**
   * Where the operator's own projected token is (its pod's mount; a test or `osc run` outside a pod says
   * otherwise). A workload identity's Secret names the path in the pods it was made for; the operator reads
   * its own.
   */
  tokenFile?: string;
}

/**
 * The collector's credentials, under the adaptor's names (what ./cloudapi/ reads), with the token file of a
 * workload identity: `from` says which Secret. Undefined `creds` with `unavailable`: why, ending with the fix.
 */
export type CollectorCredentials = { creds: Record<string, string>; from: string } | { unavailable: string };

export function collectorCredentials(i: CollectorCredentialsInput): CollectorCredentials {
  const all = (s: Secret) => Object.fromEntries(Object.keys({ ...s.data, ...s.stringData }).map((k) => [k, decoded(s, k) ?? '']));
  if (i.adminSecret) return { creds: all(i.adminSecret), from: 'peer-pods-secret' };
  const cloud = cloudNamed(i.cloud);
  const issued = cloud?.credentials;
  if (!issued) return { creds: {}, from: 'none' };
  const tokenFile = i.tokenFile ?? STS_TOKEN_PATH;
  const live = (s: Secret | undefined) => (s && !s.metadata.deletionTimestamp ? s : undefined);
  const own = live(i.collectorSecret);
  if (own) {
    const read = (k: string) => decoded(own, k);
    const form = issued.form(read);
    if (!form) return { unavailable: `Secret ${COLLECTOR_CCO_SECRET} holds neither ${issued.formsInWords}` };
    if (form.kind === 'unusable') return { unavailable: `Secret ${COLLECTOR_CCO_SECRET}: ${form.why}` };
    const creds = issued.adaptorValues(form, read);
    if (form.kind === 'sts') {
      // The operator's own token, wherever the Secret says the adaptor's would be.
      if (creds.AWS_ROLE_ARN !== undefined) creds.AWS_WEB_IDENTITY_TOKEN_FILE = tokenFile;
      if (creds.AZURE_FEDERATED_TOKEN_FILE !== undefined) creds.AZURE_FEDERATED_TOKEN_FILE = tokenFile;
      const config = read(GCP_SECRET_KEY);
      if (cloud.name === 'gcp' && config) {
        creds.GCP_EXTERNAL_ACCOUNT = config;
        creds.GCP_TOKEN_FILE = tokenFile;
      }
    }
    return { creds, from: COLLECTOR_CCO_SECRET };
  }
  const adaptors = live(i.ccoSecret);
  const form = adaptors ? issued.form((k) => decoded(adaptors, k)) : undefined;
  if (adaptors && form?.kind === 'minted') {
    return { creds: issued.adaptorValues(form, (k) => decoded(adaptors, k)), from: PEER_PODS_CCO_SECRET };
  }
  if (adaptors && form?.kind === 'sts')
    return {
      unavailable:
        `the adaptor's credentials are a workload identity that trusts the adaptor's ServiceAccounts only: run ${issued.ccoctl} ` +
        `with CredentialsRequest ${issued.collector.requestName} in namespace ${CCO_NAMESPACE} and apply the Secret ` +
        `${COLLECTOR_CCO_SECRET} it writes to osc's namespace, so that osc can list and delete leaked pod VMs`,
    };
  return { creds: {}, from: 'none' };
}
