import type { Logger } from 'pino';
import {
  CCO_DEPROVISION_FINALIZER,
  CCO_NAMESPACE,
  CLOUD_CREDENTIAL_NAME,
  type CloudCredential,
  CloudCredentials,
  CR_CONDITIONS,
  CREDENTIALS_REQUEST_ANNOTATION,
  type CredentialsMode,
  type CredentialsRequestCondition,
  CredentialsRequests,
} from '../../api/cloudcredential.ts';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import { Namespaces, type Secret, Secrets } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import { Controller } from '../../runtime/controller.ts';
import { Informer } from '../../runtime/informer.ts';
import { silentLogger } from '../../runtime/log.ts';
import type { AwsAccount } from '../clouds/aws-account.ts';
import type { AnyCredentialsRequest, CcoActuator, ProviderStatus } from './actuator.ts';
import { nsKey, ProvisionError } from './actuator.ts';
import { AwsActuator, ROOT_USER } from './aws.ts';

export { ROOT_USER };

export interface CloudCredentialOperatorOptions {
  client: KubeClient;
  account: AwsAccount;
  log?: Logger;
  /** The cluster's infrastructure name, the prefix of minted users' names. */
  infraName?: string;
  /**
   * The cloud side of the cluster's platform (Azure's or Google Cloud's, ./azure.ts, ./gcp.ts);
   * AWS's, over `account`, when none is given.
   */
  actuator?: (shared: { client: KubeClient; secrets: Informer<Secret>; infraName: string; stats: CcoStats }) => CcoActuator;
}

export interface CcoStats {
  mints: number;
  rotations: number;
  deprovisions: number;
}

/** The secret annotator's key (not a request's: those are namespace/name). */
const ROOT_KEY = 'root-credentials';

/**
 * The Cloud Credential Operator on AWS, as far as a CredentialsRequest's author can see it
 * (docs/devcluster.md), doing what the real one does:
 *
 * - its secret annotator marks the root credentials (kube-system/aws-creds) with what they can do,
 *   `cloudcredential.openshift.io/mode`: in the default mode `mint` when they may manage IAM users, else
 *   `passthrough` when they may do what the cluster's requests ask, else `insufficient`; in Mint or
 *   Passthrough mode the forced mode, unchecked; nothing in Manual mode;
 * - it reads requests in its own namespace; a target namespace that does not exist is
 *   `MissingTargetNamespace`, and nothing else is done until it exists;
 * - `mint`: an IAM user per request (infrastructure name, request name, random suffix) with the request's
 *   statements as its policy, and the requested Secret (`aws_access_key_id`, `aws_secret_access_key`, the
 *   `credentials` file). A new key (every older one deleted) is made only when the Secret is missing or its
 *   key no longer exists: a change of the root credentials rotates nothing minted;
 * - `passthrough`: the root credentials themselves, copied again whenever they change (in the default
 *   mode only if they may do what the request asks);
 * - `insufficient`: `InsufficientCloudCreds`; root credentials missing or not yet annotated:
 *   `CredentialsProvisionFailure` (unless nothing needs updating, as when an administrator removed them
 *   after minting);
 * - a deleted request's user and Secret are deleted first (finalizer `cloudcredential.openshift.io/deprovision`);
 * - Manual mode: it does nothing.
 */
export class CloudCredentialOperator {
  readonly requests: Informer<AnyCredentialsRequest>;
  readonly secrets: Informer<Secret>;
  readonly config: Informer<CloudCredential>;
  private readonly namespaces: Informer<KubeObject>;
  readonly stats: CcoStats = { mints: 0, rotations: 0, deprovisions: 0 };
  private readonly client: KubeClient;
  private readonly infraName: string;
  private readonly controller: Controller;
  /** The cloud side: the platform's actuator. */
  readonly actuator: CcoActuator;

  constructor(opts: CloudCredentialOperatorOptions) {
    this.client = opts.client;
    this.infraName = opts.infraName ?? 'dev-cluster';
    const log = opts.log ?? silentLogger();
    this.requests = new Informer(this.client, CredentialsRequests, { namespace: CCO_NAMESPACE, log });
    this.secrets = new Informer(this.client, Secrets, { log });
    const shared = { client: this.client, secrets: this.secrets, infraName: this.infraName, stats: this.stats };
    this.actuator = opts.actuator ? opts.actuator(shared) : new AwsActuator({ ...shared, account: opts.account });
    const root = this.actuator.rootSecret;
    this.config = new Informer(this.client, CloudCredentials, { log });
    const all = () => [ROOT_KEY, ...this.requests.list().map((r) => nsKey(r.metadata.namespace, r.metadata.name))];
    this.namespaces = new Informer(this.client, Namespaces, { log });
    this.controller = new Controller(
      {
        name: 'cloud-credential-operator',
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [
          { informer: this.requests, keys: (r) => [ROOT_KEY, nsKey(r.metadata.namespace, r.metadata.name)] },
          {
            // A target namespace created: its requests are synced at once.
            informer: this.namespaces,
            keys: (ns: KubeObject) =>
              this.requests
                .list()
                .filter((r) => r.spec?.secretRef?.namespace === ns.metadata.name)
                .map((r) => nsKey(r.metadata.namespace, r.metadata.name)),
          },
          { informer: this.config, keys: all },
          {
            informer: this.secrets,
            keys: (s: Secret) => {
              if (s.metadata.namespace === root.namespace && s.metadata.name === root.name) return all();
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
    const informers = [this.requests, this.secrets, this.config, this.namespaces] as {
      run(s: AbortSignal): Promise<void>;
      waitForSync(s: AbortSignal): Promise<boolean>;
    }[];
    for (const inf of informers) void inf.run(signal);
    for (const inf of informers) await inf.waitForSync(signal);
    void this.controller.run(signal);
  }

  /**
   * What the installer leaves and the CCO then runs on: the CloudCredential `cluster` in `mode`, on a cloud
   * the root credentials (not in Manual mode, as on a cluster with short-lived credentials); then the CCO starts.
   */
  async install(mode: CredentialsMode, withRootCredentials: boolean, signal: AbortSignal): Promise<void> {
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
    if (withRootCredentials && mode !== 'Manual') await this.seedRootCredentials();
    await this.start(signal);
  }

  /** The cluster's root credentials, as the installer leaves them (kube-system/aws-creds, azure-credentials, gcp-credentials). */
  async seedRootCredentials(): Promise<void> {
    await this.actuator.seedRoot();
  }

  /** What an administrator's rotation of the root credentials does; answers the new key's id. */
  async rotateRootCredentials(): Promise<string> {
    return this.actuator.rotateRoot();
  }

  private async reconcile(key: string, signal: AbortSignal): Promise<void> {
    if (key === ROOT_KEY) return this.actuator.annotateRoot(this.mode(), this.requests.list(), signal);
    const cr = this.requests.get(key);
    if (!cr) return;
    const mode = this.mode();
    if (cr.metadata.deletionTimestamp) return this.deprovision(cr, signal);
    if (mode === 'Manual') return; // the real one leaves requests alone in Manual mode
    if (cr.spec?.providerSpec?.kind !== this.actuator.kind) return;
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

    // No target namespace: nothing more until it exists.
    const target = cr.spec.secretRef;
    const nsFound = !!(await this.client.find(Namespaces, target.namespace, undefined, signal));
    let conditions = setCondition(
      cr.status?.conditions,
      nsFound
        ? {
            type: CR_CONDITIONS.missingTargetNamespace,
            status: 'False',
            reason: 'NamespaceExists',
            message: `target namespace ${target.namespace} found`,
          }
        : {
            type: CR_CONDITIONS.missingTargetNamespace,
            status: 'True',
            reason: 'NamespaceMissing',
            message: `target namespace ${target.namespace} not found`,
          },
    );
    if (!nsFound) return this.writeConditions(cr, conditions, cr.status?.provisioned ?? false, signal);

    const rootAt = this.actuator.rootSecret;
    const root = this.secrets.get(nsKey(rootAt.namespace, rootAt.name));
    let providerStatus = cr.status?.providerStatus;
    let failure: ProvisionError | undefined;
    try {
      if (this.actuator.needsUpdate(cr, root, mode)) providerStatus = await this.actuator.sync(cr, root, mode, signal);
    } catch (e) {
      if (!(e instanceof ProvisionError)) throw e;
      failure = e;
    }
    // As the real controller: the actuator's own conditions follow its last answer.
    const provisionFailed = failure?.type === CR_CONDITIONS.provisionFailure;
    const insufficient = failure?.type === CR_CONDITIONS.insufficientCloudCreds;
    conditions = setCondition(
      conditions,
      provisionFailed
        ? {
            type: CR_CONDITIONS.provisionFailure,
            status: 'True',
            reason: 'CredentialsProvisionFailure',
            message: `failed to grant creds: ${failure?.message}`,
          }
        : {
            type: CR_CONDITIONS.provisionFailure,
            status: 'False',
            reason: 'CredentialsProvisionSuccess',
            message: 'successfully granted credentials request',
          },
    );
    conditions = setCondition(
      conditions,
      insufficient
        ? {
            type: CR_CONDITIONS.insufficientCloudCreds,
            status: 'True',
            reason: 'CloudCredsInsufficient',
            message: 'cloud creds are insufficient to satisfy CredentialsRequest',
          }
        : {
            type: CR_CONDITIONS.insufficientCloudCreds,
            status: 'False',
            reason: 'CloudCredsSufficient',
            message: 'cloud credentials sufficient for minting or passthrough',
          },
    );
    if (failure) return this.writeConditions(cr, conditions, false, signal);
    await this.succeed(
      cr,
      providerStatus,
      root?.metadata.resourceVersion ?? cr.status?.lastSyncCloudCredsSecretResourceVersion ?? '',
      conditions,
      signal,
    );
  }

  private mode(): CredentialsMode {
    return this.config.get(CLOUD_CREDENTIAL_NAME)?.spec?.credentialsMode ?? '';
  }

  private async deprovision(cr: AnyCredentialsRequest, signal: AbortSignal): Promise<void> {
    if (!(cr.metadata.finalizers ?? []).includes(CCO_DEPROVISION_FINALIZER)) return;
    // What was minted goes with the request; passed-through credentials are the root's and stay.
    this.actuator.deprovision(cr);
    const { name, namespace } = cr.spec.secretRef;
    const target = this.secrets.get(nsKey(namespace, name));
    if (target) {
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

  private async writeConditions(
    cr: AnyCredentialsRequest,
    conditions: CredentialsRequestCondition[],
    provisioned: boolean,
    signal: AbortSignal,
  ): Promise<void> {
    if (cr.status && conditions === (cr.status.conditions ?? []) && cr.status.provisioned === provisioned) return;
    await this.writeStatus(
      cr,
      { ...cr.status, provisioned, lastSyncGeneration: cr.status?.lastSyncGeneration ?? 0, ...(conditions.length ? { conditions } : {}) },
      signal,
    );
  }

  private async succeed(
    cr: AnyCredentialsRequest,
    providerStatus: ProviderStatus | undefined,
    rootVersion: string,
    conditions: CredentialsRequestCondition[],
    signal: AbortSignal,
  ): Promise<void> {
    const unchanged =
      cr.status?.provisioned === true &&
      cr.status.lastSyncGeneration === (cr.metadata.generation ?? 0) &&
      cr.status.lastSyncCloudCredsSecretResourceVersion === rootVersion &&
      JSON.stringify(cr.status.providerStatus ?? null) === JSON.stringify(providerStatus ?? null) &&
      conditions === (cr.status.conditions ?? []);
    if (unchanged) return;
    await this.writeStatus(
      cr,
      {
        provisioned: true,
        lastSyncTimestamp: rfc3339(new Date()),
        lastSyncGeneration: cr.metadata.generation ?? 0,
        lastSyncCloudCredsSecretResourceVersion: rootVersion,
        ...(providerStatus ? { providerStatus } : {}),
        ...(conditions.length ? { conditions } : {}),
      },
      signal,
    );
  }

  private async writeStatus(cr: AnyCredentialsRequest, status: AnyCredentialsRequest['status'], signal: AbortSignal): Promise<void> {
    try {
      await this.client.updateStatus(CredentialsRequests, { ...cr, status } as AnyCredentialsRequest, { signal });
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

/**
 * Sets one condition as the real CCO does: a True condition is added, a False one only updates a condition
 * already there (the time of transition kept while the status stays); unchanged answers the same array.
 */
function setCondition(
  conditions: readonly CredentialsRequestCondition[] | undefined,
  c: Omit<CredentialsRequestCondition, 'lastProbeTime' | 'lastTransitionTime'>,
): CredentialsRequestCondition[] {
  const list = (conditions ?? []) as CredentialsRequestCondition[];
  const i = list.findIndex((x) => x.type === c.type);
  const old = list[i];
  if (!old && c.status !== 'True') return list;
  if (old && old.status === c.status && old.reason === c.reason && old.message === c.message) return list;
  const now = rfc3339(new Date());
  const next: CredentialsRequestCondition = {
    ...c,
    lastProbeTime: now,
    lastTransitionTime: old && old.status === c.status ? (old.lastTransitionTime ?? now) : now,
  };
  const copy = [...list];
  if (i >= 0) copy[i] = next;
  else copy.push(next);
  return copy;
}
