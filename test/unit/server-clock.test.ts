import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { KubeClient } from '../../src/kube/client.ts';
import { ServerClock } from '../../src/kube/server-clock.ts';

/** A clock whose monotonic and wall readings the test moves by hand. */
function clocks() {
  const c = { mono: 1_000, wall: Date.parse('2026-11-27T12:00:00Z') };
  return { c, clock: new ServerClock({ monotonic: () => c.mono, wall: () => c.wall }) };
}
const header = (iso: string) => new Date(iso).toUTCString();

describe('ServerClock: the API server time plans compare server-written times with', () => {
  test('before any answer it is the wall clock', () => {
    const { clock } = clocks();
    assert.equal(clock.now().toISOString(), '2026-11-27T12:00:00.000Z');
  });

  test("the server's Date, carried forward on the monotonic clock; a stepped wall clock does not move it", () => {
    const { c, clock } = clocks();
    clock.observe(header('2026-11-27T12:10:00Z')); // the server is ten minutes ahead of this replica
    c.mono += 2_500;
    c.wall += 240_000; // the wall clock stepped four minutes ahead, as the chaos run's stepClock does
    assert.equal(clock.now().toISOString(), '2026-11-27T12:10:02.500Z');
    c.wall -= 600_000;
    assert.equal(clock.now().toISOString(), '2026-11-27T12:10:02.500Z');
  });

  test('a header a second behind the carried time is its rounding: the tighter bound stays', () => {
    const { c, clock } = clocks();
    clock.observe(header('2026-11-27T12:00:00Z'));
    c.mono += 1_900;
    clock.observe(header('2026-11-27T12:00:01Z')); // the server at 12:00:01.9 sends whole seconds
    assert.equal(clock.now().toISOString(), '2026-11-27T12:00:01.900Z');
    c.mono += 200;
    clock.observe(header('2026-11-27T12:00:03Z')); // ahead of the carried 12:00:02.1: a tighter bound
    assert.equal(clock.now().toISOString(), '2026-11-27T12:00:03.000Z');
  });

  test("the server's own clock going back (another API server, a step) is followed; garbage is ignored", () => {
    const { c, clock } = clocks();
    clock.observe(header('2026-11-27T12:00:00Z'));
    c.mono += 1_000;
    clock.observe(header('2026-11-27T11:59:00Z'));
    assert.equal(clock.now().toISOString(), '2026-11-27T11:59:00.000Z');
    clock.observe('not a date');
    clock.observe(undefined);
    assert.equal(clock.now().toISOString(), '2026-11-27T11:59:00.000Z');
  });

  test("a KubeClient learns it from its answers' Date headers", async () => {
    const serverTime = Date.now() + 3_600_000; // an hour ahead of this machine
    const server = createServer((_req, res) => {
      res.setHeader('date', new Date(serverTime).toUTCString());
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ kind: 'APIVersions', versions: ['v1'] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const client = new KubeClient({ server: `http://127.0.0.1:${port}`, tls: async () => ({}), headers: async () => ({}) });
    try {
      assert.ok(Math.abs(client.serverClock.now().getTime() - Date.now()) < 60_000, 'the wall clock before any answer');
      await client.request('GET', '/api');
      const ahead = client.serverClock.now().getTime() - Date.now();
      assert.ok(ahead > 3_590_000 && ahead < 3_610_000, `an hour ahead after the answer (${ahead} ms)`);
    } finally {
      await client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
