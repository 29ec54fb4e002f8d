/**
 * The console's Create KataConfig form checks what the API server checks, in the API server's words
 * (src/console/web/validate.ts): each mistake the form finds itself is refused by a real kube-apiserver
 * with the very same text, and a form with several mistakes gets them all at once, where the API server
 * answers in rounds.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { oscCRDs } from '../../src/api/crds.ts';
import { kataConfigSpecSchema } from '../../src/api/kataconfig.ts';
import { initialForm, type KataConfigForm, kataConfigFromForm } from '../../src/console/web/model.ts';
import { checkKataConfig } from '../../src/console/web/validate.ts';
import { useControlPlane } from '../support/controlplane.ts';

const SCHEMA = kataConfigSpecSchema.openapi;
const formCheck = (f: Partial<KataConfigForm>) => {
  const kc = kataConfigFromForm({ ...initialForm(), ...f });
  return { kc, texts: checkKataConfig(kc as Parameters<typeof checkKataConfig>[0], SCHEMA).map((p) => p.text) };
};

describe('console form checks match the API server', () => {
  const plane = useControlPlane();
  before(() => plane.cp.installCRDs(oscCRDs()));
  const serverSays = async (kc: unknown) => {
    const r = await plane.cp.kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(kc) });
    assert.notEqual(r.code, 0, `the API server accepted ${JSON.stringify(kc)}`);
    return r.stderr;
  };

  const one: [string, Partial<KataConfigForm>][] = [
    ['a name with an underscore and capitals', { name: 'Bad_Name' }],
    ['no name', { name: '' }],
    ['a label key with a space', { labels: 'bad key!=x' }],
    ['a label value with a punctuation mark', { labels: 'team=a!b' }],
    ['an unknown logLevel', { logLevel: 'verbose' }],
    ['a selector key that is no label key', { matchExpressions: [{ key: 'bad key!', operator: 'Exists', values: [] }] }],
    ['In without values', { matchExpressions: [{ key: 'custom-kata', operator: 'In', values: [] }] }],
    ['Exists with values', { matchExpressions: [{ key: 'custom-kata', operator: 'Exists', values: ['x'] }] }],
    ['a selector value that is no label value', { matchExpressions: [{ key: 'custom-kata', operator: 'In', values: ['not valid!'] }] }],
  ];
  for (const [what, form] of one) {
    test(`${what}: the form says what the API server says`, async () => {
      const { kc, texts } = formCheck(form);
      assert.ok(texts.length > 0, 'the form finds it');
      const stderr = await serverSays(kc);
      for (const t of texts) assert.ok(stderr.includes(t), `the form says\n  ${t}\nthe API server says\n  ${stderr}`);
    });
  }

  test('several mistakes: the form finds them all at once; the API server only some in its first answer', async () => {
    const { kc, texts } = formCheck({
      name: 'Bad_Name',
      logLevel: 'verbose',
      matchExpressions: [{ key: 'bad key!', operator: 'In', values: [] }],
    });
    assert.equal(texts.length, 4, texts.join('\n'));
    assert.ok(texts.some((t) => t.startsWith('metadata.name: Invalid value: "Bad_Name"')));
    assert.ok(texts.some((t) => t.startsWith('spec.logLevel: Unsupported value: "verbose"')));
    assert.ok(texts.some((t) => t.startsWith('spec.kataConfigPoolSelector.matchExpressions[0].key: Invalid value: "object": key must be')));
    assert.ok(texts.some((t) => t.startsWith('spec.kataConfigPoolSelector.matchExpressions[0]: Invalid value: "object": values must be')));
    const stderr = await serverSays(kc);
    assert.ok(texts.filter((t) => stderr.includes(t)).length < texts.length, 'the API server answers in rounds');
  });

  test('the documented form is accepted by both', async () => {
    const { kc, texts } = formCheck({
      labels: 'team=platform',
      matchExpressions: [{ key: 'custom-kata', operator: 'In', values: ['true'] }],
    });
    assert.deepEqual(texts, []);
    const r = await plane.cp.kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(kc) });
    assert.equal(r.code, 0, r.stderr);
  });
});
