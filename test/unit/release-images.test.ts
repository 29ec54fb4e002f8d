import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { imageReferences, parseDigests, pinImages, unpinnedImages } from '../../src/install/images.ts';
import { manifests } from '../../src/install/manifests.ts';
import { parseImageName, resolveDigest } from '../../src/install/registry.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { runOsc } from '../support/cli.ts';

const digestOf = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

describe('release manifests name every image by digest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'osc-release-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const distribution of ['openshift', 'kubernetes'] as const)
    test(`${distribution}: the development manifests are no release (the privileged monitor by tag first); pinned, they are`, async () => {
      const objects = await manifests({ distribution });
      const loose = unpinnedImages(objects);
      assert.match(
        loose[0] ?? '',
        /openshift-sandboxed-containers-monitor:latest .*RELATED_IMAGE_KATA_MONITOR: the kata monitor DaemonSet \(privileged/,
      );
      const images = imageReferences(objects).map((r) => r.image);
      assert.ok(images.includes('quay.io/osc/osc-operator:v0.1.0'), 'the operator image');
      if (distribution === 'kubernetes')
        assert.ok(
          images.some((i) => i.startsWith('quay.io/kata-containers/kata-deploy:')),
          'kata-deploy',
        );
      else
        assert.ok(
          images.some((i) => i.includes('cloud-api-adaptor')),
          'the peer pods images',
        );
      const all = new Map(images.map((i) => [i, digestOf(i)]));
      const pinned = pinImages(objects, all);
      assert.deepEqual(unpinnedImages(pinned), []);
      for (const r of imageReferences(pinned)) {
        const [name, digest] = r.image.split('@');
        assert.equal(`@${digest}`, `@${all.get(name ?? '')}`, `${r.where}: the tag kept, the digest added`);
      }
      // One privileged image left by tag is enough to refuse the release.
      const monitor = images.find((i) => i.includes('monitor')) ?? '';
      const almost = pinImages(objects, new Map([...all].filter(([i]) => i !== monitor)));
      assert.equal(unpinnedImages(almost).length, 1);
      assert.match(unpinnedImages(almost)[0] ?? '', /privileged/);
    });

  test('a digests file: "<image> sha256:<digest>" per line; a bad line is named', () => {
    const d = digestOf('x');
    assert.deepEqual([...parseDigests(`# built today\nquay.io/a/b:1 ${d}\n\n`, 'digests.txt')], [['quay.io/a/b:1', d]]);
    assert.throws(
      () => parseDigests('quay.io/a/b:1 sha256:abc', 'digests.txt'),
      /digests\.txt:1: expected "<image> sha256:<64 hex digits>"/,
    );
  });

  test('osc install --dry-run --image-digests: every image pinned, the monitor pulled IfNotPresent; a missing digest is refused by name', async () => {
    const images = imageReferences(await manifests({ distribution: 'kubernetes' })).map((r) => r.image);
    const file = join(dir, 'digests.txt');
    writeFileSync(file, images.map((i) => `${i} ${digestOf(i)}`).join('\n'));
    const ok = await runOsc(['install', '--dry-run', '--distribution', 'kubernetes', '--image-digests', file]);
    assert.equal(ok.code, 0, ok.stderr);
    const printed = parseAllDocuments(ok.stdout).map((d) => d.toJS() as KubeObject);
    assert.deepEqual(unpinnedImages(printed), []);
    assert.ok(imageReferences(printed).length >= 3);

    writeFileSync(
      file,
      images
        .filter((i) => !i.includes('monitor'))
        .map((i) => `${i} ${digestOf(i)}`)
        .join('\n'),
    );
    const refused = await runOsc(['install', '--dry-run', '--image-digests', file]);
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /--image-digests: no digest for quay\.io\/openshift_sandboxed_containers\/openshift-sandboxed-containers-monitor:latest .*privileged/,
    );
  });
});

describe('resolving a tag with the registry', () => {
  test('image names as Docker reads them', () => {
    assert.deepEqual(parseImageName('node:24-bookworm-slim'), {
      registry: 'registry-1.docker.io',
      repository: 'library/node',
      tag: '24-bookworm-slim',
    });
    assert.deepEqual(parseImageName('quay.io/osc/osc-operator:v0.1.0'), {
      registry: 'quay.io',
      repository: 'osc/osc-operator',
      tag: 'v0.1.0',
    });
    assert.deepEqual(parseImageName('localhost:5000/a/b'), { registry: 'localhost:5000', repository: 'a/b', tag: 'latest' });
  });

  test("HEAD of the manifest, after the anonymous token the registry's challenge asks for", async () => {
    const manifest = '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}';
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (req.url?.startsWith('/token')) {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ token: 'anon' }));
      }
      if (req.headers.authorization !== 'Bearer anon') {
        res.statusCode = 401;
        res.setHeader('www-authenticate', `Bearer realm="${base}/token",service="test",scope="repository:osc/monitor:pull"`);
        return res.end();
      }
      if (req.url !== '/v2/osc/monitor/manifests/latest') {
        res.statusCode = 404;
        return res.end();
      }
      // No Docker-Content-Digest on HEAD: the digest is then the manifest's own hash.
      if (req.method === 'HEAD') return res.end();
      res.end(manifest);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      assert.equal(await resolveDigest(`127.0.0.1:${port}/osc/monitor:latest`), digestOf(manifest));
      assert.ok(seen.some((s) => s.startsWith('GET /token?service=test&scope=repository%3Aosc%2Fmonitor%3Apull')));
      await assert.rejects(resolveDigest(`127.0.0.1:${port}/osc/other:1`), /answered 404 for osc\/other:1/);
    } finally {
      server.close();
    }
  });
});
