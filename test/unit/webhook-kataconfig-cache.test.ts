import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { ADMITTED_CREATE_MS, CONFIRM_REUSE_MS, type KataConfigSource, kataConfigAdmission } from '../../src/webhooks/kataconfig.ts';

const openshift = { name: 'openshift', supportsPeerPods: true };
const create = (name: string, dryRun = false) =>
  ({ uid: name, kind: {}, resource: {}, operation: 'CREATE', name, object: { metadata: { name } }, dryRun }) as never;
const kc = (name: string) => ({ metadata: { name } }) as KataConfig;

/** A cache the test fills by hand; `live` counts the API server reads. */
function source(synced: boolean) {
  const items: KataConfig[] = [];
  let liveReads = 0;
  const s: KataConfigSource & { items: KataConfig[]; liveReads: () => number } = {
    hasSynced: synced,
    list: () => [...items],
    live: async () => {
      liveReads++;
      await new Promise((r) => setTimeout(r, 5));
      return [...items];
    },
    items,
    liveReads: () => liveReads,
  };
  return s;
}

describe('the KataConfig webhook on the cache', () => {
  test('two creates decided at the same moment: one passes, the other is a duplicate', async () => {
    for (const synced of [true, false]) {
      const src = source(synced);
      const admit = kataConfigAdmission(src, openshift);
      const [a, b] = await Promise.all([admit(create('a')), admit(create('b'))]);
      assert.deepEqual([a.allowed, b.allowed], [true, false], `cache synced: ${synced}`);
      assert.equal(src.liveReads(), synced ? 0 : 2, 'the API server is read only before the cache has synced');
    }
  });

  test('an admitted create counts until the cache shows it or its time runs out; dry runs do not count', async () => {
    let now = 0;
    const src = source(true);
    const admit = kataConfigAdmission(src, openshift, () => now);
    assert.equal((await admit(create('dry', true))).allowed, true);
    assert.equal((await admit(create('first'))).allowed, true, 'a dry run reserves nothing');
    assert.equal((await admit(create('first'))).allowed, true, "the same name again (the API server's retry)");
    assert.equal((await admit(create('other'))).allowed, false);
    src.items.push(kc('first'));
    assert.equal((await admit(create('other'))).allowed, false, 'now the cache holds it');
    src.items.length = 0; // the first create was refused further on, and never stored
    now = ADMITTED_CREATE_MS;
    assert.equal((await admit(create('other'))).allowed, true, 'nothing holds the place any more');
  });

  test('a KataConfig deleted but still in the cache: the create is decided on a live read, and refusals share reads', async () => {
    let now = 0;
    const src = source(true);
    const admit = kataConfigAdmission(src, openshift, () => now);
    // The API server has deleted "old"; the cache has not seen it go yet.
    const stale = { ...src, list: () => [kc('old')] };
    const admitStale = kataConfigAdmission(stale, openshift, () => now);
    assert.equal((await admitStale(create('new'))).allowed, true, 'not refused by a stale cache');
    assert.equal(src.liveReads(), 1);

    // A KataConfig that does exist: refused, and a flood of refusals reads the API server only now and then.
    src.items.push(kc('kept'));
    const refusals = await Promise.all(Array.from({ length: 20 }, (_, i) => admit(create(`dup-${i}`))));
    assert.ok(refusals.every((d) => !d.allowed));
    assert.equal(src.liveReads(), 2, 'twenty refusals at once: one live read');
    now = CONFIRM_REUSE_MS;
    assert.equal((await admit(create('later'))).allowed, false);
    assert.equal(src.liveReads(), 3, 'a later refusal reads again');
  });

  test('a create admitted, cached and deleted before the next request holds no place', async () => {
    const src = source(true);
    let cached: ((name: string) => void) | undefined;
    const admit = kataConfigAdmission({ ...src, onCached: (cb) => (cached = cb) }, openshift, () => 0);
    assert.equal((await admit(create('first'))).allowed, true);
    cached?.('first'); // the cache showed it; then it was deleted, and the cache shows nothing again
    assert.equal((await admit(create('second'))).allowed, true);
  });
});
