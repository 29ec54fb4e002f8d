import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Expectations } from '../../src/runtime/expectations.ts';

test('awaiting: only the very same write waits for the cache; another write to the key goes at once', () => {
  let now = 0;
  const e = new Expectations<string>(30_000, () => now);
  assert.equal(e.awaiting('node-1', 'add', false), false, 'nothing written: nothing awaited');
  e.expect('node-1', 'add');
  assert.equal(e.awaiting('node-1', 'add', false), true, 'the same write, the cache not showing it yet');
  assert.equal(e.awaiting('node-1', 'remove', false), false, 'another write to the same node is not held up');
  assert.equal(e.awaiting('node-1', 'add', false), false, 'and the old record is gone');
  e.expect('node-1', 'add');
  assert.equal(e.awaiting('node-1', 'add', true), false, 'the cache shows it');
  e.expect('node-1', 'add');
  now = 30_000;
  assert.equal(e.awaiting('node-1', 'add', false), false, 'expired');
  assert.equal(e.size, 0);
});
