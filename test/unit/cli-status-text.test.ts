/** osc status's texts around the rollout: the sample it suggests, and what --watch leaves on a terminal. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { format, WATCHING_HINT, watchScreen } from '../../src/cli/commands/status.ts';

const root = join(import.meta.dirname, '..', '..');

test('with no KataConfig, status suggests a sample path that exists from the checkout', () => {
  const cwd = process.cwd();
  process.chdir(root);
  try {
    const text = format([], 'text', false);
    const m = /kubectl create -f (\S+?)"/.exec(text);
    assert.ok(m, text);
    assert.equal(m[1], 'config/samples/cluster-kataconfig.yaml');
    assert.ok(existsSync(m[1]));
  } finally {
    process.chdir(cwd);
  }
});

const CLEAR_SCREEN = '\x1b[H\x1b[2J';
const UP_AND_ERASE_LINE = '\x1b[1A\x1b[2K';

/** The lines a terminal shows after this output (clear screen, and cursor up + erase line: all --watch uses). */
function terminalLines(output: string): string[] {
  let lines = ['']; // the last one holds the cursor
  for (let rest = output; rest; ) {
    if (rest.startsWith(CLEAR_SCREEN)) {
      lines = [''];
      rest = rest.slice(CLEAR_SCREEN.length);
    } else if (rest.startsWith(UP_AND_ERASE_LINE)) {
      lines.pop();
      lines[lines.length - 1] = '';
      rest = rest.slice(UP_AND_ERASE_LINE.length);
    } else {
      const ch = rest[0] ?? '';
      if (ch === '\n') lines.push('');
      else lines[lines.length - 1] += ch;
      rest = rest.slice(1);
    }
  }
  while (lines.at(-1) === '') lines.pop();
  return lines;
}

test('--watch on a terminal ends on the final state, not on a stale "watching" hint', () => {
  const out = Object.assign(new PassThrough(), { isTTY: true });
  let written = '';
  out.on('data', (d) => (written += String(d)));
  const screen = watchScreen(out, 'text');
  screen.show('KataConfig cluster-kataconfig: Installing\n');
  assert.equal(terminalLines(written).at(-1), WATCHING_HINT, 'while watching, the hint shows');
  screen.show('KataConfig cluster-kataconfig: Installed\n');
  screen.close();
  assert.deepEqual(terminalLines(written), ['KataConfig cluster-kataconfig: Installed']);
});

test('--watch into a pipe appends states and writes no terminal codes', () => {
  const out = new PassThrough();
  let written = '';
  out.on('data', (d) => (written += String(d)));
  const screen = watchScreen(out, 'text');
  screen.show('a\n');
  screen.show('b\n');
  screen.close();
  assert.equal(written, 'a\n\nb\n');
});
