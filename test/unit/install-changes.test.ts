import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { briefPaths, changedPaths } from '../../src/install/changes.ts';

const deployment = (image: string, env: { name: string; value: string }[], extra: Record<string, unknown> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'op', labels: { a: '1' } },
  spec: { replicas: 2, template: { spec: { containers: [{ name: 'manager', image, env }] } }, ...extra },
});

/** As the API server returns it: the server's fields and defaults added. */
const served = (o: ReturnType<typeof deployment>, rv: string) => ({
  ...o,
  metadata: { ...o.metadata, resourceVersion: rv, generation: Number(rv), managedFields: [{ manager: rv }], uid: 'u' },
  spec: { ...o.spec, revisionHistoryLimit: 10 },
  status: { replicas: Number(rv) },
});

describe("osc install's report: which fields an update changed", () => {
  test('a new image: only its path, the container named; server fields and defaults ignored', () => {
    const before = served(deployment('op:v1', [{ name: 'X', value: '1' }]), '1');
    const want = deployment('op:v2', [{ name: 'X', value: '1' }]);
    assert.deepEqual(changedPaths(want, before, served(want, '2')), ['spec.template.spec.containers[manager].image']);
  });

  test('entries of named lists by name: a changed value, an added and a dropped entry', () => {
    const before = served(
      deployment('op:v1', [
        { name: 'X', value: '1' },
        { name: 'Y', value: '1' },
      ]),
      '1',
    );
    const changed = deployment('op:v1', [
      { name: 'X', value: '2' },
      { name: 'Y', value: '1' },
    ]);
    assert.deepEqual(changedPaths(changed, before, served(changed, '2')), ['spec.template.spec.containers[manager].env[X].value']);
    const dropped = deployment('op:v1', [{ name: 'X', value: '1' }]);
    assert.deepEqual(changedPaths(dropped, before, served(dropped, '2')), ['spec.template.spec.containers[manager].env']);
  });

  test('a label added, a field the manifest no longer sets; nothing when only ownership changed', () => {
    const before = served(deployment('op:v1', [], { paused: false }), '1');
    const want = { ...deployment('op:v1', []), metadata: { name: 'op', labels: { a: '1', b: '2' } } };
    assert.deepEqual(changedPaths(want, before, served(want as ReturnType<typeof deployment>, '2')), ['metadata.labels.b', 'spec.paused']);
    const same = deployment('op:v1', [], { paused: false });
    assert.deepEqual(changedPaths(same, before, served(same, '2')), []);
  });

  test('briefly: at most four paths, then how many more', () => {
    assert.equal(briefPaths(['a', 'b']), 'a, b');
    assert.equal(briefPaths(['a', 'b', 'c', 'd', 'e', 'f']), 'a, b, c, d and 2 more');
  });
});
