/**
 * The dev cluster's Google Cloud project, as far as who may do what goes (docs/devcluster.md): service
 * accounts with roles on the project and RSA keys (what `gcloud iam service-accounts keys create` and the
 * Cloud Credential Operator's Mint mode make), custom roles, a workload identity pool whose principals may
 * impersonate a service account (what `ccoctl gcp create-service-accounts` sets up for a Manual-mode
 * cluster), and the one question every simulated call asks: does this caller hold this permission?
 * Refusals are Google's: OAuth2's invalid_grant, the STS and IAM Credentials APIs', googleapi's 403.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';

/** Predefined roles as far as peer pods touch them (permission globs). */
export const GCP_PREDEFINED_ROLES: Record<string, { include: string[]; exclude: string[] }> = {
  'roles/owner': { include: ['*'], exclude: [] },
  // Editors may not change who may do what, nor make or use service account keys' trust.
  'roles/editor': {
    include: ['*'],
    exclude: ['resourcemanager.projects.setIamPolicy', 'iam.roles.create', 'iam.roles.update', 'iam.roles.delete'],
  },
  'roles/viewer': { include: ['*.get', '*.list'], exclude: [] },
  'roles/compute.instanceAdmin.v1': {
    include: [
      'compute.instances.*',
      'compute.disks.*',
      'compute.machineTypes.*',
      'compute.images.useReadOnly',
      'compute.images.get',
      'compute.images.list',
      'compute.subnetworks.use',
      'compute.subnetworks.useExternalIp',
      'compute.zoneOperations.*',
      'compute.zones.*',
    ],
    exclude: [],
  },
  'roles/compute.viewer': { include: ['compute.*.get', 'compute.*.list'], exclude: [] },
  'roles/storage.admin': { include: ['storage.*'], exclude: [] },
  'roles/iam.workloadIdentityUser': { include: ['iam.serviceAccounts.getAccessToken', 'iam.serviceAccounts.getOpenIdToken'], exclude: [] },
};

/** What the Cloud Credential Operator checks the root credentials for before minting (its secret annotator). */
export const GCP_MINT_PERMISSIONS = [
  'resourcemanager.projects.get',
  'serviceusage.services.list',
  'iam.serviceAccountKeys.create',
  'iam.serviceAccountKeys.delete',
  'iam.serviceAccounts.create',
  'iam.serviceAccounts.delete',
  'iam.serviceAccounts.get',
  'iam.roles.get',
  'resourcemanager.projects.getIamPolicy',
  'resourcemanager.projects.setIamPolicy',
];

/** What a Google SDK presents: a service account key file, or an external_account configuration with the token it names. */
export type GcpCaller =
  | { key: string }
  | { external: Record<string, unknown>; token: { serviceAccount: string; audience: string } | undefined };

interface ServiceAccount {
  email: string;
  uniqueId: string;
  roles: string[];
  keys: Map<string, KeyObject>;
  /** Workload identity pool principals allowed to impersonate it (roles/iam.workloadIdentityUser on it). */
  impersonators: string[];
}

/** A refusal, as googleapi words it. */
export class GcpAuthError extends Error {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

const glob = (pattern: string, value: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^]*')}$`).test(value);

export class GcpIam {
  readonly projectId: string;
  readonly projectNumber = String(100_000_000_000 + Math.floor(Math.random() * 800_000_000_000));
  /** The cluster's workload identity pool and provider (ccoctl gcp create-workload-identity-pool/-provider). */
  readonly pool = 'osc-dev-pool';
  readonly provider = 'osc-dev-provider';
  private readonly accounts = new Map<string, ServiceAccount>();
  private readonly customRoles = new Map<string, string[]>();
  /** The permissions each service account was allowed: what the simulated paths really use. */
  readonly allowed = new Map<string, Set<string>>();
  readonly stats = { refused: 0 };

  constructor(projectId: string) {
    this.projectId = projectId;
  }

  /** The audience an external_account configuration for the cluster's pool names. */
  get poolAudience(): string {
    return `//iam.googleapis.com/projects/${this.projectNumber}/locations/global/workloadIdentityPools/${this.pool}/providers/${this.provider}`;
  }

  /** The pool's principal for a Kubernetes ServiceAccount (`system:serviceaccount:<ns>:<name>`). */
  poolPrincipal(subject: string): string {
    return `principal://iam.googleapis.com/projects/${this.projectNumber}/locations/global/workloadIdentityPools/${this.pool}/subject/${subject}`;
  }

  /** `gcloud iam service-accounts create` with these roles bound on the project; answers its email. */
  createServiceAccount(id: string, roles: string[]): string {
    const email = `${id}@${this.projectId}.iam.gserviceaccount.com`;
    this.accounts.set(email, {
      email,
      uniqueId: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
      roles: [...roles],
      keys: new Map(),
      impersonators: [],
    });
    return email;
  }

  hasServiceAccount(email: string): boolean {
    return this.accounts.has(email);
  }

  deleteServiceAccount(email: string): void {
    this.accounts.delete(email);
  }

  setRoles(email: string, roles: string[]): void {
    const a = this.accounts.get(email);
    if (a) a.roles = [...roles];
  }

  rolesOf(email: string): string[] | undefined {
    return this.accounts.get(email)?.roles;
  }

  serviceAccountEmails(): string[] {
    return [...this.accounts.keys()];
  }

  /** A custom role of the project (`projects/<project>/roles/<id>`); answers its name. */
  createCustomRole(id: string, permissions: string[]): string {
    const name = `projects/${this.projectId}/roles/${id}`;
    this.customRoles.set(name, [...permissions]);
    return name;
  }

  /** Lets the pool's principals for these ServiceAccounts impersonate the service account. */
  allowImpersonation(email: string, subjects: string[]): void {
    const a = this.accounts.get(email);
    if (a) a.impersonators = subjects.map((s) => this.poolPrincipal(s));
  }

  /** Whether the pool's principal for `subject` may impersonate the service account (roles/iam.workloadIdentityUser on it). */
  mayImpersonate(email: string, subject: string): boolean {
    return !!this.accounts.get(email)?.impersonators.includes(this.poolPrincipal(subject));
  }

  /** The audiences the pool's provider accepts in a token (ccoctl gcp create-workload-identity-provider: openshift only). */
  readonly providerAudiences = ['openshift'];

  /** `gcloud iam service-accounts keys create`: the key file's text, with a real RSA key. */
  createKey(email: string): string {
    const a = this.accounts.get(email);
    if (!a) throw new Error(`no service account ${email}`);
    const id = randomBytes(20).toString('hex');
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    a.keys.set(id, pair.publicKey);
    const key = {
      type: 'service_account',
      project_id: this.projectId,
      private_key_id: id,
      private_key: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: a.uniqueId,
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: 'https://oauth2.googleapis.com/token',
    };
    return `${JSON.stringify(key, null, 2)}\n`;
  }

  keyIds(email: string): string[] {
    return [...(this.accounts.get(email)?.keys.keys() ?? [])];
  }

  /** Deletes a key (refused from then on); every key of the account when `keyId` is undefined. */
  deleteKey(email: string, keyId?: string): void {
    const a = this.accounts.get(email);
    if (!a) return;
    if (keyId === undefined) a.keys.clear();
    else a.keys.delete(keyId);
  }

  /** The public half of a key the project issued and has not deleted, with its account. */
  keyOf(keyId: string): { publicKey: KeyObject; email: string } | undefined {
    for (const a of this.accounts.values()) {
      const k = a.keys.get(keyId);
      if (k) return { publicKey: k, email: a.email };
    }
    return undefined;
  }

  /** Whether the account's roles grant `permission`. */
  allows(email: string, permission: string): boolean {
    const a = this.accounts.get(email);
    if (!a) return false;
    return a.roles.some((r) => {
      const predefined = GCP_PREDEFINED_ROLES[r];
      if (predefined) return predefined.include.some((p) => glob(p, permission)) && !predefined.exclude.some((p) => glob(p, permission));
      return (this.customRoles.get(r) ?? []).includes(permission);
    });
  }

  /** One call: returns when allowed, throws googleapi's 403 otherwise. */
  authorize(email: string, permission: string, resource: string): void {
    if (this.allows(email, permission)) {
      let used = this.allowed.get(email);
      if (!used) this.allowed.set(email, (used = new Set()));
      used.add(permission);
      return;
    }
    this.stats.refused++;
    throw new GcpAuthError(403, 'forbidden', `Required '${permission}' permission for '${resource}'`);
  }

  /**
   * Who the caller is, as Google's token exchange decides: the service account whose key signed (a key
   * the project has), or the one a workload identity may impersonate; else the error the SDK reports.
   */
  identify(caller: GcpCaller | undefined): { email: string } | { error: string } {
    if (!caller)
      return {
        error:
          'google: could not find default credentials. See https://cloud.google.com/docs/authentication/external/set-up-adc for more information',
      };
    if ('key' in caller) {
      let key: Record<string, unknown>;
      try {
        key = JSON.parse(caller.key) as Record<string, unknown>;
      } catch (e) {
        return { error: `google: error getting credentials using GCP_CREDENTIALS: ${(e as Error).message}` };
      }
      if (key?.type !== 'service_account') return { error: 'google: error getting credentials: unknown credential type' };
      const issued = this.keyOf(String(key.private_key_id));
      // The key must be the one issued: its private half matches the public half the project keeps.
      const matches = (() => {
        try {
          const pub = createPublicKey(createPrivateKey(String(key.private_key))).export({ type: 'spki', format: 'pem' });
          return !!issued && pub === issued.publicKey.export({ type: 'spki', format: 'pem' }) && issued.email === key.client_email;
        } catch {
          return false;
        }
      })();
      if (!matches) {
        this.stats.refused++;
        return { error: 'oauth2: "invalid_grant" "Invalid JWT Signature."' };
      }
      return { email: String(key.client_email) };
    }
    const doc = caller.external;
    if (doc.audience !== this.poolAudience) {
      this.stats.refused++;
      return {
        error: `oauth2/google: status code 400: {"error":"invalid_target","error_description":"The target service indicated by the \\"audience\\" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn't exist."}`,
      };
    }
    if (!caller.token)
      return {
        error: `oauth2/google: status code 400: failed to read the subject token from ${JSON.stringify((doc.credential_source as { file?: string })?.file)}: no such file or directory`,
      };
    if (caller.token.audience !== 'openshift') {
      this.stats.refused++;
      return {
        error: `oauth2/google: status code 400: {"error":"invalid_grant","error_description":"The audience in ID Token [${caller.token.audience}] does not match the expected audience."}`,
      };
    }
    const email = /serviceAccounts\/([^:]+):generateAccessToken$/.exec(String(doc.service_account_impersonation_url ?? ''))?.[1] ?? '';
    const a = this.accounts.get(email);
    if (!a?.impersonators.includes(this.poolPrincipal(caller.token.serviceAccount))) {
      this.stats.refused++;
      return {
        error: `impersonate: status code 403: {"error":{"code":403,"message":"Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).","status":"PERMISSION_DENIED"}}`,
      };
    }
    return { email };
  }

  /** Identifies and authorizes, answering the error a Google SDK gives a program (the adaptor, an image job), or undefined. */
  check(caller: GcpCaller | undefined, permission: string, resource: string): string | undefined {
    const who = this.identify(caller);
    if ('error' in who) return who.error;
    try {
      this.authorize(who.email, permission, resource);
      return undefined;
    } catch (e) {
      if (!(e instanceof GcpAuthError)) throw e;
      return `googleapi: Error ${e.status}: ${e.message}, ${e.reason}`;
    }
  }
}

/** What a Google SDK signs in with from a container: GCP_CREDENTIALS (a key), else the file GOOGLE_APPLICATION_CREDENTIALS names. */
export function gcpCallerOf(
  env: Record<string, string>,
  files: { token?: { serviceAccount: string; audience: string }; applicationCredentials?: string } = {},
): GcpCaller | undefined {
  if (env.GCP_CREDENTIALS) return { key: env.GCP_CREDENTIALS };
  const text = files.applicationCredentials;
  if (!text) return undefined;
  try {
    const doc = JSON.parse(text) as Record<string, unknown>;
    if (doc.type === 'external_account') return { external: doc, token: files.token };
  } catch {
    // A key, or not JSON: the key path says which.
  }
  return { key: text };
}
