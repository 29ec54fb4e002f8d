import { randomBytes } from 'node:crypto';
import {
  AWS_POLICY_LAST_APPLIED_ANNOTATION,
  AWS_ROOT_SECRET,
  awsCredentialsFile,
  CR_CONDITIONS,
  CREDENTIALS_REQUEST_ANNOTATION,
  type CredentialsMode,
  type CredentialsRequest,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
  type StatementEntry,
} from '../../api/cloudcredential.ts';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Secret } from '../../kube/resources.ts';
import type { Informer } from '../../runtime/informer.ts';
import { type AwsAccount, AwsError, policyAllows } from '../clouds/aws-account.ts';
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

export { ProvisionError };

/**
 * The Cloud Credential Operator's AWS side (./index.ts runs it): the secret annotator's verdict on the root
 * credentials, whether a request's Secret needs an update, and the update itself in mint or passthrough
 * mode, each IAM call made with the root credentials and refused as AWS refuses it.
 */

const ALL_ACTIONS: StatementEntry[] = [{ effect: 'Allow', action: ['*'], resource: '*' }];

/** The IAM calls minting needs, as the real CCO checks the root credentials for them. */
const MINT_ACTIONS = [
  'iam:CreateAccessKey',
  'iam:CreateUser',
  'iam:DeleteAccessKey',
  'iam:DeleteUser',
  'iam:DeleteUserPolicy',
  'iam:GetUser',
  'iam:GetUserPolicy',
  'iam:ListAccessKeys',
  'iam:PutUserPolicy',
  'iam:TagUser',
];

type RootMode = 'mint' | 'passthrough' | 'insufficient';

/** The IAM user that owns the cluster's root credentials. */
export const ROOT_USER = 'cluster-root';

export class AwsActuator implements CcoActuator {
  readonly kind = 'AWSProviderSpec' as const;
  readonly rootSecret = AWS_ROOT_SECRET;
  /** The operator's counters (shared with it). */
  private readonly stats: { mints: number; rotations: number };
  private readonly client: KubeClient;
  private readonly account: AwsAccount;
  private readonly secrets: Informer<Secret>;
  private readonly infraName: string;

  constructor(opts: {
    client: KubeClient;
    account: AwsAccount;
    secrets: Informer<Secret>;
    infraName: string;
    stats: { mints: number; rotations: number };
  }) {
    this.stats = opts.stats;
    this.client = opts.client;
    this.account = opts.account;
    this.secrets = opts.secrets;
    this.infraName = opts.infraName;
  }

  needsUpdate(request: AnyCredentialsRequest, root: Secret | undefined, mode: CredentialsMode): boolean {
    return this.needsUpdateFor(request as CredentialsRequest, root, request.status?.providerStatus?.user ?? '', mode);
  }

  async sync(
    request: AnyCredentialsRequest,
    root: Secret | undefined,
    mode: CredentialsMode,
    signal: AbortSignal,
  ): Promise<ProviderStatus> {
    const user = await this.syncUser(request as CredentialsRequest, root, request.status?.providerStatus?.user ?? '', mode, signal);
    return {
      apiVersion: 'cloudcredential.openshift.io/v1',
      kind: 'AWSProviderStatus',
      ...(user ? { user, policy: `${user}-policy` } : {}),
    };
  }

  /** A minted user goes with its keys; passed-through credentials are the root's and stay. */
  deprovision(cr: AnyCredentialsRequest): void {
    const user = cr.status?.providerStatus?.user;
    if (user) this.account.deleteUser(user);
  }

  /** The cluster's root credentials, as the installer leaves them: the account's administrator's key in kube-system/aws-creds. */
  async seedRoot(): Promise<void> {
    const key = this.account.createUser(ROOT_USER);
    await this.writeRootSecret(key, true);
  }

  /** A new key for the root user (the old one deleted), written to kube-system/aws-creds. */
  async rotateRoot(): Promise<string> {
    const key = this.account.rotateKey(ROOT_USER);
    await this.writeRootSecret(key, false);
    return key.accessKeyId;
  }

  private async writeRootSecret(key: { accessKeyId: string; secretAccessKey: string }, create: boolean): Promise<void> {
    const data = { aws_access_key_id: b64(key.accessKeyId), aws_secret_access_key: b64(key.secretAccessKey) };
    await writeRootSecret(this.client, AWS_ROOT_SECRET, data, create);
  }

  /** Whether the request's Secret no longer matches what it asks (the real actuator's checks). */
  private needsUpdateFor(cr: CredentialsRequest, root: Secret | undefined, user: string, mode: CredentialsMode): boolean {
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    if (!existing || existing.metadata.deletionTimestamp) return true;
    const id = decode(existing, 'aws_access_key_id') ?? '';
    const secret = decode(existing, 'aws_secret_access_key') ?? '';
    if (decode(existing, 'credentials') !== awsCredentialsFile(id, secret)) return true;
    if (user) {
      // Minted: the user, its key and its policy must still be what the request asks.
      if (!this.account.hasUser(user) || !this.account.keyIds(user).includes(id)) return true;
      return JSON.stringify(this.account.userPolicy(user)) !== JSON.stringify(cr.spec.providerSpec.statementEntries);
    }
    // Passed through: the root credentials changed, or (default mode) they no longer do what is asked.
    if (root && root.metadata.resourceVersion !== cr.status?.lastSyncCloudCredsSecretResourceVersion) return true;
    return mode !== 'Passthrough' && !this.rootAllows(root, cr.spec.providerSpec.statementEntries);
  }

  /** Creates or updates the credentials as the root credentials' mode says; answers the minted user ('' when passed through). */
  private async syncUser(
    cr: CredentialsRequest,
    root: Secret | undefined,
    user: string,
    mode: CredentialsMode,
    signal: AbortSignal,
  ): Promise<string> {
    const p = CR_CONDITIONS.provisionFailure;
    if (!root) throw new ProvisionError(p, `unable to fetch root cloud cred secret: secrets "${AWS_ROOT_SECRET.name}" not found`);
    const rootMode = root.metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION];
    if (!rootMode) throw new ProvisionError(p, 'cannot proceed without cloud cred secret annotation');
    const existing = this.secrets.get(nsKey(cr.spec.secretRef.namespace, cr.spec.secretRef.name));
    const rootKeys = { accessKeyId: decode(root, 'aws_access_key_id') ?? '', secretAccessKey: decode(root, 'aws_secret_access_key') ?? '' };
    if (rootMode === 'insufficient')
      throw new ProvisionError(CR_CONDITIONS.insufficientCloudCreds, 'cloud credentials insufficient to satisfy credentials request');
    if (rootMode === 'passthrough') {
      if (mode !== 'Passthrough' && !this.rootAllows(root, cr.spec.providerSpec.statementEntries))
        throw new ProvisionError(p, 'root creds are not sufficient');
      await this.writeTarget(cr, existing, rootKeys, '', signal);
      return '';
    }
    if (rootMode !== 'mint')
      throw new ProvisionError(p, `unexpected value or missing ${ROOT_CREDENTIALS_MODE_ANNOTATION} annotation on admin credentials Secret`);
    // Mint: every IAM call is made with the root credentials, and refused as AWS refuses it.
    const iam = (action: string) => {
      try {
        this.account.authorize(rootKeys, action);
      } catch (e) {
        if (e instanceof AwsError) throw new ProvisionError(p, `error syncing creds in mint-mode: AWS Error: ${e.code}: ${e.detail}`);
        throw e;
      }
    };
    const name = user || `${this.infraName.slice(0, 20)}-${objectName(cr).slice(0, 37)}-${randomBytes(3).toString('hex').slice(0, 5)}`;
    let keys: { accessKeyId: string; secretAccessKey: string } | undefined;
    if (!this.account.hasUser(name)) {
      iam('iam:CreateUser');
      iam('iam:PutUserPolicy');
      iam('iam:CreateAccessKey');
      keys = this.account.createUser(name, cr.spec.providerSpec.statementEntries);
      this.stats.mints++;
    } else {
      if (JSON.stringify(this.account.userPolicy(name)) !== JSON.stringify(cr.spec.providerSpec.statementEntries)) {
        iam('iam:PutUserPolicy');
        this.account.putUserPolicy(name, cr.spec.providerSpec.statementEntries);
      }
      const id = existing && !existing.metadata.deletionTimestamp ? (decode(existing, 'aws_access_key_id') ?? '') : '';
      if (!id || !this.account.keyIds(name).includes(id)) {
        // A new key, every older one deleted: deleting the Secret is how an administrator revokes a minted key.
        iam('iam:DeleteAccessKey');
        iam('iam:CreateAccessKey');
        keys = this.account.rotateKey(name);
        this.stats.rotations++;
      }
    }
    const current = keys ?? {
      accessKeyId: decode(existing, 'aws_access_key_id') ?? '',
      secretAccessKey: decode(existing, 'aws_secret_access_key') ?? '',
    };
    await this.writeTarget(cr, existing, current, JSON.stringify(cr.spec.providerSpec.statementEntries), signal);
    return name;
  }

  /** Whether the root credentials' key exists and its policy allows every statement's actions. */
  private rootAllows(root: Secret | undefined, statements: readonly StatementEntry[]): boolean {
    const u = this.account.userOfKey(decode(root, 'aws_access_key_id') ?? '', decode(root, 'aws_secret_access_key') ?? '');
    const policy = u?.policy ?? ALL_ACTIONS;
    return !!u && statements.every((s) => s.effect !== 'Allow' || s.action.every((a) => policyAllows(policy, a, s.resource)));
  }

  /** The secret annotator: what the root credentials can do, on the root Secret. */
  async annotateRoot(mode: CredentialsMode, requests: readonly AnyCredentialsRequest[], signal: AbortSignal): Promise<void> {
    const root = this.secrets.get(nsKey(AWS_ROOT_SECRET.namespace, AWS_ROOT_SECRET.name));
    if (!root || mode === 'Manual') return;
    let want: RootMode;
    if (mode === 'Mint') want = 'mint';
    else if (mode === 'Passthrough') want = 'passthrough';
    else {
      const u = this.account.userOfKey(decode(root, 'aws_access_key_id') ?? '', decode(root, 'aws_secret_access_key') ?? '');
      const policy = u?.policy ?? ALL_ACTIONS;
      // Passthrough is judged against what the cluster's requests ask (the real one: what its components need).
      const asked = requests.flatMap((r) => (r.spec?.providerSpec?.kind === 'AWSProviderSpec' ? r.spec.providerSpec.statementEntries : []));
      if (u && MINT_ACTIONS.every((a) => policyAllows(policy, a, '*'))) want = 'mint';
      else if (u && this.rootAllows(root, asked)) want = 'passthrough';
      else want = 'insufficient';
    }
    await markRoot(this.client, root, AWS_ROOT_SECRET, want, signal);
  }

  private async writeTarget(
    cr: CredentialsRequest,
    existing: Secret | undefined,
    keys: { accessKeyId: string; secretAccessKey: string },
    policy: string,
    signal: AbortSignal,
  ): Promise<void> {
    const { name, namespace } = cr.spec.secretRef;
    const data = {
      aws_access_key_id: b64(keys.accessKeyId),
      aws_secret_access_key: b64(keys.secretAccessKey),
      credentials: b64(awsCredentialsFile(keys.accessKeyId, keys.secretAccessKey)),
    };
    const annotations = {
      [CREDENTIALS_REQUEST_ANNOTATION]: nsKey(cr.metadata.namespace, cr.metadata.name),
      [AWS_POLICY_LAST_APPLIED_ANNOTATION]: policy,
    };
    await writeRequestSecret(this.client, { name, namespace }, existing, { annotations, data }, signal);
  }
}
