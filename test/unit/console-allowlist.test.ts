import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONSOLE_API_PATHS, consoleApiPath } from '../../src/console/api-allowlist.ts';
import { apiPathRefusal } from '../../src/console/security.ts';

const refused = (method: string, path: string) => consoleApiPath(method, path).refusal;

describe('the console API allow-list', () => {
  test('percent-encoded Secrets, tokens, proxies and exec are refused, like their plain spellings', () => {
    for (const p of [
      '/api/v1/namespaces/default/%73ecrets',
      '/api/v1/namespaces/default/%73%65%63%72%65%74%73/x',
      '/api/v1/namespaces/default/serviceaccounts/default/%74oken',
      '/api/v1/nodes/n/%70roxy/metrics',
      '/api/v1/namespaces/default/pods/p/%65xec',
      '/api/v1/namespaces/default/pods/p/exec',
      '/api/v1/namespaces/default/pods/p/log',
      '/apis/image.openshift.io/v1/namespaces/default/imagestreams/is/secrets',
      '/apis/apps/v1/namespaces/default/deployments/d/scale',
    ]) {
      assert.ok(refused('GET', p), `${p} must be refused`);
      assert.ok(refused('POST', p), `POST ${p} must be refused`);
    }
    assert.match(refused('GET', '/api/v1/namespaces/default/%73ecrets') ?? '', /never shows Secret values/);
  });

  test('ambiguous paths are refused before matching: dots, empty segments, encoded slashes, double encoding', () => {
    for (const p of [
      '/api/v1/namespaces/default/pods/..',
      '/api/v1/namespaces/default/pods/%2e%2e',
      '/api/v1/namespaces/default/pods/.',
      '/api/v1//pods',
      '/api/v1/pods/',
      '/api/v1/namespaces/default%2fpods',
      '/api/v1/namespaces/default%5Cpods',
      '/api/v1/namespaces/default/%2573ecrets',
      '/api/v1/namespaces/default/pods/%252e%252e',
      '/api/v1/namespaces/default/pods/%zz',
      '/api/v1/namespaces/Default/pods',
      '/api/v1/namespaces/default/pods/a;b',
      'api/v1/pods',
      '/apis',
    ]) {
      assert.ok(refused('GET', p), `${p} must be refused`);
    }
  });

  test('each method is allowed only where a page uses it', () => {
    assert.equal(refused('GET', '/apis/kataconfiguration.openshift.io/v1/kataconfigs'), undefined);
    assert.equal(refused('POST', '/apis/kataconfiguration.openshift.io/v1/kataconfigs'), undefined);
    assert.equal(refused('DELETE', '/apis/kataconfiguration.openshift.io/v1/kataconfigs/example'), undefined);
    assert.ok(refused('DELETE', '/apis/kataconfiguration.openshift.io/v1/kataconfigs'), 'a collection delete');
    assert.ok(refused('PATCH', '/apis/kataconfiguration.openshift.io/v1/kataconfigs/example'));
    assert.ok(refused('PUT', '/apis/kataconfiguration.openshift.io/v1/kataconfigs/example'));
    assert.ok(refused('POST', '/api/v1/nodes'));
    assert.ok(refused('DELETE', '/api/v1/nodes/worker-0'));
    assert.ok(refused('GET', '/api/v1/namespaces'), 'not used by any page');
    assert.ok(refused('POST', '/api/v1/namespaces/default/configmaps'), 'the peer pods page only reads peer-pods-cm');
    // The Workloads page: pods and Deployments in a namespace, as the user.
    for (const base of ['/api/v1/namespaces/team-a/pods', '/apis/apps/v1/namespaces/team-a/deployments']) {
      assert.equal(refused('GET', base), undefined);
      assert.equal(refused('POST', base), undefined);
      assert.equal(refused('GET', `${base}/web-1`), undefined);
      assert.equal(refused('DELETE', `${base}/web-1`), undefined);
      assert.ok(refused('DELETE', base), 'no collection deletes');
      assert.ok(refused('PATCH', `${base}/web-1`));
    }
    assert.ok(refused('GET', '/apis/apps/v1/namespaces/team-a/statefulsets'), 'nothing else new');
  });

  test('the path forwarded is the decoded, rebuilt one', () => {
    assert.deepEqual(consoleApiPath('GET', '/api/v1/%6eodes'), { path: '/api/v1/nodes' });
    assert.equal(apiPathRefusal('/api/v1/nodes?watch=1&resourceVersion=5'), undefined);
    assert.ok(apiPathRefusal('/api/v1/nodes', 'POST'));
  });

  test('every entry is a well-formed pattern with methods', () => {
    for (const e of CONSOLE_API_PATHS) {
      assert.match(e.path, /^\/apis?(\/([a-z0-9.-]+|\{ns\}|\{name\}))+$/, e.path);
      assert.ok(e.methods.length > 0, e.path);
    }
  });
});
