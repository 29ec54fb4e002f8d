import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cycloneDx, type LockFile, npmPurl } from '../../src/packaging/sbom.ts';

const root = join(import.meta.dirname, '..', '..');
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as LockFile;
type Component = { name: string; group?: string; version: string; purl: string; hashes?: { alg: string; content: string }[] };

describe('the image SBOM (CycloneDX, from the lock file)', () => {
  test('exactly the production packages, each with version, purl, SHA-512 and license; no build or lint tool', () => {
    const bom = cycloneDx(lock) as { bomFormat: string; specVersion: string; components: (Component & { licenses?: unknown[] })[] };
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.equal(bom.specVersion, '1.5');
    const production = Object.entries(lock.packages ?? {}).filter(([p, v]) => p.startsWith('node_modules/') && !v.dev);
    assert.equal(bom.components.length, new Set(production.map(([p, v]) => `${p.split('node_modules/').pop()}@${v.version}`)).size);
    const pino = bom.components.find((c) => c.name === 'pino');
    const locked = lock.packages?.['node_modules/pino'];
    assert.equal(pino?.version, locked?.version);
    assert.equal(pino?.purl, `pkg:npm/pino@${locked?.version}`);
    assert.deepEqual(pino?.hashes, [
      { alg: 'SHA-512', content: Buffer.from(locked?.integrity?.replace('sha512-', '') ?? '', 'base64').toString('hex') },
    ]);
    assert.deepEqual(pino?.licenses, [{ license: { id: 'MIT' } }]);
    for (const dev of ['typescript', 'biome', 'esbuild', 'playwright-core']) assert.ok(!bom.components.some((c) => c.name === dev), dev);
    const scoped = bom.components.find((c) => c.group === '@kubernetes');
    assert.equal(scoped?.purl, npmPurl(`@kubernetes/${scoped?.name}`, scoped?.version ?? ''));
    assert.match(scoped?.purl ?? '', /^pkg:npm\/%40kubernetes\//);
  });

  test('who depends on whom, from the operator down; the same lock gives the same document', () => {
    const bom = cycloneDx(lock) as { dependencies: { ref: string; dependsOn: string[] }[]; serialNumber: string };
    const top = bom.dependencies[0];
    assert.equal(top?.ref, 'pkg:npm/osc@0.1.0');
    assert.ok(top?.dependsOn.includes(`pkg:npm/pino@${lock.packages?.['node_modules/pino']?.version}`));
    assert.ok(bom.dependencies.find((d) => d.ref.startsWith('pkg:npm/pino@'))?.dependsOn.some((r) => r.startsWith('pkg:npm/sonic-boom@')));
    assert.equal(JSON.stringify(cycloneDx(lock)), JSON.stringify(bom));
    assert.match(bom.serialNumber, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('the image build installs exactly the lock (npm ci, never npm install) and ships the SBOM', () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const runs = dockerfile.split('\n').filter((l) => l.startsWith('RUN '));
    assert.ok(!runs.some((l) => /npm (install|i)\b/.test(l)), 'no npm install');
    assert.equal(runs.filter((l) => /npm ci\b/.test(l)).length, 2);
    assert.ok(runs.some((l) => /npm ci --omit=dev/.test(l)));
    assert.ok(runs.some((l) => /node tools\/sbom\.ts package-lock\.json > sbom\.cdx\.json/.test(l)));
    assert.match(dockerfile, /^COPY --from=build --chown=0:0 \/src\/sbom\.cdx\.json \.\/sbom\.cdx\.json$/m);
    const ignore = readFileSync(join(root, '.dockerignore'), 'utf8');
    assert.match(ignore, /^!tools\/sbom\.ts$/m);
    assert.match(ignore, /^!tools\/without-linter\.ts$/m);
  });

  test('the build drops the linter from package.json and nothing else', () => {
    const dir = mkdtempSync(join(tmpdir(), 'osc-sbom-'));
    try {
      copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
      execFileSync(process.execPath, [join(root, 'tools', 'without-linter.ts')], { cwd: dir });
      const before = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
      const after = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      delete before.devDependencies['@biomejs/biome'];
      assert.deepEqual(after, before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
