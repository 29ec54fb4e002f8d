import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ceilDiv, isQuantity, parseQuantity, QuantityError, toMiB, toMilli, toWholeUnits } from '../../src/peerpods/quantity.ts';

describe('parseQuantity', () => {
  const nano: [string, bigint][] = [
    ['2', 2_000_000_000n],
    ['500m', 500_000_000n],
    ['0.5', 500_000_000n],
    ['.5', 500_000_000n],
    ['1.', 1_000_000_000n],
    ['+1', 1_000_000_000n],
    ['-1', -1_000_000_000n],
    ['0', 0n],
    ['100n', 100n],
    ['3u', 3000n],
    ['1k', 1_000_000_000_000n],
    ['1Ki', 1024n * 1_000_000_000n],
    ['512Mi', 512n * 1024n * 1024n * 1_000_000_000n],
    ['1Gi', 1024n ** 3n * 1_000_000_000n],
    ['1.5Gi', 1536n * 1024n * 1024n * 1_000_000_000n],
    ['1G', 1_000_000_000n * 1_000_000_000n],
    ['1M', 1_000_000n * 1_000_000_000n],
    ['1T', 10n ** 12n * 1_000_000_000n],
    ['1E', 10n ** 18n * 1_000_000_000n],
    ['1Ei', 2n ** 60n * 1_000_000_000n],
    ['1e3', 1000n * 1_000_000_000n],
    ['1E3', 1000n * 1_000_000_000n],
    ['1.5e3', 1500n * 1_000_000_000n],
    ['5e-3', 5_000_000n],
    ['0.0000000001', 1n], // below nano precision: rounded up, as Kubernetes does
    ['007', 7_000_000_000n],
  ];
  for (const [text, want] of nano) test(text, () => assert.equal(parseQuantity(text), want));

  const bad = ['', 'abc', '1 Gi', '1gi', '1GB', '1.2.3', 'Gi', '1e', '1e1.5', '--1', '1e999', ' 1'];
  for (const text of bad) {
    test(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(() => parseQuantity(text), QuantityError);
      assert.equal(isQuantity(text), false);
    });
  }

  test('the error names the text and the units', () => {
    assert.throws(() => parseQuantity('1GB'), {
      message: '"1GB" has an unknown unit "GB" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)',
    });
    assert.throws(() => parseQuantity('lots'), {
      message: '"lots" is not a quantity (expected a number with an optional unit, like 500m, 2, 1Gi)',
    });
  });
});

describe('conversions round up', () => {
  test('CPU to whole vCPUs', () => {
    assert.equal(toWholeUnits(parseQuantity('1500m')), 2n);
    assert.equal(toWholeUnits(parseQuantity('2')), 2n);
    assert.equal(toWholeUnits(parseQuantity('1m')), 1n);
    assert.equal(toWholeUnits(0n), 0n);
  });
  test('CPU to millicores', () => {
    assert.equal(toMilli(parseQuantity('0.5')), 500n);
    assert.equal(toMilli(parseQuantity('100u')), 1n);
  });
  test('memory to MiB', () => {
    assert.equal(toMiB(parseQuantity('1Gi')), 1024n);
    assert.equal(toMiB(parseQuantity('1G')), 954n); // 1e9 / 2^20 = 953.67
    assert.equal(toMiB(parseQuantity('512Mi')), 512n);
    assert.equal(toMiB(parseQuantity('1')), 1n);
    assert.equal(toMiB(parseQuantity('1e3')), 1n);
    assert.equal(toMiB(parseQuantity('1048577')), 2n);
  });
  test('ceilDiv', () => {
    assert.equal(ceilDiv(7n, 2n), 4n);
    assert.equal(ceilDiv(8n, 2n), 4n);
    assert.equal(ceilDiv(-7n, 2n), -3n);
  });
});
