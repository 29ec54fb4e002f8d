import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const src = join(import.meta.dirname, '..', '..', 'src');

/**
 * What a source file loads when it is loaded: its static imports, except `import type` (erased when the
 * types are stripped); a dynamic import() loads only when it runs.
 */
const staticImports = (text: string) => [...text.matchAll(/^import\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)].map((m) => m[1] ?? '');

test("the operator's modules never load the console: only osc console and osc start import it, on demand", () => {
  const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && !f.startsWith('console/'));
  const offenders = files.filter((f) =>
    staticImports(readFileSync(join(src, f), 'utf8')).some((i) => /(^|\/)console(\/|\.ts$)/.test(i) && !i.startsWith('node:')),
  );
  assert.deepEqual(offenders, [], `static imports of the console in ${offenders.map((f) => relative(src, join(src, f))).join(', ')}`);
  // And the console's own modules are loaded lazily from exactly these two commands.
  const lazy = files.filter((f) => /await import\('[^']*console[^']*'\)/.test(readFileSync(join(src, f), 'utf8'))).sort();
  assert.deepEqual(lazy, ['cli/commands/console.ts', 'cli/commands/start.ts', 'cli/program.ts']);
});
