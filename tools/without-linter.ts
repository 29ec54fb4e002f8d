/**
 * For the image build: drops the linter (@biomejs/biome) from package.json's devDependencies, so that
 * `npm ci` accepts the lock file (see the Dockerfile). Run in the build stage's copy of the repository's
 * package.json only; it changes nothing else: every other package is installed as the lock says.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const LINTER = '@biomejs/biome';
const file = 'package.json';
const pkg = JSON.parse(readFileSync(file, 'utf8')) as { devDependencies?: Record<string, string> };
if (!pkg.devDependencies?.[LINTER]) throw new Error(`${file} has no devDependency ${LINTER}: nothing to drop`);
delete pkg.devDependencies[LINTER];
writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
