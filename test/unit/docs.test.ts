/**
 * The documentation in docs/ stays true to the code: every dev-cluster annotation is documented, links
 * resolve, and no code comment points at a document outside the repository.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';

const root = join(import.meta.dirname, '..', '..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

function files(dir: string, exts: RegExp): string[] {
  const abs = join(root, dir);
  if (!existsSync(abs)) return [];
  return (readdirSync(abs, { recursive: true }) as string[]).filter((f) => exts.test(f)).map((f) => join(dir, f));
}

describe('docs/', () => {
  test('every osc.dev/ annotation of the dev cluster is documented in docs/devcluster.md', () => {
    const doc = read('docs/devcluster.md');
    const annotations = new Set<string>();
    for (const f of files('src/devcluster', /\.ts$/))
      for (const m of read(f).matchAll(/'(osc\.dev\/[a-z0-9.-]+)'/g)) annotations.add(m[1] ?? '');
    assert.ok(annotations.has('osc.dev/fail-next-update'), 'found the annotations in the source');
    for (const a of annotations) assert.ok(doc.includes(`\`${a}`), `${a} is documented in docs/devcluster.md`);
  });

  test('the README links every document, and every relative link in docs/ and the README resolves', () => {
    const readme = read('README.md');
    const docs = files('docs', /\.md$/);
    for (const d of ['kataconfig', 'architecture', 'devcluster', 'troubleshooting', 'security'])
      assert.ok(docs.includes(join('docs', `${d}.md`)), `docs/${d}.md exists`);
    for (const d of docs) assert.ok(readme.includes(`](${d})`), `README links ${d}`);
    for (const f of ['README.md', ...docs]) {
      for (const m of read(f).matchAll(/\]\((?!https?:)([^)#]+)(#[^)]*)?\)/g)) {
        const target = resolve(root, dirname(f), m[1] ?? '');
        assert.ok(existsSync(target), `${f} links ${m[1]}, which is ${relative(root, target)}: missing`);
      }
    }
  });

  test('no comment in src, test, bench or tools cites a document outside the repository', () => {
    const outside = /\bSPEC\b|[Ss]eed\s*`?00\d|§|\.\.\/shared|shared\/seeds/;
    const offenders: string[] = [];
    for (const f of [...files('src', /\.ts$/), ...files('test', /\.ts$/), ...files('bench', /\.ts$/), ...files('tools', /\.(ts|sh)$/)]) {
      if (f === join('test', 'unit', 'docs.test.ts')) continue;
      read(f)
        .split('\n')
        .forEach((line, i) => {
          if (outside.test(line)) offenders.push(`${f}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(offenders, [], 'point at docs/ instead');
  });
});
