import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { oscCRDs } from '../../src/api/crds.ts';
import { useControlPlane } from '../support/controlplane.ts';

/**
 * Invalid KataConfigs are refused by the API server itself (the CRD schema and its CEL rules), with a
 * message that names the field and says what is allowed.
 */
describe('KataConfig validation at the API server', () => {
  const plane = useControlPlane();
  before(() => plane.cp.installCRDs(oscCRDs()));

  const create = (spec: string) =>
    plane.cp.kubectl(['create', '-f', '-'], {
      input: `apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: bad\nspec:\n${spec}`,
    });

  const table: { name: string; spec: string; expect: RegExp[] }[] = [
    {
      name: 'unknown logLevel',
      spec: '  logLevel: verbose\n',
      expect: [
        /spec\.logLevel: Unsupported value: "verbose": supported values: "fatal", "panic", "error", "warn", "info", "debug", "trace"/,
      ],
    },
    {
      name: 'logLevel of the wrong case',
      spec: '  logLevel: INFO\n',
      expect: [/spec\.logLevel: Unsupported value: "INFO"/],
    },
    {
      name: 'checkNodeEligibility not a boolean',
      spec: '  checkNodeEligibility: "yes"\n',
      expect: [/spec\.checkNodeEligibility: Invalid value: "string": spec\.checkNodeEligibility in body must be of type boolean/],
    },
    {
      name: 'enablePeerPods not a boolean',
      spec: '  enablePeerPods: 1\n',
      expect: [/spec\.enablePeerPods: Invalid value: "integer": spec\.enablePeerPods in body must be of type boolean/],
    },
    {
      name: 'unknown selector operator',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - key: zone\n      operator: Equals\n      values: [a]\n',
      expect: [
        /spec\.kataConfigPoolSelector\.matchExpressions\[0\]\.operator: Unsupported value: "Equals": supported values: "In", "NotIn", "Exists", "DoesNotExist"/,
      ],
    },
    {
      name: 'In without values',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - key: zone\n      operator: In\n',
      expect: [
        /spec\.kataConfigPoolSelector\.matchExpressions\[0\]: Invalid value: "object": values must be a non-empty list when operator is In or NotIn: list the label values to match/,
      ],
    },
    {
      name: 'NotIn with an empty list',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - key: zone\n      operator: NotIn\n      values: []\n',
      expect: [/matchExpressions\[0\]: Invalid value: "object": values must be a non-empty list when operator is In or NotIn/],
    },
    {
      name: 'Exists with values',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - key: zone\n      operator: Exists\n      values: [a]\n',
      expect: [
        /matchExpressions\[0\]: Invalid value: "object": values must be empty when operator is Exists or DoesNotExist: remove values/,
      ],
    },
    {
      name: 'expression without a key',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - operator: Exists\n',
      expect: [/spec\.kataConfigPoolSelector\.matchExpressions\[0\]\.key: Required value/],
    },
    {
      name: 'matchLabels value that is not a valid label value',
      spec: '  kataConfigPoolSelector:\n    matchLabels:\n      zone: "not valid!"\n',
      expect: [
        /spec\.kataConfigPoolSelector\.matchLabels\.zone: Invalid value: "not valid!": spec\.kataConfigPoolSelector\.matchLabels\.zone in body should match/,
      ],
    },
    {
      name: 'matchLabels as a list (nodeSelector syntax is not supported)',
      spec: '  kataConfigPoolSelector:\n    matchLabels:\n    - zone=a\n',
      expect: [
        /spec\.kataConfigPoolSelector\.matchLabels: Invalid value: "array": spec\.kataConfigPoolSelector\.matchLabels in body must be of type object/,
      ],
    },
    {
      name: "the documentation's placeholder <label_key> as a matchLabels key",
      spec: '  kataConfigPoolSelector:\n    matchLabels:\n      <label_key>: <label_value>\n',
      expect: [/spec\.kataConfigPoolSelector\.matchLabels: Invalid value: "object": every key must be a valid label key/],
    },
    {
      name: 'a matchExpressions key that is not a label key',
      spec: '  kataConfigPoolSelector:\n    matchExpressions:\n    - key: bad key!\n      operator: Exists\n',
      expect: [/spec\.kataConfigPoolSelector\.matchExpressions\[0\]\.key: Invalid value: "object": key must be a valid label key/],
    },
    {
      name: 'a label key whose name part is longer than 63 characters',
      spec: `  kataConfigPoolSelector:\n    matchLabels:\n      example.com/${'a'.repeat(64)}: x\n`,
      expect: [/matchLabels: Invalid value: "object": every key must be a valid label key/],
    },
    {
      name: 'a misspelt field',
      spec: '  loglevel: debug\n',
      expect: [/unknown field "spec\.loglevel"/],
    },
  ];

  for (const row of table) {
    test(`rejects ${row.name}`, async () => {
      const r = await create(row.spec);
      assert.notEqual(r.code, 0, `accepted: ${r.stdout}`);
      for (const e of row.expect) assert.match(r.stderr, e);
    });
  }

  test('refuses a live KataConfig patched to a selector key no node can carry', async () => {
    const ok = await create('  kataConfigPoolSelector:\n    matchLabels:\n      node-role.kubernetes.io/worker: ""\n');
    assert.equal(ok.code, 0, ok.stderr);
    const r = await plane.cp.kubectl([
      'patch',
      'kataconfig',
      'bad',
      '--type=merge',
      '-p',
      '{"spec":{"kataConfigPoolSelector":{"matchExpressions":[{"key":"<label_key>","operator":"Exists"}]}}}',
    ]);
    assert.notEqual(r.code, 0, `accepted: ${r.stdout}`);
    assert.match(
      r.stderr,
      /spec\.kataConfigPoolSelector\.matchExpressions\[0\]\.key: Invalid value: "object": key must be a valid label key/,
    );
    await plane.cp.kubectl(['delete', 'kataconfig', 'bad']);
  });

  test('a bad PeerPodConfig spec.limit is refused with the field and the value, not Invalid value: ""', async () => {
    const ppc = (limit: string) =>
      plane.cp.kubectl(['create', '-f', '-'], {
        input: `apiVersion: confidentialcontainers.org/v1alpha1\nkind: PeerPodConfig\nmetadata:\n  name: ppc\n  namespace: default\nspec:\n  cloudSecretName: peer-pods-secret\n  limit: ${limit}\n`,
      });
    for (const [limit, shown] of [
      ['"0"', '"0"'],
      ['"ten"', '"ten"'],
      ['-3', '-3'],
    ] as const) {
      const r = await ppc(limit);
      assert.notEqual(r.code, 0, `accepted limit ${limit}`);
      assert.doesNotMatch(r.stderr, /Invalid value: ""/);
      assert.match(
        r.stderr,
        new RegExp(
          `spec\\.limit: Invalid value: "object": limit is ${shown}: it must be a whole number of peer pod VMs per node, 1 or more`,
        ),
      );
    }
    const ok = await ppc('"10"');
    assert.equal(ok.code, 0, ok.stderr);
  });

  test('every KataConfig in config/samples is accepted as it stands', async () => {
    const dir = join(import.meta.dirname, '..', '..', 'config', 'samples');
    const samples = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
    assert.ok(samples.includes('cluster-kataconfig.yaml'), 'the README walkthrough KataConfig is there');
    for (const f of samples) {
      const r = await plane.cp.kubectl(['create', '--dry-run=server', '-f', join(dir, f)]);
      assert.equal(r.code, 0, `${f}: ${r.stderr}`);
      assert.match(r.stdout, /^kataconfig\.kataconfiguration\.openshift\.io\/\S+ created \(server dry run\)\n$/, f);
    }
  });

  test('accepts the documented examples (and defaults logLevel to info)', async () => {
    const ok = await create(
      '  checkNodeEligibility: false\n  logLevel: info\n  kataConfigPoolSelector:\n    matchLabels:\n      custom-kata1: test\n    matchExpressions:\n    - key: node-role.kubernetes.io/worker\n      operator: Exists\n',
    );
    assert.equal(ok.code, 0, ok.stderr);
    await plane.cp.kubectl(['delete', 'kataconfig', 'bad']);
    const minimal = await plane.cp.kubectl(['create', '-f', '-'], {
      input: 'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: minimal\n',
    });
    assert.equal(minimal.code, 0, minimal.stderr);
    const got = await plane.cp.kubectl(['get', 'kataconfig', 'minimal', '-o', 'jsonpath={.spec}']);
    assert.equal(got.stdout, '');
    const withSpec = await plane.cp.kubectl(['create', '-f', '-'], {
      input: 'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: defaulted\nspec: {}\n',
    });
    assert.equal(withSpec.code, 0, withSpec.stderr);
    const spec = JSON.parse((await plane.cp.kubectl(['get', 'kataconfig', 'defaulted', '-o', 'jsonpath={.spec}'])).stdout);
    assert.deepEqual(spec, { checkNodeEligibility: false, enablePeerPods: false, logLevel: 'info' });
  });
});
