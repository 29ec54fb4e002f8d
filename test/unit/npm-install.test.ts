/**
 * The README's first command, `npm install`, on a fresh clone: it must leave `git status` clean (npm rewrote
 * package-lock.json with 134 lines of platform entries) and print nothing that looks like a failure (three
 * EBADENGINE warnings and an install-scripts advisory did). npm recomputes the lock from package.json, the
 * lock and .npmrc alone, here in a scratch directory, and must arrive at the committed lock byte for byte.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..', '..');

/** PATH without this checkout's node_modules/.bin: npm then runs on the machine's own Node, as for a user. */
const machinePath = (process.env.PATH ?? '')
  .split(delimiter)
  .filter((p) => !p.includes('node_modules'))
  .join(delimiter);
const npmFound = spawnSync('npm', ['--version'], { env: { ...process.env, PATH: machinePath }, encoding: 'utf8' }).status === 0;

test('npm install neither rewrites the committed lock nor warns', { skip: !npmFound && 'npm is not on PATH' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'osc-npm-'));
  try {
    for (const f of ['package.json', 'package-lock.json', '.npmrc'])
      if (existsSync(join(root, f))) copyFileSync(join(root, f), join(dir, f));
    // Only the project's settings count: an empty user config stands in for a machine without ~/.npmrc.
    const userconfig = join(dir, 'user-npmrc');
    writeFileSync(userconfig, '');
    const env: Record<string, string | undefined> = { ...process.env, PATH: machinePath, npm_config_userconfig: userconfig };
    for (const k of Object.keys(env)) if (/^npm_config_/i.test(k) && k !== 'npm_config_userconfig') delete env[k];
    const r = spawnSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', '--no-update-notifier'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: 300_000,
    });
    assert.equal(r.status, 0, `npm install failed:\n${r.stdout}\n${r.stderr}`);
    assert.doesNotMatch(`${r.stdout}\n${r.stderr}`, /\bwarn\b|EBADENGINE|install-scripts/i);
    const committed = readFileSync(join(root, 'package-lock.json'), 'utf8');
    const recomputed = readFileSync(join(dir, 'package-lock.json'), 'utf8');
    if (recomputed !== committed) {
      const added = Object.keys(JSON.parse(recomputed).packages).filter((k) => !(k in JSON.parse(committed).packages));
      assert.fail(
        `npm install rewrites package-lock.json${added.length ? `; it adds ${added.join(', ')}` : ''}: commit the lock npm writes`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every dependency with an install script is reviewed in package.json allowScripts', () => {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const allowed =
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
  const withScripts = Object.entries(lock.packages)
    .filter(([path, p]) => path && p.hasInstallScript)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(withScripts.length > 0, 'the lock lists install scripts (the node package has one)');
  assert.deepEqual(
    withScripts.filter((name) => !(name in allowed)),
    [],
    'npm warns about these at every install: add each to allowScripts (true to run its script, false to skip it)',
  );
});
