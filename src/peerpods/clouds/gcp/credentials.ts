/**
 * Peer pods' Google Cloud credentials from the Cloud Credential Operator (docs/cloud-credentials.md): in
 * Mint mode it makes a service account with a custom role of the permissions below and writes a key of it
 * as `service_account.json`; in Passthrough mode that key is the cluster's own (kube-system/gcp-credentials);
 * in Manual mode ccoctl makes the service account, lets the cluster's workload identity pool impersonate it,
 * and writes an `external_account` credential configuration instead of a key (workload identity federation).
 */
import { GCP_ROOT_SECRET, STS_TOKEN_PATH } from '../../../api/cloudcredential.ts';
import { collectorRequestName, credentialsRequestName } from '../../../api/credentials-text.ts';
import { fromSecret, mountablePath, projectedToken } from '../issued.ts';
import type { CloudIssuedCredentials } from '../provider.ts';
import { checkServiceAccountKey } from './facts.ts';

/** The key of the Secret the operator and ccoctl write. */
export const GCP_SECRET_KEY = 'service_account.json';
/** Where the adaptor and the image jobs read an external_account configuration (GOOGLE_APPLICATION_CREDENTIALS). */
export const GCP_CREDENTIALS_DIR = '/var/run/secrets/cloud-credentials';
const CREDENTIALS_VOLUME = 'cloud-credentials';

/**
 * The permissions peer pods need, by who needs them (docs/cloud-credentials.md says why each), as one
 * custom role rather than predefined roles (roles/compute.instanceAdmin.v1 alone grants hundreds).
 */
export const PEER_PODS_GCP_PERMISSIONS = {
  /** The adaptor: the machine types at start-up, then an instance per peer pod (its boot disk, labels, metadata), deleted with the pod. */
  adaptor: [
    'compute.machineTypes.get',
    'compute.images.useReadOnly',
    'compute.instances.create',
    'compute.instances.get',
    'compute.instances.delete',
    'compute.instances.setLabels',
    'compute.instances.setMetadata',
    'compute.disks.create',
    'compute.subnetworks.use',
    'compute.subnetworks.useExternalIp',
    'compute.zoneOperations.get',
  ],
  /** osc's leaked pod VM collector: the cluster's instances, by label. */
  collector: ['compute.instances.list'],
  /** The image creation job: the disk uploaded to a bucket, made an image. */
  imageCreation: [
    'compute.images.create',
    'compute.images.get',
    'compute.globalOperations.get',
    'storage.buckets.create',
    'storage.buckets.delete',
    'storage.objects.create',
    'storage.objects.delete',
  ],
  /** The image deletion job. */
  imageDeletion: ['compute.images.delete'],
} as const;

/** The leaked pod VM collector's own service account (Manual mode): list the zone's instances by label, delete a leaked one. */
export const COLLECTOR_GCP_PERMISSIONS = ['compute.instances.list', 'compute.instances.delete'] as const;

/** Every permission of the request, once. */
export const peerPodsGcpPermissions = (): string[] => [...new Set(Object.values(PEER_PODS_GCP_PERMISSIONS).flat())].sort();

/** An external_account configuration's fields ccoctl writes (the token file among them); why it is unusable, or undefined. */
function checkExternalAccount(doc: Record<string, unknown>): string | undefined {
  const source = doc.credential_source as { file?: unknown } | undefined;
  const missing = ['audience', 'subject_token_type', 'token_url'].filter((f) => typeof doc[f] !== 'string' || doc[f] === '');
  if (typeof source?.file !== 'string') missing.push('credential_source.file');
  if (missing.length)
    return `${GCP_SECRET_KEY} is an external_account configuration without ${missing.join(', ')}; rerun ccoctl gcp create-service-accounts`;
  if (!mountablePath(String(source?.file))) return `${GCP_SECRET_KEY} names a token file that is not an absolute path; rerun ccoctl`;
  return undefined;
}

export const gcpIssued: CloudIssuedCredentials = {
  requestName: credentialsRequestName('gcp'),
  providerSpec: () => ({
    apiVersion: 'cloudcredential.openshift.io/v1',
    kind: 'GCPProviderSpec',
    predefinedRoles: [],
    permissions: peerPodsGcpPermissions(),
  }),
  rootSecret: GCP_ROOT_SECRET,
  collector: {
    requestName: collectorRequestName('gcp'),
    providerSpec: () => ({
      apiVersion: 'cloudcredential.openshift.io/v1',
      kind: 'GCPProviderSpec',
      predefinedRoles: [],
      permissions: [...COLLECTOR_GCP_PERMISSIONS],
    }),
    actions: COLLECTOR_GCP_PERMISSIONS,
  },
  ccoctl: 'ccoctl gcp create-service-accounts',
  formsInWords: `${GCP_SECRET_KEY} (a service account key, or an external_account configuration from ccoctl)`,
  form(read) {
    const text = read(GCP_SECRET_KEY);
    if (!text) return undefined;
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return {
        kind: 'unusable',
        why: `${GCP_SECRET_KEY} is not JSON; delete the Secret so that the Cloud Credential Operator writes it again, or rerun ccoctl`,
      };
    }
    if (doc?.type === 'external_account') {
      const why = checkExternalAccount(doc);
      if (why) return { kind: 'unusable', why };
      return { kind: 'sts', tokenPath: String((doc.credential_source as { file: string }).file) };
    }
    const why = checkServiceAccountKey(text);
    return why ? { kind: 'unusable', why: `${GCP_SECRET_KEY} ${why}` } : { kind: 'minted' };
  },
  // A key goes to the adaptor's GCP_CREDENTIALS (which takes service account keys only); a configuration
  // is a file the SDK finds through GOOGLE_APPLICATION_CREDENTIALS, beside the token it names.
  wiring(form, secret) {
    if (form.kind === 'minted')
      return { envFrom: [], env: [fromSecret('GCP_CREDENTIALS', secret, GCP_SECRET_KEY)], volumes: [], volumeMounts: [] };
    const token = projectedToken(form.tokenPath ?? STS_TOKEN_PATH);
    return {
      envFrom: [],
      env: [{ name: 'GOOGLE_APPLICATION_CREDENTIALS', value: `${GCP_CREDENTIALS_DIR}/${GCP_SECRET_KEY}` }],
      volumes: [
        { name: CREDENTIALS_VOLUME, secret: { secretName: secret, items: [{ key: GCP_SECRET_KEY, path: GCP_SECRET_KEY }] } },
        ...token.volumes,
      ],
      volumeMounts: [{ name: CREDENTIALS_VOLUME, mountPath: GCP_CREDENTIALS_DIR, readOnly: true }, ...token.volumeMounts],
    };
  },
  adaptorKeys: (form) => (form.kind === 'minted' ? ['GCP_CREDENTIALS'] : ['GOOGLE_APPLICATION_CREDENTIALS']),
  adaptorValues: (form, read): Record<string, string> =>
    form.kind === 'minted'
      ? { GCP_CREDENTIALS: read(GCP_SECRET_KEY) ?? '' }
      : { GOOGLE_APPLICATION_CREDENTIALS: `${GCP_CREDENTIALS_DIR}/${GCP_SECRET_KEY}` },
};
