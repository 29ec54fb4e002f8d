import {
  type AnyProviderSpec,
  type CredentialsMode,
  type CredentialsRequest,
  ROOT_CREDENTIALS_MODE_ANNOTATION,
} from '../../api/cloudcredential.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists } from '../../kube/errors.ts';
import { type Secret, Secrets } from '../../kube/resources.ts';

/** The namespace/name key the caches file a namespaced object under, from a reference's parts. */
export const nsKey = (ns: string | undefined, name: string | undefined) => `${ns ?? ''}/${name ?? ''}`;
export const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
/** A Secret's value for a key, decoded (stringData too: a Secret built here before the API server saw it). */
export const decode = (s: Secret | undefined, key: string): string | undefined => {
  const v = s?.data?.[key];
  return v === undefined ? s?.stringData?.[key] : Buffer.from(v, 'base64').toString('utf8');
};

/** Any cloud's request, as the simulated operator reads them all. */
export type AnyCredentialsRequest = CredentialsRequest<AnyProviderSpec>;
export type ProviderStatus = NonNullable<NonNullable<AnyCredentialsRequest['status']>['providerStatus']>;

/**
 * The Cloud Credential Operator's cloud side (./index.ts runs the one of the cluster's platform, as the real
 * operator does): the secret annotator's verdict on the root credentials, whether a request's Secret needs
 * an update, the update itself, and what a deleted request takes with it. Each answers as the real
 * actuator of that cloud does, refusals included.
 */
export interface CcoActuator {
  /** The providerSpec kind it serves; requests of other kinds are left alone. */
  readonly kind: AnyProviderSpec['kind'];
  /** The root credentials, in kube-system. */
  readonly rootSecret: { namespace: string; name: string };
  /** The secret annotator: what the root credentials can do, on the root Secret (nothing in Manual mode). */
  annotateRoot(mode: CredentialsMode, requests: readonly AnyCredentialsRequest[], signal: AbortSignal): Promise<void>;
  /** Whether the request's Secret no longer matches what it asks. */
  needsUpdate(cr: AnyCredentialsRequest, root: Secret | undefined, mode: CredentialsMode): boolean;
  /** Creates or updates the credentials; answers the provider status to record (throws a ProvisionError). */
  sync(cr: AnyCredentialsRequest, root: Secret | undefined, mode: CredentialsMode, signal: AbortSignal): Promise<ProviderStatus>;
  /** What a deleted request's credentials take with them in the cloud (a minted user or service account). */
  deprovision(cr: AnyCredentialsRequest): void;
  /** The root credentials as the installer leaves them. */
  seedRoot(): Promise<void>;
  /** An administrator's rotation of the root credentials; answers the new key's id. */
  rotateRoot(): Promise<string>;
}

/** A provisioning failure, as the real operator's actuators report it: a condition type and its error. */
export class ProvisionError extends Error {
  readonly type: string;
  constructor(type: string, message: string) {
    super(message);
    this.type = type;
  }
}

/**
 * The secret annotator's verdict on the root credentials (mint, passthrough or insufficient), written only
 * when it changes.
 */
export async function markRoot(
  client: KubeClient,
  root: Secret,
  ref: { namespace: string; name: string },
  verdict: string,
  signal: AbortSignal,
): Promise<void> {
  if (root.metadata.annotations?.[ROOT_CREDENTIALS_MODE_ANNOTATION] === verdict) return;
  const patch = { metadata: { annotations: { [ROOT_CREDENTIALS_MODE_ANNOTATION]: verdict } } };
  await client.patch(Secrets, ref.name, patch, { namespace: ref.namespace, signal });
}

/** The root credentials Secret written: made first when `create` (as the installer leaves it), else patched. */
export async function writeRootSecret(
  client: KubeClient,
  ref: { namespace: string; name: string },
  data: Record<string, string>,
  create: boolean,
): Promise<void> {
  if (create) {
    try {
      await client.create(Secrets, { metadata: { ...ref }, type: 'Opaque', data } as Secret);
      return;
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  await client.patch(Secrets, ref.name, { data }, { namespace: ref.namespace });
}

/**
 * A request's Secret written as the actuators write it: patched where it exists (and is not being deleted),
 * else made, with the annotations that tie it to its request.
 */
export async function writeRequestSecret(
  client: KubeClient,
  ref: { namespace: string; name: string },
  existing: Secret | undefined,
  content: { annotations: Record<string, string>; data: Record<string, string> },
  signal: AbortSignal,
): Promise<void> {
  const { name, namespace } = ref;
  const { annotations, data } = content;
  if (existing && !existing.metadata.deletionTimestamp) {
    await client.patch(Secrets, name, { metadata: { annotations }, data }, { namespace, signal });
    return;
  }
  try {
    await client.create(Secrets, { metadata: { name, namespace, annotations }, type: 'Opaque', data } as Secret, { signal });
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    await client.patch(Secrets, name, { metadata: { annotations }, data }, { namespace, signal });
  }
}
