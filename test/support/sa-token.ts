/**
 * The kubelet's part in a projected ServiceAccount token, for an operator run in the test process (not in a
 * pod): a token of the ServiceAccount for an audience, from the API server's TokenRequest, written to a file
 * the operator reads as its pod would read the projected volume.
 */
import { writeFile } from 'node:fs/promises';
import type { KubeClient } from '../../src/kube/client.ts';

export async function projectToken(
  client: KubeClient,
  o: { namespace: string; serviceAccount: string; audience: string; file: string; expirationSeconds?: number },
): Promise<void> {
  const r = await client.request<{ status?: { token?: string } }>(
    'POST',
    `/api/v1/namespaces/${o.namespace}/serviceaccounts/${o.serviceAccount}/token`,
    {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { audiences: [o.audience], expirationSeconds: o.expirationSeconds ?? 3600 },
      },
    },
  );
  const token = r.status?.token;
  if (!token) throw new Error(`no token for ServiceAccount ${o.namespace}/${o.serviceAccount}`);
  await writeFile(o.file, token, { mode: 0o600 });
}
