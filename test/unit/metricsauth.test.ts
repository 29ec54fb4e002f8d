import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bearerToken, DelegatingAuth, type ReviewApi, type UserInfo } from '../../src/runtime/metricsauth.ts';

/** A review API answering from tables, counting the questions it was asked. */
function reviews(users: Record<string, UserInfo>, allowed: Set<string>) {
  const asked = { tokenReviews: 0, accessReviews: 0, paths: [] as string[] };
  const api: ReviewApi = {
    tokenReview: async (token) => {
      asked.tokenReviews++;
      const user = users[token];
      return user ? { authenticated: true, user } : { authenticated: false, error: 'invalid bearer token' };
    },
    accessReview: async (user, path, verb) => {
      asked.accessReviews++;
      asked.paths.push(`${verb} ${path}`);
      return { allowed: allowed.has(user.username) };
    },
  };
  return { api, asked };
}

describe('delegated authentication and authorisation for /metrics', () => {
  test('401 without a token or with one the API server refuses; 403 without the right; 200 with it', async () => {
    const { api, asked } = reviews(
      { good: { username: 'system:serviceaccount:mon:prometheus' }, other: { username: 'alice' } },
      new Set(['system:serviceaccount:mon:prometheus']),
    );
    const auth = new DelegatingAuth(api);
    assert.deepEqual(await auth.check(undefined, '/metrics', 'GET'), {
      ok: false,
      status: 401,
      message: 'Unauthorized: a bearer token is required',
    });
    assert.equal((await auth.check('Basic Zm9vOmJhcg==', '/metrics', 'GET')).ok, false);
    assert.equal(asked.tokenReviews, 0, 'no token, no question');
    const bad = await auth.check('Bearer forged', '/metrics', 'GET');
    assert.equal(bad.ok ? 200 : bad.status, 401);
    const other = await auth.check('Bearer other', '/metrics', 'GET');
    assert.deepEqual(other, { ok: false, status: 403, message: 'Forbidden: user "alice" may not get /metrics' });
    const good = await auth.check('Bearer good', '/metrics', 'GET');
    assert.equal(good.ok, true);
    assert.deepEqual(asked.paths, ['get /metrics', 'get /metrics'], 'the verb is the lower-cased method, the path the URL path');
  });

  test('answers are cached for their TTLs, keyed so that the token itself is not kept', async () => {
    const { api, asked } = reviews({ good: { username: 'p' } }, new Set(['p']));
    let now = 0;
    const auth = new DelegatingAuth(api, { ttl: { authenticatedMs: 1000, allowedMs: 5000, deniedMs: 300 }, now: () => now });
    for (let i = 0; i < 5; i++) assert.equal((await auth.check('Bearer good', '/metrics', 'GET')).ok, true);
    assert.deepEqual([asked.tokenReviews, asked.accessReviews], [1, 1], 'one review each for five scrapes');
    now = 1000;
    await auth.check('Bearer good', '/metrics', 'GET');
    assert.deepEqual([asked.tokenReviews, asked.accessReviews], [2, 1], 'the token reviewed again after a minute; the allow still held');
    now = 6000;
    await auth.check('Bearer good', '/metrics', 'GET');
    assert.deepEqual([asked.tokenReviews, asked.accessReviews], [3, 2]);
    assert.doesNotMatch(JSON.stringify([...Object.values(auth)].map((v) => (v instanceof Map ? [...v.keys()] : null))), /good/);
  });

  test('bearer tokens are read from the header as sent', () => {
    assert.equal(bearerToken('Bearer abc.def'), 'abc.def');
    assert.equal(bearerToken('bearer abc'), 'abc');
    assert.equal(bearerToken('Bearer '), undefined);
    assert.equal(bearerToken(undefined), undefined);
  });
});
