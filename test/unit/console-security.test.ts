import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { apiPathRefusal, cookieValue, csrfRefusal, hostAllowed, presentedToken, sameToken } from '../../src/console/security.ts';

const origin = 'http://127.0.0.1:4321';

describe('console guards', () => {
  test('the token comes from the session cookie or a bearer header, compared in constant time', () => {
    assert.equal(presentedToken({ cookie: 'a=b; osc-console-4321=tok123; c=d' }, 'osc-console-4321'), 'tok123');
    assert.equal(presentedToken({ cookie: 'osc-console-5555=other' }, 'osc-console-4321'), undefined, "another console's cookie");
    assert.equal(presentedToken({ authorization: 'Bearer tok456' }, 'osc-console-4321'), 'tok456');
    assert.equal(presentedToken({}, 'osc-console-4321'), undefined);
    assert.equal(cookieValue('osc-console-x=1', 'osc-console'), undefined);
    assert.ok(sameToken('tok', 'tok'));
    assert.ok(!sameToken('tok', 'tok2'));
    assert.ok(!sameToken(undefined, 'tok'));
  });

  test('only this server’s own names pass the Host check (DNS rebinding)', () => {
    assert.ok(hostAllowed('127.0.0.1:4321', 4321, '127.0.0.1'));
    assert.ok(hostAllowed('localhost:4321', 4321, '127.0.0.1'));
    assert.ok(!hostAllowed('evil.example:4321', 4321, '127.0.0.1'));
    assert.ok(!hostAllowed('127.0.0.1:9999', 4321, '127.0.0.1'));
    assert.ok(!hostAllowed(undefined, 4321, '127.0.0.1'));
  });

  test('writes need the custom header and, when the browser names one, this origin', () => {
    assert.equal(csrfRefusal('GET', {}, origin), undefined);
    assert.match(csrfRefusal('POST', {}, origin) ?? '', /x-osc-console/);
    assert.equal(csrfRefusal('POST', { 'x-osc-console': '1', origin }, origin), undefined);
    assert.match(csrfRefusal('DELETE', { 'x-osc-console': '1', origin: 'http://evil.example' }, origin) ?? '', /cross-origin/);
    assert.match(csrfRefusal('PATCH', { 'x-osc-console': '1', 'sec-fetch-site': 'cross-site' }, origin) ?? '', /cross-site/);
  });

  test('Secrets and the exec-like subresources are never proxied; the rest of the API is', () => {
    for (const p of [
      '/api/v1/secrets',
      '/api/v1/namespaces/openshift-sandboxed-containers-operator/secrets/peer-pods-secret',
      '/api/v1/namespaces/x/secrets?watch=1',
      '/api/v1/watch/secrets',
      '/api/v1/watch/namespaces/x/secrets',
      '/api/v1/namespaces/x/pods/p/exec',
      '/api/v1/nodes/n/proxy/metrics',
      '/api/v1/namespaces/x/serviceaccounts/default/token',
      '/healthz',
      '/api/v1/../v1/secrets',
    ]) {
      assert.ok(apiPathRefusal(p), `${p} must be refused`);
    }
    for (const p of [
      '/api/v1/pods',
      '/api/v1/namespaces/watch/pods',
      '/apis/kataconfiguration.openshift.io/v1/kataconfigs',
      '/api/v1/namespaces/openshift-sandboxed-containers-operator/configmaps',
    ]) {
      assert.equal(apiPathRefusal(p), undefined, `${p} must pass`);
    }
  });
});
