import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GCP_REGIONS, ZONE_RE } from '../../peerpods/clouds/gcp/facts.ts';
import { ImageJobCloud, type ImageJobCloudOptions } from './image-jobs.ts';

/** What `gcloud config get-value project` and `gcloud compute networks list` answer for the dev cluster's project. */
export interface GcpAccount {
  projectId: string;
  region: string;
  network: string;
}

/** The basic roles the project models: an editor may delete instances, a viewer only list them. */
export type GcpRole = 'roles/editor' | 'roles/viewer';

/**
 * The dev cluster's Google Cloud (`osc start --cloud GCP`): a project with the cluster's region and VPC
 * network, the service account keys made for it, and the pod VM image jobs' work. A creation job is refused
 * as Google's APIs refuse it: a key that is not a service account's JSON or that the project never issued
 * (oauth2 invalid_grant), a project, zone or network that does not exist (googleapi errors). Images are
 * named podvm-image-<hex> and fill PODVM_IMAGE_NAME; failure injection as for AWS (../cloud.ts).
 */
export class SimulatedGcp extends ImageJobCloud {
  readonly account: GcpAccount;
  private readonly keyIds = new Set<string>();
  /** Each key's public half and the role its service account holds on the project, by private_key_id. */
  private readonly keys = new Map<string, { publicKey: KeyObject; email: string; role: GcpRole }>();

  constructor(opts: ImageJobCloudOptions & { infrastructureName: string; region?: string }) {
    super(opts, {
      imageKey: 'PODVM_IMAGE_NAME',
      deletionEnv: 'IMAGE_NAME',
      newImage: (_cm, env) => `${env.IMAGE_NAME_PREFIX}-${randomBytes(4).toString('hex')}`,
      refuse: (cm, secret, env) => this.refusal(cm, secret, env),
    });
    this.account = { projectId: `${opts.infrastructureName}-project`, region: opts.region ?? 'us-central1', network: 'default' };
  }

  /**
   * `gcloud iam service-accounts keys create key.json --iam-account=<account>`: the key file's text, with a
   * real RSA key (the project checks the signatures made with it), for an account holding `role`.
   */
  createServiceAccountKey(role: GcpRole = 'roles/editor'): string {
    const id = randomBytes(20).toString('hex');
    this.keyIds.add(id);
    const { projectId } = this.account;
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const email = `peerpods@${projectId}.iam.gserviceaccount.com`;
    this.keys.set(id, { publicKey: pair.publicKey, email, role });
    const key = {
      type: 'service_account',
      project_id: projectId,
      private_key_id: id,
      private_key: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: 'https://oauth2.googleapis.com/token',
    };
    return `${JSON.stringify(key, null, 2)}\n`;
  }

  /** The public half of a key the project issued (and has not deleted), with its account and role. */
  serviceAccountKey(keyId: string): { publicKey: KeyObject; email: string; role: GcpRole } | undefined {
    return this.keys.get(keyId);
  }

  /** `gcloud iam service-accounts keys delete`: refused from then on. */
  deleteServiceAccountKey(keyId: string): void {
    this.keys.delete(keyId);
    this.keyIds.delete(keyId);
  }

  /** For `osc start`: the project's values and a service account key made for the administrator (written to `dir`, mode 0600). */
  async handOut(dir: string): Promise<string[]> {
    const path = join(dir, 'gcp-service-account-key.json');
    await writeFile(path, this.createServiceAccountKey(), { mode: 0o600 });
    const { projectId, region, network } = this.account;
    return [
      'The simulated Google Cloud answers what gcloud would (for peer-pods-cm):',
      `  GCP_PROJECT_ID=${projectId} GCP_ZONE=${region}-a GCP_NETWORK=global/networks/${network}`,
      `  a service account key for peer-pods-secret: kubectl create secret generic peer-pods-secret -n openshift-sandboxed-containers-operator --from-file GCP_CREDENTIALS=${path}`,
    ];
  }

  /** What the OpenShift Infrastructure reports for a cluster in this project. */
  infrastructureStatus(): Record<string, unknown> {
    return { gcp: { projectID: this.account.projectId, region: this.account.region } };
  }

  /** What the cloud answers a creation job with this peer-pods-cm, Secret and parameters: its error, or undefined when it builds. */
  refusal(cm: Record<string, string>, secret: Record<string, string>, env: Record<string, string>): string | undefined {
    const { projectId, network } = this.account;
    const prefix = env.IMAGE_NAME_PREFIX ?? '';
    if (!/^[a-z][-a-z0-9]{0,50}$/.test(prefix))
      return `googleapi: Error 400: Invalid value for field 'resource.name': '${prefix}-...'. Must be a match of regex '[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?', invalid`;
    let key: Record<string, unknown>;
    try {
      key = JSON.parse(secret.GCP_CREDENTIALS ?? '');
    } catch (e) {
      return `google: error getting credentials using GCP_CREDENTIALS: ${(e as Error).message}`;
    }
    if (key?.type !== 'service_account') return 'google: error getting credentials: unknown credential type';
    if (!this.keyIds.has(String(key.private_key_id))) return 'oauth2: "invalid_grant" "Invalid JWT Signature."';
    const project = cm.GCP_PROJECT_ID ?? '';
    if (project !== projectId) return `googleapi: Error 404: The resource 'projects/${project}' was not found, notFound`;
    const zone = cm.GCP_ZONE ?? '';
    const region = ZONE_RE.exec(zone)?.[1];
    if (!region || !GCP_REGIONS.includes(region))
      return `googleapi: Error 400: Invalid value for field 'zone': '${zone}'. Unknown zone., invalid`;
    const net = (cm.GCP_NETWORK || 'default').split('/').pop();
    if (net !== network) return `googleapi: Error 404: The resource 'projects/${project}/global/networks/${net}' was not found, notFound`;
    return undefined;
  }
}
