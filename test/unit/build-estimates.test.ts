/**
 * One estimate per build: the minutes a first build takes live in its script's `measured` line (which the
 * build prints before it starts), and the README's table says the same figures; no other document gives
 * its own.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..', '..');

export interface Measured {
  script: string;
  idle?: string;
  busy?: string;
}

/** Every tools/build-*.sh that sources the cached build, with its `declare -A measured=([idle]=N [busy]=M)`. */
export function measuredBuilds(): Measured[] {
  return readdirSync(join(root, 'tools'))
    .filter((f) => /^build-.*\.sh$/.test(f))
    .map((f) => ({ f, text: readFileSync(join(root, 'tools', f), 'utf8') }))
    .filter(({ text }) => text.includes('lib/cached-build.sh'))
    .map(({ f, text }) => {
      const line = /^declare -A measured=\((.*)\)$/m.exec(text)?.[1];
      assert.ok(line, `tools/${f} sources the cached build but has no measured line`);
      const idle = /\[idle\]=([\d.]+)/.exec(line)?.[1];
      const busy = /\[busy\]=([\d.]+)/.exec(line)?.[1];
      assert.ok(idle || busy, `tools/${f}: neither an [idle] nor a [busy] figure`);
      return { script: `tools/${f}`, ...(idle ? { idle } : {}), ...(busy ? { busy } : {}) };
    });
}

test('the README gives each build the minutes its script measured, idle and busy', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const builds = measuredBuilds();
  assert.deepEqual(
    builds.map((b) => b.script),
    ['tools/build-control-plane.sh', 'tools/build-helm.sh', 'tools/build-original-operator.sh', 'tools/build-prometheus.sh'],
  );
  for (const b of builds) {
    const row = readme.split('\n').find((l) => l.startsWith('|') && l.includes(`\`${b.script}\``));
    assert.ok(row, `the README's table has no row for ${b.script}`);
    const [, idle, busy] = row
      .split('|')
      .map((c) => c.trim())
      .slice(2);
    assert.equal(idle, b.idle ? `about ${b.idle} minutes` : 'not measured', `${b.script}: README ${idle}, script ${b.idle}`);
    assert.equal(busy, b.busy ? `about ${b.busy} minutes` : 'not measured', `${b.script}: README ${busy}, script ${b.busy}`);
  }
});

test('the build scripts print the one estimate from those figures, and no document states another', () => {
  const lib = readFileSync(join(root, 'tools', 'lib', 'cached-build.sh'), 'utf8');
  // The only estimate a build prints: from its own figures.
  assert.equal(lib.match(/this takes about/g)?.length, 1);
  assert.match(
    lib,
    /this takes about \$\{measured\[idle\]\} minutes on 2 idle cores\$\{measured\[busy\]:\+, \$\{measured\[busy\]\} on a busy machine\}/,
  );
  for (const b of measuredBuilds())
    assert.doesNotMatch(readFileSync(join(root, b.script), 'utf8'), /\d+\s*(-|to)\s*\d+ minutes|takes about \d/);
  // A build time given anywhere else (e.g. "about 15-25 minutes") would be a second estimate.
  const docs = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  for (const f of docs) {
    const text = readFileSync(join(root, f), 'utf8');
    for (const sentence of text.split(/(?<=\.)\s+/)) {
      if (!/\bbuil(d|ds|t)\b/i.test(sentence) || !/\d\s*min/.test(sentence)) continue;
      if (f === 'README.md' && /^\|/m.test(sentence) && sentence.includes('tools/build-')) continue;
      assert.fail(`${f} states a build time outside the README's table: ${sentence.trim()}`);
    }
  }
});
