/**
 * Two operator replicas (`osc run` processes, each with a ServiceAccount of its own) with leader election,
 * through SIGKILLs of the leader and a kube-apiserver restart, mid-install and mid-uninstall. Proved from the
 * API server's audit log: every write a replica makes (other than to its lease) happens while that replica
 * holds the lease, i.e. its last successful lease write before it is its own; and after a leader dies, the
 * other takes over at its first attempt once a lease duration has passed since it saw the last renewal.
 */

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { LEADER_ELECTION_LEASE, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { quickLeaderElection } from '../../src/runtime/leasetimings.ts';
import { VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { type AuditEvent, auditLogged, writesWithoutLease } from '../support/audit.ts';
import { OscProcess, quickLeaseFlags, runOsc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const audit = auditLogged('osc-two-replicas-', [
  '- level: Metadata',
  '  verbs: [create, update, patch, delete, deletecollection]',
  // The replicas' reads of the lease: when each standby saw the last renewal.
  '- level: Metadata',
  '  verbs: [get]',
  '  resources: [{group: coordination.k8s.io, resources: [leases]}]',
]);
const dir = audit.dir;
const cluster = useDevCluster({
  workers: 3,
  rebootMs: 1500,
  apiserverArgs: audit.apiserverArgs,
});
const NS = OPERATOR_NAMESPACE;
const REPLICAS = ['replica-a', 'replica-b'] as const;
type Replica = (typeof REPLICAS)[number];
const user = (r: Replica) => `system:serviceaccount:${NS}:${r}`;

describe('two replicas with leader election, through kills and an API server restart', () => {
  const procs = new Map<Replica, OscProcess>();
  const kubeconfigs = new Map<Replica, string>();
  const kills: { replica: Replica; at: number }[] = [];
  after(() => {
    finished = true;
    for (const p of procs.values()) p.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  const kubectl = (args: string[]) => cluster.dev.controlPlane.kubectl(args);
  const start = (r: Replica) => {
    const p = new OscProcess([
      'run',
      '--kubeconfig',
      kubeconfigs.get(r) ?? '',
      '--namespace',
      NS,
      '--leader-elect',
      ...quickLeaseFlags(),
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--health-probe-bind-address',
      '0',
      '--webhook-bind-address',
      '127.0.0.1:0',
      '--webhook-url',
      'https://127.0.0.1:{port}',
    ]);
    procs.set(r, p);
    // As a Deployment's kubelet does: a replica that exits by itself (a leader that lost its lease while the
    // API server restarted, or `osc run` refusing to start without one) is started again a second later.
    void p.exited.then(() => {
      if (stopping.has(p) || finished) return;
      setTimeout(() => {
        if (procs.get(r) === p && !finished) start(r);
      }, 1000);
    });
    return p;
  };
  const stopping = new Set<OscProcess>();
  let finished = false;
  const isAlive = (r: Replica) => procs.get(r)?.child.exitCode === null && procs.get(r)?.child.signalCode === null;
  // The replica whose running process says it became leader (a leader that loses its lease stops).
  const leader = (): Replica | undefined => REPLICAS.find((r) => isAlive(r) && procs.get(r)?.stdout.includes('"became leader"'));
  const killLeader = async () => {
    const l = await waitFor(() => leader(), { timeoutMs: 60_000, message: 'a leader' });
    kills.push({ replica: l, at: Date.now() });
    const p = procs.get(l);
    if (p) stopping.add(p);
    p?.kill('SIGKILL');
    await procs.get(l)?.exited;
    return l;
  };
  const inProgressReason = async () =>
    (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.conditions?.find((c) => c.type === 'InProgress');

  test('set up: the KataConfig API, and a ServiceAccount bound to the operator role for each replica', async () => {
    const installed = await runOsc(['install', '--kubeconfig', cluster.dev.kubeconfigPath]);
    assert.equal(installed.code, 0, installed.stderr);
    // The installed Deployment's pod runs on a kwok node, but it is not a real operator: scale it away.
    assert.equal((await kubectl(['scale', 'deployment', '--all', '-n', NS, '--replicas=0'])).code, 0);
    const cp = cluster.dev.controlPlane;
    for (const r of REPLICAS) {
      for (const args of [
        ['create', 'serviceaccount', r, '-n', NS],
        ['create', 'clusterrolebinding', `osc-test-${r}`, '--clusterrole=cluster-admin', `--serviceaccount=${NS}:${r}`],
      ])
        assert.equal((await kubectl(args)).code, 0, args.join(' '));
      const token = await kubectl(['create', 'token', r, '-n', NS, '--duration=1h']);
      assert.equal(token.code, 0, token.stderr);
      const path = join(dir, `${r}.kubeconfig`);
      writeFileSync(path, tokenKubeconfigText(cp.apiserverUrl, cp.caPem, token.stdout.trim(), { user: r }));
      kubeconfigs.set(r, path);
    }
  });

  test('install and uninstall converge while leaders are killed and the API server restarts', async () => {
    start('replica-a');
    await waitFor(() => leader() === 'replica-a', { timeoutMs: 60_000, message: 'replica-a leads' });
    // `osc install` registered the webhooks at the in-cluster Service, which nothing serves here: until the
    // replica has put its own URL in, the API server would call the Service's cluster IP.
    await waitFor(
      async () => {
        const w = (await cluster.dev.client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as KubeObject & {
          webhooks?: { clientConfig?: { url?: string } }[];
        };
        return w.webhooks?.[0]?.clientConfig?.url?.startsWith('https://127.0.0.1:');
      },
      { timeoutMs: 60_000, message: 'the webhooks registered at the replica' },
    );
    start('replica-b'); // a standby: it waits for the lease

    await cluster.dev.client.create(KataConfigs, {
      metadata: { name: 'example' },
      spec: { checkNodeEligibility: false, logLevel: 'info' },
    } as KataConfig);
    await waitFor(async () => (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.kataNodes?.installing?.length, {
      timeoutMs: 120_000,
      message: 'a node installing',
    });
    const first = await killLeader();
    await waitFor(() => leader() && leader() !== first, { timeoutMs: 60_000, message: 'the other replica takes over' });
    // The killed replica comes back, as a standby (once it runs: `osc run` refuses to start without an API
    // server, and a Deployment's kubelet would simply restart it).
    start(first);
    await waitFor(() => procs.get(first)?.stdout.includes('"operator starting"'), {
      timeoutMs: 60_000,
      message: 'the killed replica back',
    });
    await cluster.dev.controlPlane.restartApiServer(2000);
    await waitFor(async () => (await inProgressReason())?.status === 'False', { timeoutMs: 240_000, message: 'kata installed' });
    assert.deepEqual((await cluster.dev.client.get(KataConfigs, 'example')).status?.kataNodes?.installed, [
      'worker-0',
      'worker-1',
      'worker-2',
    ]);

    await cluster.dev.client.delete(KataConfigs, 'example');
    await waitFor(async () => (await inProgressReason())?.reason === 'Uninstalling', { timeoutMs: 60_000, message: 'uninstalling' });
    const second = await killLeader();
    await waitFor(() => leader() && leader() !== second, { timeoutMs: 60_000, message: 'the other replica takes over again' });
    start(second);
    await waitFor(async () => !(await cluster.dev.client.find(KataConfigs, 'example')), {
      timeoutMs: 240_000,
      message: 'the KataConfig gone',
    });
    finished = true;
    for (const p of procs.values()) p.kill('SIGTERM');
    await Promise.all([...procs.values()].map((p) => p.exited));
  });

  test('the audit log: no replica wrote without holding the lease; each takeover came within the lease duration', () => {
    const events = audit
      .events()
      .filter((e) => REPLICAS.some((r) => e.user.username === user(r)))
      .filter((e) => (e.responseStatus?.code ?? 0) < 400)
      .sort((a, b) => a.requestReceivedTimestamp.localeCompare(b.requestReceivedTimestamp));
    const isLease = (e: AuditEvent) => e.objectRef?.resource === 'leases' && e.objectRef.name === LEADER_ELECTION_LEASE;
    const writes = events.filter((e) => !isLease(e) && e.objectRef?.resource !== 'events');
    assert.ok(writes.length > 20, `${writes.length} writes by the replicas`);
    const writers = new Set(writes.map((e) => e.user.username));
    assert.deepEqual([...writers].sort(), REPLICAS.map(user).sort(), 'both replicas led at some point');

    const offenders = writesWithoutLease(events, {
      lease: LEADER_ELECTION_LEASE,
      replica: (e) => REPLICAS.find((r) => e.user.username === user(r)),
    });
    const leaseGets = new Map<string, number[]>();
    const takeovers: { user: string; lastRenewal: number; at: number }[] = [];
    let lastLeaseWrite: { user: string; at: number } | undefined;
    for (const e of events) {
      const at = Date.parse(e.requestReceivedTimestamp);
      if (isLease(e) && e.verb === 'get') {
        leaseGets.set(e.user.username, [...(leaseGets.get(e.user.username) ?? []), at]);
        continue;
      }
      if (isLease(e)) {
        if (lastLeaseWrite && lastLeaseWrite.user !== e.user.username)
          takeovers.push({ user: e.user.username, lastRenewal: lastLeaseWrite.at, at });
        lastLeaseWrite = { user: e.user.username, at };
      }
    }
    assert.deepEqual(offenders, [], 'a write by a replica that did not hold the lease');
    assert.ok(takeovers.length >= kills.length, `${takeovers.length} takeovers for ${kills.length} kills`);

    // A standby judges the lease expired a lease duration after it *saw* the last renewal (its own clock,
    // never the holder's timestamps), and takes it at its next attempt. Judged from the audit log's times of
    // its reads rather than by a wall-clock bound, so that a loaded machine's late timers cannot fail it:
    // no attempt of the new leader may come after the lease expired in its view without taking the lease.
    // One retry period of tolerance covers the gap between a client's clock reading and its request's arrival.
    const { leaseDurationMs, retryPeriodMs } = quickLeaderElection;
    const report: string[] = [];
    for (const t of takeovers) {
      const gets = (leaseGets.get(t.user) ?? []).filter((g) => g >= t.lastRenewal && g <= t.at);
      const seen = gets[0];
      assert.ok(seen !== undefined, `${t.user} read the lease before taking it`);
      const expiredAt = seen + leaseDurationMs + retryPeriodMs;
      // The last read before the takeover is the takeover's own attempt (read, then update).
      const missed = gets.slice(0, -1).filter((g) => g > expiredAt);
      report.push(`${t.at - t.lastRenewal} ms after the last renewal, ${t.at - seen} ms after ${t.user} saw it`);
      assert.deepEqual(missed.length, 0, `${t.user} read an expired lease ${missed.length} time(s) without taking it`);
      // A standby that never takes over, or waits far too long, fails here whatever the machine's load.
      assert.ok(t.at - t.lastRenewal <= 4 * leaseDurationMs, `a takeover ${t.at - t.lastRenewal} ms after the last renewal`);
    }
    console.log(`# takeovers: ${report.join('; ')} (lease duration ${leaseDurationMs} ms, retry ${retryPeriodMs} ms)`);
  });
});
