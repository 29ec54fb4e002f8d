/**
 * Writes the CycloneDX SBOM of the production npm packages (src/packaging/sbom.ts) to stdout. The image
 * build runs it on the lock file it installed from, and ships the result as /app/sbom.cdx.json.
 *
 *   node tools/sbom.ts [package-lock.json] > sbom.cdx.json
 */
import { readFileSync } from 'node:fs';
import { cycloneDx } from '../src/packaging/sbom.ts';

const lockPath = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(lockPath, 'utf8'));
process.stdout.write(`${JSON.stringify(cycloneDx(lock, { runtime: { name: 'node', version: process.versions.node } }), null, 2)}\n`);
