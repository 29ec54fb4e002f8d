/**
 * The kubelet's part for an operator the dev cluster runs in its own process (`osc start`): the projected
 * token its Deployment would mount, a token of its ServiceAccount for OpenShift's audience from the API
 * server's TokenRequest, written to a file and written again at 80% of its life, as the kubelet renews it.
 * The leaked pod VM collector trades it for a workload identity's credentials (docs/cloud-credentials.md).
 */
import { writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { STS_TOKEN_AUDIENCE } from '../api/cloudcredential.ts';
import { OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT } from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage } from '../kube/errors.ts';
import { ServiceAccounts } from '../kube/resources.ts';

const LIFETIME_S = 3600;

/** Keeps `file` holding a fresh token until `signal` aborts; the ServiceAccount is made when missing. Never throws. */
export async function projectOperatorToken(client: KubeClient, file: string, log: Logger, signal: AbortSignal): Promise<void> {
  const ns = OPERATOR_NAMESPACE;
  const renew = async (): Promise<boolean> => {
    try {
      // Made when missing (its namespace may come later: tried again at each renewal).
      if (!(await client.find(ServiceAccounts, OPERATOR_SERVICE_ACCOUNT, ns, signal)))
        await client.create(ServiceAccounts, {
          apiVersion: 'v1',
          kind: 'ServiceAccount',
          metadata: { name: OPERATOR_SERVICE_ACCOUNT, namespace: ns },
        });
      const r = await client.request<{ status?: { token?: string } }>(
        'POST',
        `/api/v1/namespaces/${ns}/serviceaccounts/${OPERATOR_SERVICE_ACCOUNT}/token`,
        {
          body: {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { audiences: [STS_TOKEN_AUDIENCE], expirationSeconds: LIFETIME_S },
          },
          signal,
        },
      );
      if (!r.status?.token) return false;
      await writeFile(file, r.status.token, { mode: 0o600 });
      return true;
    } catch (e) {
      if (!signal.aborted) log.warn({ err: errorMessage(e) }, "the operator's ServiceAccount token was not renewed");
      return false;
    }
  };
  let timer: NodeJS.Timeout | undefined;
  // At 80% of its life, as the kubelet; after a failure, again soon.
  const schedule = (ok: boolean) => {
    if (signal.aborted) return;
    timer = setTimeout(async () => schedule(await renew()), ok ? LIFETIME_S * 800 : 30_000);
    timer.unref();
  };
  schedule(await renew());
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}
