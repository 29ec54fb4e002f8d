import type { AnyProviderSpec, CredentialsMode, CredentialsRequest } from '../api/cloudcredential.ts';
import type { Secret } from '../kube/resources.ts';

/** Any cloud's request, as the simulated operator reads them all. */
export type AnyCredentialsRequest = CredentialsRequest<AnyProviderSpec>;
export type ProviderStatus = NonNullable<NonNullable<AnyCredentialsRequest['status']>['providerStatus']>;

/**
 * The Cloud Credential Operator's cloud side (./cco.ts runs the one of the cluster's platform, as the real
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
