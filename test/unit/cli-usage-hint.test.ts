/** After a usage error each command points at its own --help, not at a literal "osc <command> --help". */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runOsc } from '../support/cli.ts';

test('a usage error names the command whose help to read', async () => {
  const cases: [string[], string | undefined, string][] = [
    [['status', '--bogus'], undefined, '(run "osc status --help" for usage)'],
    [['start', '--workers', 'two'], undefined, '(run "osc start --help" for usage)'],
    [['must-gather', 'extra'], undefined, '(run "osc must-gather --help" for usage)'],
    [['status', '--bogus'], 'kubectl kata', '(run "kubectl kata status --help" for usage)'],
    [['bogus'], undefined, '(run "osc --help" for usage)'],
  ];
  for (const [args, name, hint] of cases) {
    const r = await runOsc(args, name);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.trimEnd().endsWith(hint), `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /<command>/);
  }
});
