import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { inClusterCredentials, isInCluster, TOKEN_REREAD_MS } from '../../src/kube/credentials.ts';

const root = join(import.meta.dirname, '..', '..');

describe('in-cluster credentials', () => {
  test('the service host and the mounted CA; the token re-read once it may have rotated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'osc-sa-'));
    try {
      writeFileSync(join(dir, 'token'), 'first\n');
      writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
      const env = { KUBERNETES_SERVICE_HOST: '172.30.0.1', KUBERNETES_SERVICE_PORT: '443' };
      assert.equal(isInCluster({ env, dir }), true);
      assert.equal(isInCluster({ env: {}, dir }), false, 'not without the service host');
      assert.equal(isInCluster({ env, dir: join(dir, 'none') }), false, 'not without a token');
      let now = 0;
      const c = inClusterCredentials({ env, dir, now: () => now });
      assert.equal(c.server, 'https://172.30.0.1:443');
      assert.equal(String((await c.tls()).ca), 'CA PEM');
      assert.deepEqual(await c.headers('https://x/api', 'GET'), { authorization: 'Bearer first' });
      writeFileSync(join(dir, 'token'), 'rotated\n');
      now = TOKEN_REREAD_MS - 1;
      assert.deepEqual(await c.headers('https://x/api', 'GET'), { authorization: 'Bearer first' }, 'read at most once a minute');
      now = TOKEN_REREAD_MS;
      assert.deepEqual(await c.headers('https://x/api', 'GET'), { authorization: 'Bearer rotated' });
      assert.equal(
        inClusterCredentials({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '6443' }, dir }).server,
        'https://[fd00::1]:6443',
      );
      assert.throws(() => inClusterCredentials({ env: {}, dir }), /KUBERNETES_SERVICE_HOST/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('an operator in a pod loads neither the official client library, nor the X.509 library, nor undici, nor needs WebAssembly', () => {
    // A child process records every module it resolves while it builds the operator as `osc run` does in a
    // pod (in-cluster credentials, a webhook certificate already in its Secret is only read at run time; the
    // platform named and whether the cluster has a Cloud Credential Operator and a TLS profile said, as
    // discovery would need a server).
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); loaded.push(r.url); return r; } });
      const { inClusterCredentials } = await import(${JSON.stringify(join(root, 'src/kube/credentials.ts'))});
      const { createOperator } = await import(${JSON.stringify(join(root, 'src/operator.ts'))});
      await import(${JSON.stringify(join(root, 'src/cli/commands/run.ts'))});
      await import(${JSON.stringify(join(root, 'src/cli/program.ts'))});
      const { silentLogger } = await import(${JSON.stringify(join(root, 'src/runtime/log.ts'))});
      const env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: '1' };
      await createOperator({ kubeConfig: inClusterCredentials({ env, dir: '/nonexistent' }), log: silentLogger(),
        leaderElection: false, metricsAddress: '', healthAddress: '', webhook: false, platform: 'openshift',
        peerPods: { cloudCredentials: false, clusterTLSProfile: false } });
      console.log(JSON.stringify(loaded));
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: root });
    assert.equal(r.status, 0, r.stderr);
    const loaded: string[] = JSON.parse(r.stdout.trim().split('\n').pop() ?? '[]');
    assert.ok(
      loaded.some((u) => u.endsWith('/src/operator.ts')),
      'the probe saw the operator load',
    );
    const heavy = loaded.filter((u) => /@kubernetes\/client-node|@peculiar\/x509|reflect-metadata|\/undici\//.test(u));
    assert.deepEqual(heavy, []);
    // The image runs V8 in lite mode (the Dockerfile's ENTRYPOINT), which has no WebAssembly, and Node's
    // global fetch needs it (undici's HTTP parser): no module of the operator may call on either.
    const files = [...new Set(loaded.filter((u) => u.startsWith('file:')))];
    const needsWasm = files.filter((u) => /\bWebAssembly\b|(?<![.\w$])fetch\(/.test(readFileSync(fileURLToPath(u), 'utf8')));
    assert.deepEqual(needsWasm, []);
  });
});
