/**
 * "Never two leaders writing" as the chaos run and the leader election tests judge it from the audit log:
 * a replica's write counts only while its own lease write is the last one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AuditEvent, replicaByUserAgent, writesWithoutLease } from '../support/audit.ts';

const SA = 'system:serviceaccount:osc:osc-controller-manager';
let t = 0;
const ev = (replica: string, verb: string, resource: string, name: string, code = 200): AuditEvent => ({
  stage: 'ResponseComplete',
  verb,
  user: { username: SA },
  userAgent: `osc/0.1.0 (${replica})`,
  objectRef: { resource, name },
  responseStatus: { code },
  requestReceivedTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, t++)).toISOString().replace('Z', '000Z'),
});
const check = { lease: 'osc-lease', replica: replicaByUserAgent(SA) };

test('a replica writing after another took the lease is an offender; its own writes while holding it are not', () => {
  const events = [
    ev('a', 'create', 'leases', 'osc-lease'),
    ev('a', 'patch', 'kataconfigs', 'example'),
    ev('b', 'get', 'leases', 'osc-lease'),
    ev('b', 'update', 'leases', 'osc-lease'),
    ev('b', 'patch', 'nodes', 'worker-0'),
    ev('a', 'patch', 'nodes', 'worker-1'),
    ev('a', 'update', 'leases', 'osc-lease', 409), // a failed renewal takes nothing
    ev('a', 'create', 'events', 'x'),
  ];
  const offenders = writesWithoutLease(events, check);
  assert.equal(offenders.length, 1);
  assert.match(offenders[0] ?? '', / a patch nodes\/worker-1 while b held the lease$/);
  assert.deepEqual(writesWithoutLease(events, { ...check, exempt: (e) => e.objectRef?.resource === 'nodes' }), []);
});

test("requests of other users, or without osc's User-Agent, are not a replica's", () => {
  assert.equal(replicaByUserAgent(SA)({ ...ev('a', 'patch', 'nodes', 'n'), user: { username: 'admin' } }), undefined);
  assert.equal(replicaByUserAgent(SA)({ ...ev('a', 'patch', 'nodes', 'n'), userAgent: 'kubectl/v1.33.0' }), undefined);
  assert.equal(replicaByUserAgent(SA)(ev('osc-7d9f-x2x4k', 'patch', 'nodes', 'n')), 'osc-7d9f-x2x4k');
});

test('a Lease write that names no holder is a release: a write after it by the replica that released is an offender', () => {
  const events = [
    ev('a', 'create', 'leases', 'osc-lease'),
    ev('a', 'patch', 'kataconfigs', 'example'),
    { ...ev('a', 'update', 'leases', 'osc-lease'), requestObject: { spec: { holderIdentity: null, leaseDurationSeconds: 1 } } },
    ev('a', 'patch', 'nodes', 'worker-1'),
    { ...ev('b', 'update', 'leases', 'osc-lease'), requestObject: { spec: { holderIdentity: 'b' } } },
    ev('b', 'patch', 'nodes', 'worker-0'),
  ];
  const offenders = writesWithoutLease(events, check);
  assert.equal(offenders.length, 1);
  assert.match(offenders[0] ?? '', / a patch nodes\/worker-1 while nobody held the lease$/);
});

test('so is a JSON patch that sets holderIdentity to none (how osc releases); a renewal patch is not', () => {
  const patch = (replica: string, ops: unknown[]) => ({ ...ev(replica, 'patch', 'leases', 'osc-lease'), requestObject: ops });
  const test_ = { op: 'test', path: '/spec/holderIdentity', value: 'a' };
  const events = [
    ev('a', 'create', 'leases', 'osc-lease'),
    patch('a', [test_, { op: 'add', path: '/spec/renewTime', value: '2026-01-01T00:00:00.000000Z' }]),
    ev('a', 'patch', 'nodes', 'worker-0'),
    patch('a', [
      test_,
      { op: 'add', path: '/spec/holderIdentity', value: null },
      { op: 'add', path: '/spec/leaseDurationSeconds', value: 1 },
    ]),
    ev('a', 'patch', 'nodes', 'worker-1'),
  ];
  const offenders = writesWithoutLease(events, check);
  assert.deepEqual(
    offenders.map((o) => / a patch nodes\/(worker-\d) while nobody held the lease$/.exec(o)?.[1]),
    ['worker-1'],
  );
});
