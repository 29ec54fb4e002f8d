import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findCondition, setCondition } from '../../src/runtime/conditions.ts';

test('setCondition adds, and moves lastTransitionTime only when the status flips', () => {
  const t0 = new Date('2026-01-01T00:00:00Z');
  const t1 = new Date('2026-01-01T00:05:00Z');
  const t2 = new Date('2026-01-01T00:10:00Z');
  let c = setCondition([], { type: 'InProgress', status: 'True', reason: 'Installing', message: 'a' }, t0);
  assert.equal(c.length, 1);
  assert.equal(c[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
  c = setCondition(c, { type: 'InProgress', status: 'True', reason: 'Updating', message: 'b' }, t1);
  assert.equal(c.length, 1);
  assert.equal(findCondition(c, 'InProgress')?.reason, 'Updating');
  assert.equal(c[0]?.lastTransitionTime, '2026-01-01T00:00:00Z', 'same status keeps the transition time');
  c = setCondition(c, { type: 'InProgress', status: 'False', reason: '', message: '' }, t2);
  assert.equal(c[0]?.lastTransitionTime, '2026-01-01T00:10:00Z', 'a flip moves it');
  c = setCondition(c, { type: 'Other', status: 'True', reason: 'X', message: '' }, t2);
  assert.deepEqual(
    c.map((x) => x.type),
    ['InProgress', 'Other'],
  );
});
