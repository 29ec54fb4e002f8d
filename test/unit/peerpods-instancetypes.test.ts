import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AWS_INSTANCE_TYPES,
  describeType,
  effectiveAllowedTypes,
  instanceTable,
  selectInstanceType,
} from '../../src/peerpods/instancetypes.ts';

/** The documented ConfigMap's types (docs/peerpods.md). */
const SEED = { allowed: ['t2.small', 't2.medium', 't3.large'], defaultType: 't3.medium' };

describe('the built-in table', () => {
  test('knows the documented types and the common families', () => {
    assert.deepEqual(AWS_INSTANCE_TYPES['t2.small'], { vcpus: 1, memoryMiB: 2048 });
    assert.deepEqual(AWS_INSTANCE_TYPES['t2.medium'], { vcpus: 2, memoryMiB: 4096 });
    assert.deepEqual(AWS_INSTANCE_TYPES['t3.medium'], { vcpus: 2, memoryMiB: 4096 });
    assert.deepEqual(AWS_INSTANCE_TYPES['t3.large'], { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(AWS_INSTANCE_TYPES['m5.large'], { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(AWS_INSTANCE_TYPES['m5.xlarge'], { vcpus: 4, memoryMiB: 16384 });
    assert.deepEqual(AWS_INSTANCE_TYPES['m6i.32xlarge'], { vcpus: 128, memoryMiB: 524288 });
    assert.deepEqual(AWS_INSTANCE_TYPES['m6a.large'], { vcpus: 2, memoryMiB: 8192 });
    assert.deepEqual(AWS_INSTANCE_TYPES['c5.xlarge'], { vcpus: 4, memoryMiB: 8192 });
    assert.deepEqual(AWS_INSTANCE_TYPES['c5.9xlarge'], { vcpus: 36, memoryMiB: 73728 });
    assert.deepEqual(AWS_INSTANCE_TYPES['r5.large'], { vcpus: 2, memoryMiB: 16384 });
    assert.equal(AWS_INSTANCE_TYPES['m5.32xlarge'], undefined, 'm5 has no 32xlarge');
  });
  test('is frozen, and overridable', () => {
    assert.ok(Object.isFrozen(AWS_INSTANCE_TYPES));
    const t = instanceTable({ 'x1.tiny': { vcpus: 1, memoryMiB: 256 }, 't3.medium': { vcpus: 9, memoryMiB: 9 } });
    assert.deepEqual(t['x1.tiny'], { vcpus: 1, memoryMiB: 256 });
    assert.deepEqual(t['t3.medium'], { vcpus: 9, memoryMiB: 9 });
    assert.deepEqual(AWS_INSTANCE_TYPES['t3.medium'], { vcpus: 2, memoryMiB: 4096 }, 'the built-in table is untouched');
  });
  test('describeType', () => {
    assert.equal(describeType('t2.small', AWS_INSTANCE_TYPES), 't2.small (1 vCPU, 2048 MiB)');
    assert.equal(describeType('t3.large', AWS_INSTANCE_TYPES), 't3.large (2 vCPUs, 8192 MiB)');
    assert.equal(describeType('zz.top', AWS_INSTANCE_TYPES), 'zz.top (size unknown)');
  });
  test('effectiveAllowedTypes adds the default once', () => {
    assert.deepEqual(effectiveAllowedTypes(SEED.allowed, SEED.defaultType), ['t2.small', 't2.medium', 't3.large', 't3.medium']);
    assert.deepEqual(effectiveAllowedTypes(['t3.medium', 'm5.large'], 't3.medium'), ['t3.medium', 'm5.large']);
    assert.deepEqual(effectiveAllowedTypes([], 't3.medium'), ['t3.medium']);
  });
});

describe('selectInstanceType', () => {
  test('exact fit', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 2, memoryMiB: 4096 }), { ok: true, type: 't2.medium', reason: 'best-fit' });
  });
  test('smallest fit: least memory first', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 1, memoryMiB: 100 }), { ok: true, type: 't2.small', reason: 'best-fit' });
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 2, memoryMiB: 5000 }), { ok: true, type: 't3.large', reason: 'best-fit' });
    // 4 vCPUs, 2 GiB: c5.xlarge (8 GiB) beats m5.xlarge and t3.xlarge (16 GiB), whatever the list order.
    const r = selectInstanceType({ allowed: ['m5.xlarge', 't3.xlarge', 'c5.xlarge'], defaultType: 'm5.xlarge', vcpus: 4, memoryMiB: 2048 });
    assert.deepEqual(r, { ok: true, type: 'c5.xlarge', reason: 'best-fit' });
  });
  test('smallest fit: fewer vCPUs break a memory tie, then the list order', () => {
    // t2.medium and t3.medium are both 2 vCPUs / 4 GiB: the list order decides.
    assert.equal(selectInstanceType({ allowed: ['t3.medium', 't2.medium'], defaultType: 't3.medium', vcpus: 1, memoryMiB: 3000 }).ok, true);
    const a = selectInstanceType({ allowed: ['t3.medium', 't2.medium'], defaultType: 't3.medium', vcpus: 1, memoryMiB: 3000 });
    const b = selectInstanceType({ allowed: ['t2.medium', 't3.medium'], defaultType: 't3.medium', vcpus: 1, memoryMiB: 3000 });
    assert.equal(a.ok && a.type, 't3.medium');
    assert.equal(b.ok && b.type, 't2.medium');
    // 8 GiB: t2.large (2 vCPUs) before m5.large? Same 2 vCPUs, so list order; but c5.2xlarge (8 vCPUs, 16 GiB) loses on memory.
    const c = selectInstanceType({ allowed: ['c5.2xlarge', 'm5.large'], defaultType: 'm5.large', vcpus: 2, memoryMiB: 8192 });
    assert.equal(c.ok && c.type, 'm5.large');
  });
  test('the default type takes part in best fit', () => {
    const r = selectInstanceType({ allowed: ['t3.large'], defaultType: 't3.medium', vcpus: 2, memoryMiB: 4096 });
    assert.deepEqual(r, { ok: true, type: 't3.medium', reason: 'best-fit' });
  });
  test('no fit: rejected, naming the allowed types and their sizes', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 4, memoryMiB: 4096 }), {
      ok: false,
      message:
        'the pod needs 4 vCPUs and 4096 MiB of memory, more than any allowed instance type offers: t2.small (1 vCPU, 2048 MiB), ' +
        't2.medium (2 vCPUs, 4096 MiB), t3.large (2 vCPUs, 8192 MiB), t3.medium (2 vCPUs, 4096 MiB); ' +
        "lower the containers' CPU/memory limits, or ask the administrator to add a larger type to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm",
    });
    const r = selectInstanceType({ ...SEED, vcpus: 1, memoryMiB: 9000 });
    assert.equal(r.ok, false);
  });
  test('explicit type inside the list', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, requestedType: 't3.large' }), { ok: true, type: 't3.large', reason: 'requested' });
    // The default is allowed even when not listed.
    assert.deepEqual(selectInstanceType({ ...SEED, requestedType: 't3.medium' }), { ok: true, type: 't3.medium', reason: 'requested' });
    // An explicit type wins over best fit.
    assert.deepEqual(selectInstanceType({ ...SEED, requestedType: 't3.large', vcpus: 1, memoryMiB: 512 }), {
      ok: true,
      type: 't3.large',
      reason: 'requested',
    });
  });
  test('explicit type inside the list but too small: allowed, with a warning', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, requestedType: 't2.small', vcpus: 2, memoryMiB: 4096 }), {
      ok: true,
      type: 't2.small',
      reason: 'requested',
      warning: 'instance type t2.small (1 vCPU, 2048 MiB) is smaller than the 2 vCPUs and 4096 MiB of memory the containers ask for',
    });
  });
  test('explicit type outside the list: rejected, naming the allowed types', () => {
    assert.deepEqual(selectInstanceType({ ...SEED, requestedType: 'm5.4xlarge' }), {
      ok: false,
      message:
        'instance type "m5.4xlarge" (annotation io.katacontainers.config.hypervisor.machine_type) is not allowed: ' +
        'the allowed types are t2.small, t2.medium, t3.large, t3.medium; use one of them, or ask the administrator to add it to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm',
    });
  });
  test('default when sizes are unknown', () => {
    assert.deepEqual(selectInstanceType({ ...SEED }), { ok: true, type: 't3.medium', reason: 'default' });
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 0, memoryMiB: 0 }), { ok: true, type: 't3.medium', reason: 'default' });
    // Only one dimension known: still the default (both are needed: docs/peerpods.md)...
    assert.deepEqual(selectInstanceType({ ...SEED, memoryMiB: 1024 }), { ok: true, type: 't3.medium', reason: 'default' });
    // ...with a warning when the default is known to be too small for it.
    assert.deepEqual(selectInstanceType({ ...SEED, vcpus: 4 }), {
      ok: true,
      type: 't3.medium',
      reason: 'default',
      warning: 'default instance type t3.medium (2 vCPUs, 4096 MiB) is smaller than the 4 vCPUs the containers ask for',
    });
    // An empty list allows only the default.
    assert.deepEqual(selectInstanceType({ allowed: [], defaultType: 't3.medium' }), { ok: true, type: 't3.medium', reason: 'default' });
    assert.equal(selectInstanceType({ allowed: [], defaultType: 't3.medium', requestedType: 't3.large' }).ok, false);
  });
  test('an allowed type missing from the table', () => {
    const allowed = ['t3.small', 'zz.huge'];
    // Never picked by best fit when a known type fits...
    assert.deepEqual(selectInstanceType({ allowed, defaultType: 't3.small', vcpus: 1, memoryMiB: 1024 }), {
      ok: true,
      type: 't3.small',
      reason: 'best-fit',
    });
    // ...can be asked for by name...
    assert.deepEqual(selectInstanceType({ allowed, defaultType: 't3.small', requestedType: 'zz.huge', vcpus: 64, memoryMiB: 1 }), {
      ok: true,
      type: 'zz.huge',
      reason: 'requested',
    });
    // ...and when no known type fits, the choice is left to the cloud-api-adaptor rather than rejecting.
    assert.deepEqual(selectInstanceType({ allowed, defaultType: 't3.small', vcpus: 8, memoryMiB: 4096 }), {
      ok: true,
      reason: 'unknown-sizes',
      warning: 'no allowed instance type of known size has 8 vCPUs and 4096 MiB of memory; the cloud-api-adaptor will choose among zz.huge',
    });
    // An extra table makes it known.
    assert.deepEqual(
      selectInstanceType({
        allowed,
        defaultType: 't3.small',
        vcpus: 8,
        memoryMiB: 4096,
        table: { 'zz.huge': { vcpus: 64, memoryMiB: 1 << 20 } },
      }),
      { ok: true, type: 'zz.huge', reason: 'best-fit' },
    );
  });
});
