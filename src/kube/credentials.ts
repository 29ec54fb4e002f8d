import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** TLS material for the connection to the API server. */
export interface TlsOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
}

/**
 * Where the API server is and how to prove who we are. A client asks for the headers on every request, so a
 * credential that rotates (a projected service account token, an exec plugin) is always the current one.
 */
export interface Credentials {
  readonly server: string;
  tls(): Promise<TlsOptions>;
  headers(url: string, method: string): Promise<Record<string, string>>;
}

/** Where the kubelet mounts a pod's service account token and the cluster's CA. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * How often the token file is read again. The kubelet rotates a projected token when 80% of its life has
 * passed (at least an hour for the default audience); client-go re-reads the file once a minute too.
 */
export const TOKEN_REREAD_MS = 60_000;

export interface InClusterOptions {
  env?: NodeJS.ProcessEnv;
  dir?: string;
  now?: () => number;
}

/** Whether this process runs in a pod with a service account: the service host is set and a token mounted. */
export function isInCluster(opts: InClusterOptions = {}): boolean {
  const env = opts.env ?? process.env;
  return !!env.KUBERNETES_SERVICE_HOST && !!env.KUBERNETES_SERVICE_PORT && existsSync(`${opts.dir ?? SERVICE_ACCOUNT_DIR}/token`);
}

/**
 * The pod's own identity, without a general-purpose client library: the API server at
 * KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, verified with the mounted CA, and the mounted token,
 * re-read as it rotates.
 */
export function inClusterCredentials(opts: InClusterOptions = {}): Credentials {
  const env = opts.env ?? process.env;
  const dir = opts.dir ?? SERVICE_ACCOUNT_DIR;
  const now = opts.now ?? Date.now;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new Error('not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set');
  let token: { value: string; readAt: number } | undefined;
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    tls: async () => ({ ca: await readFile(`${dir}/ca.crt`) }),
    headers: async () => {
      if (!token || now() - token.readAt >= TOKEN_REREAD_MS) {
        token = { value: (await readFile(`${dir}/token`, 'utf8')).trim(), readAt: now() };
      }
      return { authorization: `Bearer ${token.value}` };
    },
  };
}
