/**
 * The OLM bundle's upgrade graph (replaces, olm.skipRange) and the release bundle: every image osc can
 * deploy listed in relatedImages, each by digest.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CAA_IMAGE_ENV, MONITOR_IMAGE_ENV, PODVM_BUILDER_IMAGE_ENV } from '../../src/api/names.ts';
import { imageReferences, isPinned } from '../../src/install/images.ts';
import { manifests } from '../../src/install/manifests.ts';
import { releaseBundleFiles } from '../../src/packaging/generate.ts';
import { olmBundle, PACKAGE } from '../../src/packaging/olm.ts';
import { RELEASED_VERSIONS, upgradeGraph } from '../../src/packaging/upgrade-graph.ts';
import { KATA_DEPLOY_IMAGE_ENV } from '../../src/platform/kubernetes/katadeploy.ts';

const digestOf = (image: string) => `sha256:${Buffer.from(image).toString('hex').padEnd(64, '0').slice(0, 64)}`;

describe('the OLM upgrade graph', () => {
  test('replaces the newest release, skips from the first; nothing for a first release', () => {
    assert.deepEqual(upgradeGraph(PACKAGE, '1.3.0', ['1.0.0', '1.2.1', '1.1.0']), {
      replaces: `${PACKAGE}.v1.2.1`,
      skipRange: '>=1.0.0 <1.3.0',
    });
    assert.deepEqual(upgradeGraph(PACKAGE, '1.10.0', ['1.9.0', '1.2.0']), { replaces: `${PACKAGE}.v1.9.0`, skipRange: '>=1.2.0 <1.10.0' });
    assert.deepEqual(upgradeGraph(PACKAGE, '0.1.0', []), {});
  });

  test('a bundle that does not move the graph forward is refused, saying what to raise', () => {
    assert.throws(
      () => upgradeGraph(PACKAGE, '1.2.0', ['1.2.0']),
      /bundle version 1\.2\.0 is not newer than the released 1\.2\.0: raise "version" in package\.json/,
    );
    assert.throws(() => upgradeGraph(PACKAGE, 'v1', ['1.0.0']), /"v1" is not a release version/);
  });

  test('the CSV carries it: spec.replaces and the olm.skipRange annotation', async () => {
    const b = olmBundle(await manifests(), { version: '1.3.0', released: ['1.1.0', '1.2.0'] });
    assert.equal(b.csv.spec.replaces, `${PACKAGE}.v1.2.0`);
    assert.equal(b.csv.metadata.annotations?.['olm.skipRange'], '>=1.1.0 <1.3.0');
    const first = olmBundle(await manifests(), { version: '1.0.0', released: [] });
    assert.equal(first.csv.spec.replaces, undefined);
    assert.equal(first.csv.metadata.annotations?.['olm.skipRange'], undefined);
    assert.ok(RELEASED_VERSIONS.every((v) => /^\d+\.\d+\.\d+$/.test(v)));
  });
});

describe('relatedImages and the release bundle', () => {
  test('relatedImages: the operator and every image it can deploy (the env it reads each from)', async () => {
    const objects = await manifests();
    const b = olmBundle(objects, { version: '1.0.0' });
    const names = b.csv.spec.relatedImages.map((r) => r.name);
    assert.deepEqual(names, ['osc-operator', 'kata-monitor', 'kata-deploy', 'caa', 'podvm-builder']);
    const env = imageReferences(objects).map((r) => r.where.replace(/^.*env /, ''));
    for (const e of [MONITOR_IMAGE_ENV, KATA_DEPLOY_IMAGE_ENV, CAA_IMAGE_ENV, PODVM_BUILDER_IMAGE_ENV]) assert.ok(env.includes(e), e);
    assert.equal(b.csv.spec.relatedImages.length, imageReferences(objects).length, 'every image the manifests name is related');
  });

  test('a release bundle names every image by digest, relatedImages included; a missing digest is refused by name', async () => {
    const images = imageReferences(await manifests()).map((r) => r.image);
    const files = await releaseBundleFiles(new Map(images.map((i) => [i, digestOf(i)])));
    const csv = files.find((f) => f.path.endsWith('.clusterserviceversion.yaml'))?.text ?? '';
    for (const i of images) assert.ok(csv.includes(`${i}@${digestOf(i)}`), `${i} by digest in the CSV`);
    for (const line of csv.split('\n').filter((l) => /^\s+(- )?(image|value|containerImage): \S+[:/]\S+:/.test(l) && !l.includes('://')))
      assert.ok(isPinned(line.split(': ')[1] ?? ''), `by tag: ${line}`);
    const relatedImages = csv.slice(csv.indexOf('relatedImages:'));
    assert.equal((relatedImages.match(/@sha256:/g) ?? []).length, images.length);
    for (const line of relatedImages.split('\n').filter((l) => l.includes('image: ')))
      assert.ok(isPinned(line.split('image: ')[1] ?? ''), line);

    const withoutMonitor = new Map(images.filter((i) => !i.includes('monitor')).map((i) => [i, digestOf(i)]));
    await assert.rejects(
      releaseBundleFiles(withoutMonitor),
      /a release bundle names every image by digest; these are by tag: quay\.io\/openshift_sandboxed_containers\/openshift-sandboxed-containers-monitor:latest/,
    );
  });
});
