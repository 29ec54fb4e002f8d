/**
 * The console's server against a real kube-apiserver: the token exchange, the user's requests and watches
 * passed through (a watch stays a stream), the API server's refusals passed back as they are, and the
 * guards (Secrets, writes without the CSRF header).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { type RunningConsole, startConsole } from '../../src/console/server.ts';
import { useControlPlane } from '../support/controlplane.ts';
import { waitFor } from '../support/wait.ts';

describe('console server', () => {
  const plane = useControlPlane();
  let c: RunningConsole;
  const auth = () => ({ authorization: `Bearer ${c.token}` });
  const write = () => ({ ...auth(), 'x-osc-console': '1', 'content-type': 'application/json' });

  before(async () => {
    c = await startConsole({ kubeConfig: plane.cp.kubeConfig, version: 'test' });
    // What the guard keeps from the browser: a Secret's value, and a service account to mint tokens for.
    const admin = plane.cp.kubeConfig.makeApiClient(CoreV1Api);
    await admin.createNamespacedSecret({
      namespace: 'default',
      body: { metadata: { name: 'do-not-show' }, stringData: { password: 'hunter2-value' } },
    });
    await admin.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name: 'console-probe' } } });
  });
  after(() => c?.close());

  test('the printed URL trades its token for a strict session cookie; the page comes with a CSP', async () => {
    assert.match(c.url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{32}$/);
    const open = await fetch(c.url, { redirect: 'manual' });
    assert.equal(open.status, 303);
    assert.equal(open.headers.get('location'), '/');
    const cookie = open.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^osc-console-\d+=[\w-]+; HttpOnly; SameSite=Strict; Path=\/$/);
    const page = await fetch(`${c.origin}/`, { headers: { cookie: cookie.split(';')[0] ?? '' } });
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="\/assets\/app.js">/);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    const js = await fetch(`${c.origin}/assets/app.js`, { headers: auth() });
    assert.equal(js.status, 200);
    assert.ok((await js.arrayBuffer()).byteLength > 10_000, 'the bundled front end');
    assert.equal((await fetch(`${c.origin}/assets/app.js`)).status, 401);
  });

  test("the user's watch streams through; a write through the console shows up in it", async () => {
    const list = (await (await fetch(`${c.origin}/k8s/api/v1/namespaces/default/pods`, { headers: auth() })).json()) as {
      metadata: { resourceVersion: string };
    };
    const ac = new AbortController();
    const watch = await fetch(`${c.origin}/k8s/api/v1/namespaces/default/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}`, {
      headers: auth(),
      signal: ac.signal,
    });
    assert.equal(watch.status, 200);
    let seen = '';
    const reading = (async () => {
      const reader = watch.body?.pipeThrough(new TextDecoderStream()).getReader();
      try {
        for (;;) {
          const r = await reader?.read();
          if (!r || r.done) break;
          seen += r.value;
        }
      } catch {
        // aborted at the end of the test
      }
    })();
    const created = await fetch(`${c.origin}/k8s/api/v1/namespaces/default/pods`, {
      method: 'POST',
      headers: write(),
      body: JSON.stringify({
        metadata: { name: 'through-the-console' },
        spec: { containers: [{ name: 'c', image: 'example.com/app:1' }] },
      }),
    });
    assert.equal(created.status, 201);
    await waitFor(() => /"type":"ADDED".*"name":"through-the-console"/.test(seen), { message: 'the ADDED event through the console' });
    ac.abort();
    await reading;
  });

  test("the API server's refusal comes back as it is, with the field it names", async () => {
    const r = await fetch(`${c.origin}/k8s/api/v1/namespaces/default/pods`, {
      method: 'POST',
      headers: write(),
      body: JSON.stringify({ metadata: { name: 'Not_A_Name' }, spec: { containers: [{ name: 'c', image: 'example.com/app:1' }] } }),
    });
    assert.equal(r.status, 422);
    const s = (await r.json()) as { reason: string; details: { causes: { field: string }[] } };
    assert.equal(s.reason, 'Invalid');
    assert.ok(s.details.causes.some((x) => x.field === 'metadata.name'));
  });

  test('Secrets, writes without the CSRF header and a missing Prometheus are refused by the console', async () => {
    const secret = await fetch(`${c.origin}/k8s/api/v1/namespaces/default/secrets?watch=1`, { headers: auth() });
    assert.equal(secret.status, 403);
    const noHeader = await fetch(`${c.origin}/k8s/api/v1/namespaces/default/pods/through-the-console`, {
      method: 'DELETE',
      headers: auth(),
    });
    assert.equal(noHeader.status, 403);
    const prom = await fetch(`${c.origin}/prometheus/api/v1/query?query=up`, { headers: auth() });
    assert.equal(prom.status, 503);
    assert.match(((await prom.json()) as { message: string }).message, /--prometheus-url/);
  });

  /** A request sent with its path exactly as written: fetch() would resolve `..` and `%2e%2e` itself. */
  const raw = (method: string, path: string, body?: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const u = new URL(c.origin);
      const req = request({ host: u.hostname, port: u.port, method, path, headers: body ? write() : auth() }, (res) => {
        let text = '';
        res.on('data', (d) => (text += String(d)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const consoleRefusal = (r: { status: number; text: string }) => {
    assert.equal(r.status, 403, r.text);
    // The console's own refusal, not the API server's: the request never went upstream.
    assert.match((JSON.parse(r.text) as { message: string }).message, /the console|refused|Kubernetes name/, r.text);
  };

  const leaks = /hunter2|aHVudGVyMi12YWx1ZQ|"token":/;
  const bypasses: [string, string, string, string?][] = [
    ['a plain Secret list', 'GET', '/k8s/api/v1/namespaces/default/secrets'],
    ['a Secret list spelled %73ecrets', 'GET', '/k8s/api/v1/namespaces/default/%73ecrets'],
    ['one Secret spelled %73ecrets', 'GET', '/k8s/api/v1/namespaces/default/%73ecrets/do-not-show'],
    ['every Secret spelled %73ecrets', 'GET', '/k8s/api/v1/%73ecrets'],
    [
      'a TokenRequest spelled %74oken',
      'POST',
      '/k8s/api/v1/namespaces/default/serviceaccounts/console-probe/%74oken',
      JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} }),
    ],
    ['a node proxy spelled %70roxy', 'GET', '/k8s/api/v1/nodes/any-node/%70roxy/metrics'],
    ['a pod exec spelled %65xec', 'POST', '/k8s/api/v1/namespaces/default/pods/any-pod/%65xec?command=id', '{}'],
    ["an image stream's secrets subresource", 'GET', '/k8s/apis/image.openshift.io/v1/namespaces/default/imagestreams/any/secrets'],
  ];
  for (const [what, method, path, body] of bypasses) {
    test(`${what} never reaches the API server`, async () => {
      const r = await raw(method, path, body);
      assert.doesNotMatch(r.text, leaks, `${path} leaked a credential`);
      consoleRefusal(r);
    });
  }

  test('dot segments, encoded slashes and double encoding are refused as written, not as a URL parser resolves them', async () => {
    for (const path of [
      '/k8s/api/v1/namespaces/default/pods/../../default/secrets',
      '/k8s/api/v1/namespaces/default/pods/%2e%2e/secrets',
      '/k8s/api/v1/namespaces/default%2fsecrets',
      '/k8s/api/v1/namespaces/default/%2573ecrets',
      '/k8s/api/v1//namespaces/default/secrets',
      '/k8s/../k8s/api/v1/namespaces/default/secrets',
      '/k8s/api/v1/nodes/',
    ]) {
      const r = await raw('GET', path);
      assert.doesNotMatch(r.text, leaks, `${path} leaked the Secret`);
      consoleRefusal(r);
    }
    // The allowed spelling of a page's path still passes, and only with the methods its page uses.
    assert.equal((await raw('GET', '/k8s/api/v1/nodes')).status, 200);
    consoleRefusal(await raw('POST', '/k8s/api/v1/nodes', JSON.stringify({ metadata: { name: 'n' } })));
  });

  test('a Prometheus still on its way: the metrics API says why, and answers once it is there', async () => {
    let source: { url?: string; note?: string } = { note: 'Prometheus is starting' };
    const late = await startConsole({ kubeConfig: plane.cp.kubeConfig, version: 'test', prometheus: () => source });
    try {
      const h = { authorization: `Bearer ${late.token}` };
      const info = (await (await fetch(`${late.origin}/console/info`, { headers: h })).json()) as {
        prometheus: string;
        prometheusNote: string;
      };
      assert.deepEqual([info.prometheus, info.prometheusNote], ['', 'Prometheus is starting']);
      const early = await fetch(`${late.origin}/prometheus/api/v1/label/__name__/values`, { headers: h });
      assert.equal(early.status, 503);
      assert.match(((await early.json()) as { message: string }).message, /Prometheus is starting/);
      // Any HTTP server stands in for the arrival here: the console passes the query on and the answer back.
      source = { url: c.origin };
      const passed = await fetch(`${late.origin}/prometheus/api/v1/query?query=up`, { headers: h });
      assert.equal(passed.status, 401, "the stand-in's own answer (it wants its token) comes back");
      const blocked = await fetch(`${late.origin}/prometheus/api/v1/admin/tsdb/delete_series`, { headers: h });
      assert.equal(blocked.status, 403, 'only the query API is reachable');
    } finally {
      await late.close();
    }
  });

  test('osc console prints a URL with the token, answers as the kubeconfig user, and stops on Ctrl-C', async () => {
    const root = join(import.meta.dirname, '..', '..');
    const child = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), 'console', '--kubeconfig', plane.cp.kubeconfigPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (out += String(d)));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const url = await waitFor(
        () => /Open: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out)?.[1] ?? (child.exitCode !== null ? 'exited' : ''),
        {
          message: 'the console URL',
        },
      );
      assert.notEqual(url, 'exited', out);
      assert.match(out, /No --prometheus-url: the metrics page is off/);
      const token = new URL(url).searchParams.get('token');
      const nodes = await fetch(`${new URL(url).origin}/k8s/api/v1/nodes`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(nodes.status, 200);
      assert.equal((await fetch(`${new URL(url).origin}/k8s/api/v1/nodes`)).status, 401);
    } finally {
      child.kill('SIGINT');
    }
    assert.equal(await exited, 0, out);
  });
});
