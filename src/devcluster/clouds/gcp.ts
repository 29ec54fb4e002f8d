import { type KeyObject, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PEER_PODS_GCP_PERMISSIONS } from '../../peerpods/clouds/gcp/credentials.ts';
import { GCP_REGIONS, ZONE_RE } from '../../peerpods/clouds/gcp/facts.ts';
import type { ContainerCredentialFiles } from '../pod-credentials.ts';
import { GcpIam, gcpCallerOf } from './gcp-identity.ts';
import { ImageJobCloud, type ImageJobCloudOptions } from './image-jobs.ts';

/** What `gcloud config get-value project` and `gcloud compute networks list` answer for the dev cluster's project. */
export interface GcpAccount {
  projectId: string;
  region: string;
  network: string;
}

/** A role on the project: a predefined one (./gcp-identity.ts) or a custom role the project has. */
export type GcpRole = string;

/**
 * The dev cluster's Google Cloud (`osc start --cloud GCP`): a project with the cluster's region and VPC
 * network, the service account keys made for it, and the pod VM image jobs' work. A creation job is refused
 * as Google's APIs refuse it: a key that is not a service account's JSON or that the project never issued
 * (oauth2 invalid_grant), a project, zone or network that does not exist (googleapi errors). Images are
 * named podvm-image-<hex> and fill PODVM_IMAGE_NAME; failure injection as for AWS (./image-jobs.ts).
 */
export class SimulatedGcp extends ImageJobCloud {
  readonly account: GcpAccount;
  /** Who may do what: service accounts, their roles and keys, the workload identity pool. */
  readonly iam: GcpIam;

  constructor(opts: ImageJobCloudOptions & { infrastructureName: string; region?: string }) {
    super(opts, {
      imageKey: 'PODVM_IMAGE_NAME',
      deletionEnv: 'IMAGE_NAME',
      newImage: (_cm, env) => `${env.IMAGE_NAME_PREFIX}-${randomBytes(4).toString('hex')}`,
      refuse: (kind, { cm, secret, env, files }) =>
        kind === 'creation' ? this.refusal(cm, secret, env, files) : this.deletionRefusal(cm, secret, files),
    });
    this.account = { projectId: `${opts.infrastructureName}-project`, region: opts.region ?? 'us-central1', network: 'default' };
    this.iam = new GcpIam(this.account.projectId);
  }

  /**
   * `gcloud iam service-accounts keys create key.json --iam-account=<account>`: the key file's text, with a
   * real RSA key (the project checks the signatures made with it), for a new account holding `role`.
   */
  createServiceAccountKey(role: GcpRole = 'roles/editor'): string {
    const email = this.iam.createServiceAccount(`peerpods-${randomBytes(3).toString('hex')}`, [role]);
    return this.iam.createKey(email);
  }

  /** The public half of a key the project issued (and has not deleted), with its account. */
  serviceAccountKey(keyId: string): { publicKey: KeyObject; email: string } | undefined {
    return this.iam.keyOf(keyId);
  }

  /** `gcloud iam service-accounts keys delete`: refused from then on. */
  deleteServiceAccountKey(keyId: string): void {
    const k = this.iam.keyOf(keyId);
    if (k) this.iam.deleteKey(k.email, keyId);
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

  /** What the cloud answers a creation job with this peer-pods-cm, these credentials and parameters: its error, or undefined when it builds. */
  refusal(
    cm: Record<string, string>,
    secret: Record<string, string>,
    env: Record<string, string>,
    files: ContainerCredentialFiles = {},
  ): string | undefined {
    const { projectId, network } = this.account;
    const prefix = env.IMAGE_NAME_PREFIX ?? '';
    if (!/^[a-z][-a-z0-9]{0,50}$/.test(prefix))
      return `googleapi: Error 400: Invalid value for field 'resource.name': '${prefix}-...'. Must be a match of regex '[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?', invalid`;
    const who = this.iam.identify(gcpCallerOf(secret, files));
    if ('error' in who) return who.error;
    const project = cm.GCP_PROJECT_ID ?? '';
    if (project !== projectId) return `googleapi: Error 404: The resource 'projects/${project}' was not found, notFound`;
    const zone = cm.GCP_ZONE ?? '';
    const region = ZONE_RE.exec(zone)?.[1];
    if (!region || !GCP_REGIONS.includes(region))
      return `googleapi: Error 400: Invalid value for field 'zone': '${zone}'. Unknown zone., invalid`;
    const net = (cm.GCP_NETWORK || 'default').split('/').pop();
    if (net !== network) return `googleapi: Error 404: The resource 'projects/${project}/global/networks/${net}' was not found, notFound`;
    return this.jobAuthorize(who.email, PEER_PODS_GCP_PERMISSIONS.imageCreation, `projects/${project}/global/images/${prefix}`);
  }

  /** What the cloud answers a deletion job: its error, or undefined when the image goes. */
  deletionRefusal(cm: Record<string, string>, secret: Record<string, string>, files: ContainerCredentialFiles = {}): string | undefined {
    const who = this.iam.identify(gcpCallerOf(secret, files));
    if ('error' in who) return who.error;
    return this.jobAuthorize(who.email, PEER_PODS_GCP_PERMISSIONS.imageDeletion, `projects/${cm.GCP_PROJECT_ID ?? ''}/global/images`);
  }

  private jobAuthorize(email: string, permissions: readonly string[], resource: string): string | undefined {
    for (const p of permissions) {
      try {
        this.iam.authorize(email, p, resource);
      } catch (e) {
        return `googleapi: Error 403: ${(e as Error).message}, forbidden`;
      }
    }
    return undefined;
  }
}
