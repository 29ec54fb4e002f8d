/**
 * The operator's in-cluster credentials against a real kube-apiserver: the mounted CA verifies the server,
 * the mounted service account token authenticates, and a rotated token is picked up without a restart.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KubeClient } from '../../src/kube/client.ts';
import { inClusterCredentials, TOKEN_REREAD_MS } from '../../src/kube/credentials.ts';
import { useControlPlane } from '../support/controlplane.ts';

const plane = useControlPlane();

test('a pod identity from the mounted token and CA, without a kubeconfig; a rotated token is used once re-read', async () => {
  const { cp } = plane;
  const token = async (sa: string) => {
    await cp.client.request('POST', '/api/v1/namespaces/default/serviceaccounts', { body: { metadata: { name: sa } } });
    const r = await cp.client.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/default/serviceaccounts/${sa}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } },
    });
    return r.status.token;
  };
  const dir = mkdtempSync(join(tmpdir(), 'osc-sa-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), cp.caPem);
    writeFileSync(join(dir, 'token'), await token('first'));
    const url = new URL(cp.apiserverUrl);
    let now = 0;
    const creds = inClusterCredentials({
      env: { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port },
      dir,
      now: () => now,
    });
    const client = new KubeClient(creds);
    const whoami = async () =>
      (
        await client.request<{ status: { userInfo: { username: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        })
      ).status.userInfo.username;
    assert.equal(await whoami(), 'system:serviceaccount:default:first');
    writeFileSync(join(dir, 'token'), await token('second'));
    now = TOKEN_REREAD_MS;
    assert.equal(await whoami(), 'system:serviceaccount:default:second', 'the rotated token, without a new client');
    await client.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
