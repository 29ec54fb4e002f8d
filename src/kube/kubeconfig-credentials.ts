import { type HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import type { Credentials, TlsOptions } from './credentials.ts';

/**
 * Credentials from a kubeconfig, through the official client (client certificates, tokens, exec and auth
 * provider plugins). Only the CLI and the dev cluster load this module: the official client loads its whole
 * generated API with it, which an operator in a pod does not need.
 */
export function kubeConfigCredentials(kc: KubeConfig): Credentials {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster: set a current-context');
  return {
    server: cluster.server,
    tls: async () => {
      const tls: TlsOptions = {};
      await kc.applyToHTTPSOptions(tls as never);
      return { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized };
    },
    headers: async (url, method) => {
      const ctx = new RequestContext(url, method as HttpMethod);
      await kc.applySecurityAuthentication(ctx);
      return ctx.getHeaders();
    },
  };
}
