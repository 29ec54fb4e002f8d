import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import {
  AWS_ROOT_SECRET,
  awsCredentialsFile,
  CCO_DEPROVISION_FINALIZER,
  CCO_NAMESPACE,
  CLOUD_CREDENTIAL_NAME,
  type CloudCredential,
  CloudCredentials,
  CR_CONDITIONS,
  CREDENTIALS_REQUEST_ANNOTATION,
  type CredentialsMode,
  type CredentialsRequest,
  type CredentialsRequestCondition,
  CredentialsRequests,
} from '../api/cloudcredential.ts';
import { objectName } from '../api/meta.ts';
import type { KubeClient } from '../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../kube/errors.ts';
import { Namespaces, type Secret, Secrets } from '../kube/resources.ts';
import { rfc3339 } from '../runtime/conditions.ts';
import { Controller } from '../runtime/controller.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import { type AwsAccount, policyAllows } from './aws-account.ts';

/** The IAM user that owns the cluster's root credentials. */
export const ROOT_USER = 'cluster-root';

export interface CloudCredentialOperatorOptions {
  client: KubeClient;
  account: AwsAccount;
  log?: Logger;
  /** The cluster's infrastructure name, the prefix of minted users' names. */
  infraName?: string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const decode = (s: Secret | undefined, key: string) => {
  const v = s?.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};
const keyOf = (ns: string | undefined, name: string | undefined) => `${ns ?? ''}/${name ?? ''}`;

/**
 * The Cloud Credential Operator on AWS, as far as a CredentialsRequest's author can see it
 * (docs/devcluster.md). It reads requests in its own namespace and, by the cluster's CloudCredential
 * `spec.credentialsMode`:
 *
 * - `""` (default) and `Mint`: with the root credentials (kube-system/aws-creds), creates an IAM user per
 *   request with the request's statements as its policy, and writes the requested Secret
 *   (`aws_access_key_id`, `aws_secret_access_key` and the `credentials` file) in `spec.secretRef`'s
 *   namespace, annotated with the request. The user's key is rotated (the old one deleted) when the root
 *   credentials change or the Secret is lost; the user and the Secret are deleted with the request
 *   (finalizer `cloudcredential.openshift.io/deprovision`).
 * - `Passthrough`: writes the root credentials themselves.
 * - `Manual`: does nothing (the administrator and ccoctl provide the Secrets).
 *
 * What it cannot do it says in the request's status conditions, with the real types
 * (`CredentialsProvisionFailure`, `InsufficientCloudCreds`, `MissingTargetNamespace`), `provisioned: false`.
 */
export class CloudCredentialOperator {
  readonly requests: Informer<CredentialsRequest>;
  readonly secrets: Informer<Secret>;
  readonly config: Informer<CloudCredential>;
  readonly stats = { mints: 0, rotations: 0, deprovisions: 0 };
  private readonly client: KubeClient;
  private readonly account: AwsAccount;
  private readonly infraName: string;
  private readonly controller: Controller;

  constructor(opts: CloudCredentialOperatorOptions) {
    this.client = opts.client;
    this.account = opts.account;
    this.infraName = opts.infraName ?? 'dev-cluster';
    const log = opts.log ?? silentLogger();
    this.requests = new Informer(this.client, CredentialsRequests, { namespace: CCO_NAMESPACE, log });
    this.secrets = new Informer(this.client, Secrets, { log });
    this.config = new Informer(this.client, CloudCredentials, { log });
    const all = () => this.requests.list().map((r) => keyOf(r.metadata.namespace, r.metadata.name));
    this.controller = new Controller(
      {
        name: 'cloud-credential-operator',
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [
          { informer: this.requests, keys: (r) => [keyOf(r.metadata.namespace, r.metadata.name)] },
          { informer: this.config, keys: all },
          {
            informer: this.secrets,
            keys: (s: Secret) => {
              if (s.metadata.namespace === AWS_ROOT_SECRET.namespace && s.metadata.name === AWS_ROOT_SECRET.name) return all();
              const owner = s.metadata.annotations?.[CREDENTIALS_REQUEST_ANNOTATION];
              return owner ? [owner] : [];
            },
          },
        ],
        reconcile: async (key, ctx) => {
          await this.reconcile(key, ctx.signal);
          return undefined;
        },
      },
      log,
    );
  }

  async start(signal: AbortSignal): Promise<void> {
    const informers = [this.requests, this.secrets, this.config] as {
      run(s: AbortSignal): Promise<void>;
      waitForSync(s: AbortSignal): Promise<boolean>;
    }[];
    for (const inf of informers) void inf.run(signal);
    for (const inf of informers) await inf.waitForSync(signal);
    void this.controller.run(signal);
  }

  /**
   * What the installer leaves and the CCO then runs on: the CloudCredential `cluster` in `mode`, on AWS the
   * root credentials (not in Manual mode, as on an STS cluster); then the CCO starts.
   */
  async install(mode: CredentialsMode, aws: boolean, signal: AbortSignal): Promise<void> {
    try {
      await this.client.create(CloudCredentials, {
        apiVersion: 'operator.openshift.io/v1',
        kind: 'CloudCredential',
        metadata: { name: CLOUD_CREDENTIAL_NAME },
        spec: { credentialsMode: mode, managementState: 'Managed' },
      });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    if (aws && mode !== 'Manual') await this.seedRootCredentials();
    await this.start(signal);
  }

  /** The cluster's root credentials, as the installer leaves them: the account's administrator's key in kube-system/aws-creds. */
  async seedRootCredentials(): Promise<void> {
    const key = this.account.createUser(ROOT_USER);
    await this.writeRootSecret(key, true);
  }

  /**
   * What an administrator's rotation of the root credentials does: a new key for the root user (the old
   * one deleted), written to kube-system/aws-creds. Answers the new key id.
   */
  async rotateRootCredentials(): Promise<string> {
    const key = this.account.rotateKey(ROOT_USER);
    await this.writeRootSecret(key, false);
    return key.accessKeyId;
  }

  private async writeRootSecret(key: { accessKeyId: string; secretAccessKey: string }, create: boolean): Promise<void> {
    const data = { aws_access_key_id: b64(key.accessKeyId), aws_secret_access_key: b64(key.secretAccessKey) };
    if (create) {
      try {
        await this.client.create(Secrets, { metadata: { ...AWS_ROOT_SECRET }, type: 'Opaque', data } as Secret);
        return;
      } catch (e) {
        if (!isAlreadyExists(e)) throw e;
      }
    }
    await this.client.patch(Secrets, AWS_ROOT_SECRET.name, { data }, { namespace: AWS_ROOT_SECRET.namespace });
  }

  private async reconcile(key: string, signal: AbortSignal): Promise<void> {
    const cr = this.requests.get(key);
    if (!cr) return;
    const mode = this.config.get(CLOUD_CREDENTIAL_NAME)?.spec?.credentialsMode ?? '';
    if (cr.metadata.deletionTimestamp) return this.deprovision(cr, signal);
    if (mode === 'Manual') return; // the real one leaves requests alone in Manual mode
    if (cr.spec?.providerSpec?.kind !== 'AWSProviderSpec') return;
    if (!(cr.metadata.finalizers ?? []).includes(CCO_DEPROVISION_FINALIZER)) {
      await this.client.patch(
        CredentialsRequests,
        objectName(cr),
        {
          metadata: {
            finalizers: [...(cr.metadata.finalizers ?? []), CCO_DEPROVISION_FINALIZER],
            resourceVersion: cr.metadata.resourceVersion,
          },
        },
        { namespace: CCO_NAMESPACE, signal },
      );
      return; // the watch brings it back
    }

    const root = this.secrets.get(keyOf(AWS_ROOT_SECRET.namespace, AWS_ROOT_SECRET.name));
    if (!root) {
      return this.fail(
        cr,
        CR_CONDITIONS.provisionFailure,
        'CredentialsProvisionFailure',
        `failed to grab root cloud credentials: secrets "${AWS_ROOT_SECRET.name}" not found in namespace ${AWS_ROOT_SECRET.namespace}`,
        signal,
      );
    }
    const rootUser = this.account.userOfKey(decode(root, 'aws_access_key_id') ?? '', decode(root, 'aws_secret_access_key') ?? '');
    const canMint =
      !!rootUser && policyAllows(rootUser.policy ?? [{ effect: 'Allow', action: ['*'], resource: '*' }], 'iam:CreateUser', '*');
    if (!canMint) {
      return this.fail(
        cr,
        CR_CONDITIONS.insufficientCloudCreds,
        'CloudCredsInsufficient',
        'cloud credentials insufficient to satisfy credentials request',
        signal,
      );
    }
    const target = cr.spec.secretRef;
    if (!(await this.client.find(Namespaces, target.namespace, undefined, signal))) {
      return this.fail(
        cr,
        CR_CONDITIONS.missingTargetNamespace,
        'NamespaceMissing',
        `target namespace ${target.namespace} not found`,
        signal,
      );
    }

    const existing = this.secrets.get(keyOf(target.namespace, target.name));
    const rootVersion = root.metadata.resourceVersion ?? '';
    let keys: { accessKeyId: string; secretAccessKey: string };
    let user = cr.status?.providerStatus?.user;
    if (mode === 'Passthrough') {
      keys = { accessKeyId: decode(root, 'aws_access_key_id') ?? '', secretAccessKey: decode(root, 'aws_secret_access_key') ?? '' };
      user = ROOT_USER;
    } else if (!user || !this.account.hasUser(user)) {
      user = `${this.infraName}-${objectName(cr).slice(0, 32)}-${randomBytes(3).toString('hex').slice(0, 5)}`;
      keys = this.account.createUser(user, cr.spec.providerSpec.statementEntries);
      this.stats.mints++;
    } else {
      this.account.putUserPolicy(user, cr.spec.providerSpec.statementEntries);
      const current =
        existing && this.account.userOfKey(decode(existing, 'aws_access_key_id') ?? '', decode(existing, 'aws_secret_access_key') ?? '');
      const rootChanged = cr.status?.lastSyncCloudCredsSecretResourceVersion !== rootVersion;
      if (current?.name === user && !rootChanged) {
        return this.succeed(cr, user, rootVersion, signal);
      }
      keys = this.account.rotateKey(user);
      this.stats.rotations++;
    }
    await this.writeTarget(cr, existing, keys, signal);
    await this.succeed(cr, user, rootVersion, signal);
  }

  private async writeTarget(
    cr: CredentialsRequest,
    existing: Secret | undefined,
    keys: { accessKeyId: string; secretAccessKey: string },
    signal: AbortSignal,
  ): Promise<void> {
    const { name, namespace } = cr.spec.secretRef;
    const data = {
      aws_access_key_id: b64(keys.accessKeyId),
      aws_secret_access_key: b64(keys.secretAccessKey),
      credentials: b64(awsCredentialsFile(keys.accessKeyId, keys.secretAccessKey)),
    };
    const annotations = { [CREDENTIALS_REQUEST_ANNOTATION]: keyOf(cr.metadata.namespace, cr.metadata.name) };
    if (existing && !existing.metadata.deletionTimestamp) {
      await this.client.patch(Secrets, name, { metadata: { annotations }, data }, { namespace, signal });
      return;
    }
    try {
      await this.client.create(Secrets, { metadata: { name, namespace, annotations }, type: 'Opaque', data } as Secret, { signal });
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      await this.client.patch(Secrets, name, { metadata: { annotations }, data }, { namespace, signal });
    }
  }

  private async deprovision(cr: CredentialsRequest, signal: AbortSignal): Promise<void> {
    if (!(cr.metadata.finalizers ?? []).includes(CCO_DEPROVISION_FINALIZER)) return;
    const user = cr.status?.providerStatus?.user;
    if (user && user !== ROOT_USER) this.account.deleteUser(user);
    const { name, namespace } = cr.spec.secretRef;
    const target = this.secrets.get(keyOf(namespace, name));
    if (target?.metadata.annotations?.[CREDENTIALS_REQUEST_ANNOTATION] === keyOf(cr.metadata.namespace, cr.metadata.name)) {
      try {
        await this.client.delete(Secrets, name, { namespace, signal });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    this.stats.deprovisions++;
    try {
      await this.client.patch(
        CredentialsRequests,
        objectName(cr),
        {
          metadata: {
            finalizers: (cr.metadata.finalizers ?? []).filter((f) => f !== CCO_DEPROVISION_FINALIZER),
            resourceVersion: cr.metadata.resourceVersion,
          },
        },
        { namespace: CCO_NAMESPACE, signal },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  private async fail(cr: CredentialsRequest, type: string, reason: string, message: string, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date());
    const before = cr.status?.conditions ?? [];
    const conditions = setCondition(before, { type, status: 'True', reason, message }, now);
    if (conditions === before && cr.status) return;
    await this.writeStatus(
      cr,
      { ...cr.status, provisioned: cr.status?.provisioned ?? false, lastSyncGeneration: cr.status?.lastSyncGeneration ?? 0, conditions },
      signal,
    );
  }

  private async succeed(cr: CredentialsRequest, user: string, rootVersion: string, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date());
    // The failure conditions turn False, as the real operator leaves them once provisioning works.
    const before = cr.status?.conditions ?? [];
    let conditions = before;
    for (const c of conditions.filter((x) => x.status === 'True' && x.type !== CR_CONDITIONS.ignored))
      conditions = setCondition(
        conditions,
        { type: c.type, status: 'False', reason: 'CredentialsProvisionSuccess', message: 'successfully granted credentials request' },
        now,
      );
    const unchanged =
      cr.status?.provisioned === true &&
      cr.status.lastSyncGeneration === (cr.metadata.generation ?? 0) &&
      cr.status.lastSyncCloudCredsSecretResourceVersion === rootVersion &&
      cr.status.providerStatus?.user === user &&
      conditions === before;
    if (unchanged) return;
    await this.writeStatus(
      cr,
      {
        provisioned: true,
        lastSyncTimestamp: now,
        lastSyncGeneration: cr.metadata.generation ?? 0,
        lastSyncCloudCredsSecretResourceVersion: rootVersion,
        providerStatus: { apiVersion: 'cloudcredential.openshift.io/v1', kind: 'AWSProviderStatus', user, policy: `${user}-policy` },
        ...(conditions.length ? { conditions } : {}),
      },
      signal,
    );
  }

  private async writeStatus(cr: CredentialsRequest, status: CredentialsRequest['status'], signal: AbortSignal): Promise<void> {
    try {
      await this.client.updateStatus(CredentialsRequests, { ...cr, status } as CredentialsRequest, { signal });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

/** Sets one condition, keeping its transition time when its status does not change. */
function setCondition(
  conditions: readonly CredentialsRequestCondition[] | undefined,
  c: Omit<CredentialsRequestCondition, 'lastProbeTime' | 'lastTransitionTime'>,
  now: string,
): CredentialsRequestCondition[] {
  const i = (conditions ?? []).findIndex((x) => x.type === c.type);
  const old = conditions?.[i];
  if (conditions && old && old.status === c.status && old.reason === c.reason && old.message === c.message)
    return conditions as CredentialsRequestCondition[];
  const list = [...(conditions ?? [])];
  const next: CredentialsRequestCondition = {
    ...c,
    lastProbeTime: now,
    lastTransitionTime: old && old.status === c.status ? (old.lastTransitionTime ?? now) : now,
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}
