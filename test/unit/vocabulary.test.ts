/**
 * The API's words are written once, in src/api, and the documentation says the same: every InProgress
 * message docs/kataconfig.md documents is what `messages` makes (placeholders filled with the doc's own
 * `<rt>`, `<node>`...), and the kataNodes lists appear in the API's order. Tests elsewhere import the texts
 * from src/api; this is where their wording is held to the documentation.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { eventNotes } from '../../src/api/events.ts';
import { KATA_NODE_LISTS, kataNodesSchema, messages } from '../../src/api/kataconfig.ts';
import { KATA_NODE_PHASES } from '../../src/api/katanode.ts';

const root = join(import.meta.dirname, '..', '..');
/** A document with its line breaks and runs of spaces as single spaces, so that wrapped sentences match. */
const doc = (path: string) => readFileSync(join(root, path), 'utf8').replace(/\s+/g, ' ');

describe('one vocabulary: src/api and the documentation agree', () => {
  const kataconfig = doc('docs/kataconfig.md');

  test("docs/kataconfig.md's InProgress table is the API's messages", () => {
    const rows: [string, string][] = [
      ['Installing', messages.installing('<rt>')],
      ['Updating', messages.updating()],
      ['Uninstalling', messages.uninstalling('<rt>')],
      ['Failed', messages.failed('<node>', "<the node's reason>")],
    ];
    for (const [reason, message] of rows)
      assert.ok(kataconfig.includes(`| \`${reason}\` | True | \`${message}\` |`), `${reason}: ${message}`);
    assert.ok(kataconfig.includes(`| \`BlockedByExistingKataPods\` | **False** | \`${messages.blocked(['<class>'])}\``));
    assert.ok(kataconfig.includes('`"kata" and "kata-remote" RuntimeClasses`'));
    assert.match(messages.blocked(['kata', 'kata-remote']), /^Existing pods using "kata" and "kata-remote" RuntimeClasses found\. /);
    assert.ok(kataconfig.includes(`\`${messages.listPodsFailed('<error>')}\``));
  });

  test('the messages that keep Installing or Updating, and the ones about a second KataConfig, are documented as sent', () => {
    for (const message of [messages.noEligibleNodes(), messages.noMatchingNodes(), messages.duplicate(), messages.ignored('<name>')])
      assert.ok(kataconfig.includes(`\`${message}\``), message);
    assert.ok(doc('docs/troubleshooting.md').includes(messages.duplicate()));
  });

  test("the events' own notes are documented as recorded", () => {
    for (const note of [eventNotes.installed('<rt>', '<n>'), eventNotes.uninstalled('<rt>')])
      assert.ok(kataconfig.includes(`\`${note}\``), note);
  });

  test("the kataNodes lists: the API's order is the schema's and the documented status's, one per KataNode phase", () => {
    const lists = KATA_NODE_LISTS.map((l) => l.list);
    const schemaLists = Object.keys(kataNodesSchema.openapi.properties ?? {}).filter((k) => k !== 'nodeCount' && k !== 'readyNodeCount');
    assert.deepEqual(lists, schemaLists);
    assert.deepEqual([...KATA_NODE_LISTS.map((l) => l.phase)].sort(), [...KATA_NODE_PHASES].sort());
    const documented = [...kataconfig.matchAll(/ (\w+): \[[^\]]*\]/g)].map((m) => m[1]).filter((k) => lists.includes(k as never));
    assert.deepEqual(documented.slice(0, lists.length), lists);
  });
});
