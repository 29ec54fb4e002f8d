import { randomBytes } from 'node:crypto';
import {
  CR_CONDITIONS,
  CREDENTIALS_REQUEST_ANNOTATION,
  type CredentialsMode,
  GCP_ROOT_SECRET,
  type GCPProviderSpec,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
} from '../../api/cloudcredential.ts';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Secret } from '../../kube/resources.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { SimulatedGcp } from '../clouds/gcp.ts';
import { GCP_MINT_PERMISSIONS } from '../clouds/gcp-identity.ts';
import {
  type AnyCredentialsRequest,
  b64,
  type CcoActuator,
  decode,
  markRoot,
  nsKey,
  type ProviderStatus,
  ProvisionError,
  writeRequestSecret,
  writeRootSecret,
} from './actuator.ts';

const KEY = 'service_account.json';
/** Five random characters of the alphabet Kubernetes' generated names use (no vowels, no look-alikes). */
const suffix = () => [...randomBytes(5)].map((b) => 'bcdfghjklmnpqrstvwxz2456789'[b % 27]).join('');
const specOf = (cr: AnyCredentialsRequest) => cr.spec.providerSpec as GCPProviderSpec;
const keyIdOf = (json: string | undefined): string => {
  try {
    return String((JSON.parse(json ?? '') as { private_key_id?: string }).private_key_id ?? '');
  } catch {
    return '';
  }
};

/**
 * The Cloud Credential Operator's Google Cloud side, as the real one: its secret annotator marks the root
 * credentials (kube-system/gcp-credentials, a service account key) `mint` when they may make service
 * accounts, keys and IAM bindings, else `passthrough` when they hold what the cluster's requests ask, else
 * `insufficient`. Minting makes a service account per request (infrastructure name, request name, random
 * suffix), a custom role of the request's permissions bound to it with its predefined roles, and a key,
 * written as service_account.json; a new key (the old ones deleted) only when the Secret is gone or its key
 * no longer exists. Each call is made with the root key and refused as Google refuses it. A deleted
 * request's service account goes with it.
 */
export class GcpActuator implements CcoActuator {
  readonly kind = 'GCPProviderSpec' as const;
  readonly rootSecret = GCP_ROOT_SECRET;
  private readonly client: KubeClient;
  private readonly secrets: Informer<Secret>;
  private readonly gcp: SimulatedGcp;
  private readonly infraName: string;
  private readonly stats: { mints: number; rotations: number };
  private rootEmail = '';

  constructor(opts: {
    client: KubeClient;
    secrets: Informer<Secret>;
    gcp: SimulatedGcp;
    infraName: string;
    stats: { mints: number; rotations: number };
  }) {
    this.client = opts.client;
    this.secrets = opts.secrets;
    this.gcp = opts.gcp;
    this.infraName = opts.infraName;
    this.stats = opts.stats;
  }

  private get iam() {
    return this.gcp.iam;
  }

  /** The root key's service account, when the key is one the project issued. */
  private rootAccount(root: Secret | undefined): string | undefined {
    const who = this.iam.identify({ key: decode(root, KEY) ?? '' });
    return 'email' in who ? who.email : undefined;
  }

  /** Every permission a request asks: its predefined roles' and its own (as the actuator gathers them). */
  private asked(cr: AnyCredentialsRequest): string[] {
    return [...(specOf(cr).permissions ?? [])];
  }

  async annotateRoot(mode: CredentialsMode, requests: readonly AnyCredentialsRequest[], signal: AbortSignal): Promise<void> {
    const root = this.secrets.get(nsKey(GCP_ROOT_SECRET.namespace, GCP_ROOT_SECRET.name));
    if (!root || mode === 'Manual') return;
    let want: string;
    if (mode === 'Mint') want = 'mint';
    else if (mode === 'Passthrough') want = 'passthrough';
    else {
      const email = this.rootAccount(root);
      const asked = requests.filter((r) => r.spec?.providerSpec?.kind === 'GCPProviderSpec').flatMap((r) => this.asked(r));
      if (email && GCP_MINT_PERMISSIONS.every((p) => this.iam.allows(email, p))) want = 'mint';
      else if (email && asked.every((p) => this.iam.allows(email, p))) want = 'passthrough';
      else want = 'insufficient';
    }
    await markRoot(this.client, root, GCP_ROOT_SECRET, want, signal);
  }

  needsUpdate(cr: AnyCredentialsRequest, root: Secret | undefined, _mode: CredentialsMode): boolean {
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    if (!existing || existing.metadata.deletionTimestamp) return true;
    const sa = cr.status?.providerStatus?.serviceAccountID;
    if (sa) {
      const email = `${sa}@${this.iam.projectId}.iam.gserviceaccount.com`;
      if (!this.iam.hasServiceAccount(email) || !this.iam.keyIds(email).includes(keyIdOf(decode(existing, KEY)))) return true;
      return this.asked(cr).some((p) => !this.iam.allows(email, p));
    }
    if (root && root.metadata.resourceVersion !== cr.status?.lastSyncCloudCredsSecretResourceVersion) return true;
    return decode(existing, KEY) !== decode(root, KEY);
  }

  async sync(cr: AnyCredentialsRequest, root: Secret | undefined, _mode: CredentialsMode, signal: AbortSignal): Promise<ProviderStatus> {
    const p = CR_CONDITIONS.provisionFailure;
    if (!root) throw new ProvisionError(p, `unable to fetch root cloud cred secret: secrets "${GCP_ROOT_SECRET.name}" not found`);
    const annotation = root.metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION];
    if (!annotation) throw new ProvisionError(p, 'cannot proceed without cloud cred secret annotation');
    if (annotation === 'insufficient')
      throw new ProvisionError(CR_CONDITIONS.insufficientCloudCreds, 'cloud credentials insufficient to satisfy credentials request');
    const status = (extra: Partial<ProviderStatus> = {}): ProviderStatus => ({
      apiVersion: 'cloudcredential.openshift.io/v1',
      kind: 'GCPProviderStatus',
      ...extra,
    });
    const rootEmail = this.rootAccount(root);
    if (annotation === 'passthrough') {
      if (!rootEmail || this.asked(cr).some((perm) => !this.iam.allows(rootEmail, perm)))
        throw new ProvisionError(p, 'cloud root creds do not have enough permissions to be used as-is');
      await this.writeTarget(cr, decode(root, KEY) ?? '', signal);
      return status();
    }
    if (annotation !== 'mint')
      throw new ProvisionError(p, `unexpected value or missing ${ROOT_CREDENTIALS_MODE_ANNOTATION} annotation on admin credentials Secret`);
    // Mint: every IAM call is made with the root key, and refused as Google refuses it.
    const call = (permission: string) => {
      if (!rootEmail) throw new ProvisionError(p, 'error syncing creds in mint-mode: oauth2: "invalid_grant" "Invalid JWT Signature."');
      if (!this.iam.allows(rootEmail, permission))
        throw new ProvisionError(
          p,
          `error syncing creds in mint-mode: googleapi: Error 403: Permission '${permission}' denied on resource (or it may not exist)., forbidden`,
        );
    };
    const spec = specOf(cr);
    // The real operator's names: a service account ID of at most 30 characters (12-11-5), a role ID of
    // letters, digits and underscores (29_28_5), each ending with 5 random characters of Kubernetes' alphabet.
    const sa = cr.status?.providerStatus?.serviceAccountID || `${this.infraName.slice(0, 12)}-${objectName(cr).slice(0, 11)}-${suffix()}`;
    const alnum = (x: string) => x.replace(/[^a-zA-Z0-9]/g, '');
    const roleID =
      cr.status?.providerStatus?.roleID ||
      (spec.permissions?.length ? `${alnum(this.infraName).slice(0, 29)}_${alnum(objectName(cr)).slice(0, 28)}_${suffix()}` : '');
    const email = `${sa}@${this.iam.projectId}.iam.gserviceaccount.com`;
    const roles = [...spec.predefinedRoles];
    if (roleID) {
      call('iam.roles.get');
      roles.push(this.iam.createCustomRole(roleID, spec.permissions ?? []));
    }
    if (!this.iam.hasServiceAccount(email)) {
      call('iam.serviceAccounts.create');
      this.iam.createServiceAccount(sa, roles);
    }
    call('resourcemanager.projects.setIamPolicy');
    this.iam.setRoles(email, roles);
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    const current = existing && !existing.metadata.deletionTimestamp ? decode(existing, KEY) : undefined;
    let json = current;
    if (!current || !this.iam.keyIds(email).includes(keyIdOf(current))) {
      // A new key, every older one deleted: deleting the Secret is how an administrator revokes a minted key.
      call('iam.serviceAccountKeys.delete');
      call('iam.serviceAccountKeys.create');
      const fresh = this.iam.keyIds(email).length === 0;
      this.iam.deleteKey(email);
      json = this.iam.createKey(email);
      if (fresh) this.stats.mints++;
      else this.stats.rotations++;
    }
    await this.writeTarget(cr, json ?? '', signal);
    return status({ serviceAccountID: sa, ...(roleID ? { roleID } : {}) });
  }

  deprovision(cr: AnyCredentialsRequest): void {
    const sa = cr.status?.providerStatus?.serviceAccountID;
    if (sa) this.iam.deleteServiceAccount(`${sa}@${this.iam.projectId}.iam.gserviceaccount.com`);
  }

  /** The installer's service account (roles/owner), its key in kube-system/gcp-credentials. */
  async seedRoot(): Promise<void> {
    this.rootEmail = this.iam.createServiceAccount(`${this.infraName.slice(0, 20)}-installer`, ['roles/owner']);
    await this.writeRoot(this.iam.createKey(this.rootEmail), true);
  }

  /** A new key for the installer's service account (the old one deleted). */
  async rotateRoot(): Promise<string> {
    this.iam.deleteKey(this.rootEmail);
    const key = this.iam.createKey(this.rootEmail);
    await this.writeRoot(key, false);
    return keyIdOf(key);
  }

  private async writeRoot(key: string, create: boolean): Promise<void> {
    await writeRootSecret(this.client, GCP_ROOT_SECRET, { [KEY]: b64(key) }, create);
  }

  private async writeTarget(cr: AnyCredentialsRequest, json: string, signal: AbortSignal): Promise<void> {
    const { name, namespace } = cr.spec.secretRef;
    const annotations = { [CREDENTIALS_REQUEST_ANNOTATION]: nsKey(cr.metadata.namespace, cr.metadata.name) };
    const data = { [KEY]: b64(json) };
    const existing = this.secrets.get(nsKey(namespace, name));
    await writeRequestSecret(this.client, { name, namespace }, existing, { annotations, data }, signal);
  }
}
