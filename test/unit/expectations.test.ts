import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Expectations } from '../../src/runtime/expectations.ts';

test('a write awaits its value in the cache, then is forgotten', () => {
  const e = new Expectations<boolean>();
  assert.equal(e.awaiting('node-1', false), false, 'nothing written: nothing awaited');
  e.expect('node-1', true);
  assert.equal(e.awaiting('node-1', false), true, 'the cache still shows the old value');
  assert.equal(e.awaiting('node-1', true), false, 'the cache shows the written value');
  assert.equal(e.size, 0);
  assert.equal(e.awaiting('node-1', false), false, 'once confirmed, a later change is a new change');
});

test('a write the cache never confirms expires', () => {
  let now = 1_000;
  const e = new Expectations<boolean>(30_000, () => now);
  e.expect('node-1', true);
  now += 29_999;
  assert.equal(e.awaiting('node-1', false), true);
  now += 1;
  assert.equal(e.awaiting('node-1', false), false);
  assert.equal(e.size, 0);
});
