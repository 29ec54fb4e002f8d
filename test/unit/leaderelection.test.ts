import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeClient } from '../../src/kube/client.ts';
import { ApiError } from '../../src/kube/errors.ts';
import type { Lease } from '../../src/kube/resources.ts';
import { LeaderElector } from '../../src/runtime/leaderelection.ts';

/** One Lease kept as an API server would: a resourceVersion that every write moves, 409 for a stale one. */
function leaseServer() {
  let stored: Lease | undefined;
  let rv = 0;
  const calls: string[] = [];
  const client = {
    get: async () => {
      calls.push('GET');
      if (!stored) throw new ApiError(404, 'NotFound', 'not found');
      return structuredClone(stored);
    },
    create: async (_rt: unknown, lease: Lease) => {
      calls.push('POST');
      stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++rv) } };
      return structuredClone(stored);
    },
    update: async (_rt: unknown, lease: Lease) => {
      calls.push('PUT');
      if (lease.metadata.resourceVersion !== stored?.metadata.resourceVersion)
        throw new ApiError(409, 'Conflict', 'the object has been modified');
      stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++rv) } };
      return structuredClone(stored);
    },
  };
  /** Another replica takes the lease over. */
  const takeOver = (holder: string) => {
    stored = {
      ...(stored as Lease),
      spec: { ...stored?.spec, holderIdentity: holder },
      metadata: { ...stored?.metadata, resourceVersion: String(++rv) },
    };
  };
  return { client, calls, takeOver, holder: () => stored?.spec?.holderIdentity };
}

const config = { namespace: 'ns', name: 'lease', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

describe('leader election', () => {
  test('a leader renews its valid lease with one write; when someone else wrote since, it reads the lease and yields', async () => {
    const server = leaseServer();
    // The elector uses get, create and update only.
    const elector = new LeaderElector(server.client as unknown as KubeClient, config);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(server.calls.splice(0), ['GET', 'POST'], 'the lease is made');
    (elector as unknown as { leading: boolean }).leading = true;

    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.equal(await elector.tryAcquireOrRenew(), true);
    assert.deepEqual(server.calls.splice(0), ['PUT', 'PUT'], 'each renewal is one write of the lease as last written');
    assert.equal(server.holder(), 'me');

    server.takeOver('other');
    assert.equal(await elector.tryAcquireOrRenew(), false, 'a lease another holder renewed is not taken');
    assert.deepEqual(server.calls.splice(0), ['PUT', 'GET'], 'the write conflicts, the lease is read, and left alone');
    assert.equal(server.holder(), 'other');
    assert.equal(await elector.tryAcquireOrRenew(), false);
    assert.deepEqual(server.calls.splice(0), ['GET'], 'no longer holding it, it reads before any write');
  });
});
