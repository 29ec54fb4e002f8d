import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { sameJson } from '../../src/runtime/samejson.ts';

/** What sameJson stands in for: both values through JSON, then compared deeply. */
const roundTrip = (a: unknown, b: unknown) =>
  isDeepStrictEqual(
    a === undefined ? undefined : JSON.parse(JSON.stringify(a)),
    b === undefined ? undefined : JSON.parse(JSON.stringify(b)),
  );

describe('sameJson: the same JSON document', () => {
  const cases: [unknown, unknown][] = [
    [
      { a: 1, b: 'x' },
      { b: 'x', a: 1 },
    ],
    [{ a: 1, b: undefined }, { a: 1 }],
    [{ a: 1 }, { a: 1, b: undefined }],
    [{ a: undefined }, {}],
    [{ a: 1 }, { a: 2 }],
    [{ a: 1 }, { a: 1, b: 2 }],
    [
      { a: 1, c: 3 },
      { a: 1, b: 3 },
    ],
    [
      [1, 2],
      [1, 2],
    ],
    [
      [1, 2],
      [2, 1],
    ],
    [[1], [1, 2]],
    [[undefined], [null]],
    [[{ a: undefined }], [{}]],
    [{ l: [{ node: 'w-1', phase: 'Installed' }] }, { l: [{ phase: 'Installed', node: 'w-1' }] }],
    [{ l: [] }, { l: {} }],
    [{}, []],
    [null, null],
    [null, {}],
    [undefined, undefined],
    [undefined, {}],
    [undefined, null],
    ['1', 1],
    [true, true],
    [{ a: { b: { c: [1, { d: 'e' }] } } }, { a: { b: { c: [1, { d: 'e' }] } } }],
    [{ a: { b: { c: [1, { d: 'e' }] } } }, { a: { b: { c: [1, { d: 'f' }] } } }],
  ];
  test('answers what a JSON round trip and a deep comparison answer, both ways round', () => {
    for (const [a, b] of cases) {
      assert.equal(sameJson(a, b), roundTrip(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      assert.equal(sameJson(b, a), roundTrip(b, a), `${JSON.stringify(b)} vs ${JSON.stringify(a)}`);
    }
  });
  test('a status of a thousand nodes, with a field left undefined, is the same; one phase changed is not', () => {
    const status = (phase: string, extra?: string) => ({
      kataNodes: { installed: Array.from({ length: 1000 }, (_, i) => `worker-${i}`), readyNodeCount: 1000, extra },
      conditions: [{ type: 'InProgress', status: 'False', reason: 'Installed', phase }],
    });
    assert.ok(sameJson(status('a'), status('a', undefined)));
    assert.ok(!sameJson(status('a'), status('b')));
  });
});
