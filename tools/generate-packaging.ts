/**
 * Writes the OLM bundle (bundle/) and the Helm chart (charts/osc/) from the manifests `osc install` applies,
 * so that neither can drift from it. test/unit/packaging.test.ts fails when the committed files differ.
 *
 *   node tools/generate-packaging.ts           write bundle/ and charts/osc/
 *   node tools/generate-packaging.ts --check   only say whether they are up to date (exit 1 if not)
 *   node tools/generate-packaging.ts --image-digests <file> --out <dir>
 *                                              the release bundle into <dir>: every image by the digest the
 *                                              file gives ("<image> sha256:<digest>" per line), none by tag
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseDigests } from '../src/install/images.ts';
import { packagingFiles, releaseBundleFiles } from '../src/packaging/generate.ts';

const root = join(import.meta.dirname, '..');
const flag = (name: string) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? undefined : process.argv[i + 1];
};
const digestsFile = flag('--image-digests');
if (digestsFile) {
  const out = flag('--out');
  if (!out) {
    console.error('--image-digests writes the release bundle: say where with --out <dir>');
    process.exit(2);
  }
  try {
    for (const f of await releaseBundleFiles(parseDigests(readFileSync(digestsFile, 'utf8'), digestsFile))) {
      mkdirSync(dirname(join(out, f.path)), { recursive: true });
      writeFileSync(join(out, f.path), f.text);
      console.log(`wrote ${join(out, f.path)}`);
    }
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
  process.exit(0);
}
const check = process.argv.includes('--check');
const files = await packagingFiles();
const stale: string[] = [];
if (!check) {
  rmSync(join(root, 'bundle'), { recursive: true, force: true });
  rmSync(join(root, 'charts', 'osc'), { recursive: true, force: true });
}
for (const f of files) {
  const path = join(root, f.path);
  if (check) {
    let current = '';
    try {
      current = readFileSync(path, 'utf8');
    } catch {}
    if (current !== f.text) stale.push(f.path);
    continue;
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, f.text);
  console.log(`wrote ${f.path}`);
}
if (check) {
  if (stale.length) {
    console.error(`out of date (run "node tools/generate-packaging.ts"): ${stale.join(', ')}`);
    process.exit(1);
  }
  console.log('bundle/ and charts/osc/ are up to date');
}
