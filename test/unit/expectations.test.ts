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

test('a write the cache has shown is forgotten, so the same write made again later is not held up', () => {
  const e = new Expectations<string>();
  e.expect('node-1', 'add');
  assert.equal(e.recorded('node-1'), 'add');
  e.forget('node-1');
  assert.equal(e.recorded('node-1'), undefined);
  assert.equal(e.awaiting('node-1', 'add', false), false, 'someone undid it by hand: osc writes it again at once');
});

test('retain keeps the records of the keys still planned and forgets the others', () => {
  const e = new Expectations<string>();
  e.expect('machineconfigs//a', 'create');
  e.expect('machineconfigpools//b', 'create');
  e.retain(new Set(['machineconfigs//a']));
  assert.equal(e.awaiting('machineconfigs//a', 'create', false), true);
  assert.equal(e.recorded('machineconfigpools//b'), undefined, 'no longer planned: the cache shows it, or it is not wanted');
  assert.equal(e.size, 1);
});
