/**
 * The API server's time as a KubeClient learns it (src/kube/server-clock.ts), against a real kube-apiserver:
 * its answers carry the Date header the clock is fed from, and once it has answered, the clock no longer
 * follows this process's wall clock (the chaos run steps a replica's wall clock by minutes).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useControlPlane } from '../support/controlplane.ts';

const ref = useControlPlane();

describe("a KubeClient keeps the API server's time", () => {
  test('from the real API server, and a wall clock stepped an hour ahead does not move it', async () => {
    await ref.cp.client.request('GET', '/api');
    const realNow = Date.now();
    const real = Date.now;
    Date.now = () => real() + 3_600_000;
    try {
      const server = ref.cp.client.serverClock.now().getTime();
      assert.ok(Math.abs(server - realNow) < 5_000, `the server's time ${new Date(server).toISOString()}, not the stepped wall clock's`);
      // A lower bound: the header has whole seconds, so the clock is never ahead of the server's time.
      assert.ok(server <= real() + 50, 'never ahead');
    } finally {
      Date.now = real;
    }
  });
});
