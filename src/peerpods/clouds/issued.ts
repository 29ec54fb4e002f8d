/**
 * Pieces every cloud's credentials wiring shares (./<cloud>/credentials.ts): a variable read from one key
 * of a Secret, and the projected ServiceAccount token a workload identity trades for the cloud's own.
 */
import { STS_TOKEN_AUDIENCE, STS_TOKEN_PATH } from '../../api/cloudcredential.ts';
import type { CredentialsWiring } from './provider.ts';

/** The volume carrying the pods' projected ServiceAccount token. */
export const STS_TOKEN_VOLUME = 'bound-sa-token';

/** `name` from the key `key` of Secret `secret`, read by the kubelet when the container starts. */
export const fromSecret = (name: string, secret: string, key: string): Record<string, unknown> => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key } },
});

/**
 * A ServiceAccount token for OpenShift's audience (what ccoctl's identities trust), refreshed by the kubelet,
 * at `path` (the path the cloud's Secret names; the CCO's default otherwise).
 */
export function projectedToken(path: string = STS_TOKEN_PATH): Pick<CredentialsWiring, 'volumes' | 'volumeMounts'> {
  const dir = path.slice(0, path.lastIndexOf('/')) || '/';
  const file = path.slice(path.lastIndexOf('/') + 1);
  return {
    volumes: [
      {
        name: STS_TOKEN_VOLUME,
        projected: { sources: [{ serviceAccountToken: { audience: STS_TOKEN_AUDIENCE, expirationSeconds: 3600, path: file } }] },
      },
    ],
    volumeMounts: [{ name: STS_TOKEN_VOLUME, mountPath: dir, readOnly: true }],
  };
}

/** Whether a token path can be mounted as given: absolute, one file, no `..`. */
export const mountablePath = (p: string): boolean => /^\/[^\0]*[^/]$/.test(p) && !p.split('/').includes('..');
