import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bearerToken, DelegatingAuth, type ReviewApi, type UserInfo } from '../../src/runtime/metricsauth.ts';
import { TTLCache } from '../../src/runtime/ttlcache.ts';

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

  test('a flood of distinct bad tokens keeps the caches bounded and the good scraper cached', async () => {
    const { api, asked } = reviews({ good: { username: 'p' } }, new Set(['p']));
    const auth = new DelegatingAuth(api, { maxEntries: 100 });
    assert.equal((await auth.check('Bearer good', '/metrics', 'GET')).ok, true);
    for (let i = 0; i < 5000; i++) {
      assert.equal((await auth.check(`Bearer bad-${i}`, '/metrics', 'GET')).ok, false);
      // The scraper keeps scraping through the flood: its answer stays among the most recently used.
      if (i % 50 === 0) assert.equal((await auth.check('Bearer good', '/metrics', 'GET')).ok, true);
    }
    const sizes = Object.values(auth)
      .filter((v) => v instanceof Map)
      .map((m: Map<string, unknown>) => m.size);
    assert.equal(sizes.length, 2, 'the token and access caches');
    for (const size of sizes) assert.ok(size <= 100, `a cache holds ${size} answers, more than its bound`);
    assert.equal(asked.tokenReviews, 5001, 'each bad token reviewed once, the good one once');
  });

  test('the bounded cache evicts the least recently used entry and forgets expired ones', () => {
    let now = 0;
    const c = new TTLCache<number>(2, () => now);
    c.put('a', 1, 100);
    c.put('b', 2, 100);
    assert.equal(c.fresh('a'), 1, 'a read makes "a" the most recent');
    c.put('c', 3, 100);
    assert.deepEqual([...c.keys()], ['a', 'c'], '"b" was the least recently used');
    now = 100;
    assert.equal(c.fresh('a'), undefined, 'expired');
    assert.deepEqual([...c.keys()], ['c']);
    assert.throws(() => new TTLCache(0), /at least one entry/);
  });
});
