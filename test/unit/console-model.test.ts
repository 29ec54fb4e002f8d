import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { kataConfigSpecSchema } from '../../src/api/kataconfig.ts';
import {
  formFieldOf,
  initialForm,
  kataConfigFromForm,
  matchMetricNames,
  parseLabels,
  placeErrors,
  placeProblems,
  tileCounts,
  tilesOf,
} from '../../src/console/web/model.ts';
import { checkKataConfig, ruleCheck, rulesOf } from '../../src/console/web/validate.ts';

describe('console: the Create KataConfig form', () => {
  test('defaults are the documented ones and create the plain KataConfig', () => {
    assert.deepEqual(kataConfigFromForm(initialForm()), {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig' },
      spec: { checkNodeEligibility: false, enablePeerPods: false, logLevel: 'info' },
    });
  });

  test('labels and matchExpressions become metadata.labels and spec.kataConfigPoolSelector', () => {
    const kc = kataConfigFromForm({
      ...initialForm(),
      labels: 'app=kata, tier=nodes',
      matchExpressions: [
        { key: 'custom-kata', operator: 'In', values: ['true'] },
        { key: 'gpu', operator: 'DoesNotExist', values: [] },
      ],
    });
    assert.deepEqual((kc.metadata as { labels: unknown }).labels, { app: 'kata', tier: 'nodes' });
    assert.deepEqual((kc.spec as { kataConfigPoolSelector: unknown }).kataConfigPoolSelector, {
      matchExpressions: [
        { key: 'custom-kata', operator: 'In', values: ['true'] },
        { key: 'gpu', operator: 'DoesNotExist' },
      ],
    });
    assert.deepEqual(parseLabels('a b=c'), { a: '', b: 'c' });
  });

  test("the API server's causes land at the fields they name; the rest at the top", () => {
    assert.equal(formFieldOf('spec.logLevel'), 'logLevel');
    assert.equal(formFieldOf('metadata.name'), 'name');
    assert.equal(formFieldOf('spec.kataConfigPoolSelector.matchExpressions[1].values'), 'matchExpressions.1.values');
    assert.equal(formFieldOf('spec.kataConfigPoolSelector.matchExpressions[0].values[2]'), 'matchExpressions.0.values.2');
    assert.equal(formFieldOf('spec.kataConfigPoolSelector.matchExpressions[0].operator'), 'matchExpressions.0.operator');
    const placed = placeErrors({
      code: 422,
      message: 'KataConfig.kataconfiguration.openshift.io "x" is invalid: spec.logLevel: Unsupported value: "loud"',
      details: {
        causes: [
          { field: 'spec.logLevel', message: 'Unsupported value: "loud"' },
          { field: '<nil>', message: 'Invalid value: null: some validation rules were not checked because the object was invalid' },
        ],
      },
    });
    assert.deepEqual(placed.fields, { logLevel: ['spec.logLevel: Unsupported value: "loud"'] });
    assert.deepEqual(placed.general, []);
    // An admission webhook answers one message and names no field.
    const webhook = placeErrors({ code: 403, message: 'admission webhook denied the request: a KataConfig already exists' });
    assert.deepEqual(webhook, { fields: {}, general: ['admission webhook denied the request: a KataConfig already exists'] });
  });
});

describe('console: node tiles and metrics', () => {
  test('one tile per node in status.kataNodes, coloured by state, in node order', () => {
    const tiles = tilesOf({
      nodeCount: 4,
      installed: ['worker-10'],
      installing: ['worker-2'],
      waitingToInstall: ['worker-1'],
      failedToUninstall: ['worker-3'],
    });
    assert.deepEqual(
      tiles.map((t) => [t.node, t.state]),
      [
        ['worker-1', 'waiting'],
        ['worker-2', 'installing'],
        ['worker-3', 'failed'],
        ['worker-10', 'installed'],
      ],
    );
    assert.deepEqual(tileCounts(tiles), {
      waiting: 1,
      installing: 1,
      installed: 1,
      failed: 1,
      'waiting-uninstall': 0,
      uninstalling: 0,
      uninstalled: 0,
    });
    assert.deepEqual(tilesOf(undefined), []);
  });

  test('typing kata lists every metric whose name contains it', () => {
    const names = ['osc_kata_nodes', 'osc_kataconfig_in_progress', 'process_cpu_seconds_total', 'KATA_X'];
    assert.deepEqual(matchMetricNames(names, 'kata'), ['osc_kata_nodes', 'osc_kataconfig_in_progress', 'KATA_X']);
    assert.deepEqual(matchMetricNames(names, 'kata progress'), ['osc_kataconfig_in_progress']);
    assert.deepEqual(matchMetricNames(names, ''), []);
  });
});

describe('console: the form checks the CRD schema itself', () => {
  test('every CEL rule of the KataConfig spec is one the form can evaluate', () => {
    const rules = rulesOf(kataConfigSpecSchema.openapi);
    assert.ok(rules.length >= 4, rules.join('\n'));
    for (const r of rules) assert.ok(ruleCheck(r), `the form cannot evaluate ${r}: teach src/console/web/validate.ts`);
  });

  test('Bad_Name, logLevel verbose, key "bad key!" with In and no values: all four at once, at their fields', () => {
    const kc = kataConfigFromForm({
      ...initialForm(),
      name: 'Bad_Name',
      logLevel: 'verbose',
      matchExpressions: [{ key: 'bad key!', operator: 'In', values: [] }],
    });
    const placed = placeProblems(checkKataConfig(kc as Parameters<typeof checkKataConfig>[0], kataConfigSpecSchema.openapi));
    assert.deepEqual(Object.keys(placed.fields).sort(), ['logLevel', 'matchExpressions.0', 'matchExpressions.0.key', 'name']);
    assert.deepEqual(placed.general, []);
  });
});
