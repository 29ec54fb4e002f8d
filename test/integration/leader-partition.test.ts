/**
 * A leader cut off from the API server while its lease expires (finding: leader election must stop a
 * leader that cannot renew, before anyone else may take over). Two `osc run` replicas with leader
 * election; the leader reaches the API server through a TCP proxy that the test black-holes mid-install,
 * as a network partition does (connections stay open, nothing answers). The partitioned leader must give
 * up and exit non-zero before the standby takes the lease, and the API server's audit log must show that
 * no replica ever wrote without holding the lease.
 */

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { LEADER_ELECTION_LEASE, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { FaultProxy } from '../../src/devcluster/faultproxy.ts';
import { quickLeaderElection } from '../../src/runtime/leasetimings.ts';
import { type AuditEvent, auditLogged, writesWithoutLease } from '../support/audit.ts';
import { OscProcess, quickLeaseFlags, runOsc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const audit = auditLogged('osc-leader-partition-', ['- level: Metadata', '  verbs: [create, update, patch, delete, deletecollection]']);
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

/** The time of the first JSON log line of a process with this message. */
function loggedAt(stdout: string, msg: string): number | undefined {
  for (const line of stdout.split('\n')) {
    if (!line.includes(`"${msg}`)) continue;
    const entry = JSON.parse(line) as { time?: string; msg?: string };
    if (entry.msg?.startsWith(msg) && entry.time) return Date.parse(entry.time);
  }
  return undefined;
}

describe('a leader partitioned from the API server', () => {
  const procs = new Map<Replica, OscProcess>();
  const kubeconfigs = new Map<Replica, string>();
  let proxy: FaultProxy | undefined;
  after(async () => {
    for (const p of procs.values()) p.kill();
    await proxy?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const kubectl = (args: string[]) => cluster.dev.controlPlane.kubectl(args);
  const start = (r: Replica) => {
    const p = new OscProcess([
      ...['run', '--kubeconfig', kubeconfigs.get(r) ?? '', '--namespace', NS, '--leader-elect', ...quickLeaseFlags()],
      ...['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0'],
      ...['--webhook-bind-address', '127.0.0.1:0', '--webhook-url', 'https://127.0.0.1:{port}'],
    ]);
    procs.set(r, p);
    return p;
  };
  const led = (r: Replica) => procs.get(r)?.stdout.includes('"became leader"');

  test('set up: two replicas, each with a ServiceAccount; replica-a reaches the API server through a proxy', async () => {
    const installed = await runOsc(['install', '--kubeconfig', cluster.dev.kubeconfigPath]);
    assert.equal(installed.code, 0, installed.stderr);
    // The installed Deployment's pod runs on a kwok node, but it is not a real operator: scale it away.
    assert.equal((await kubectl(['scale', 'deployment', '--all', '-n', NS, '--replicas=0'])).code, 0);
    const cp = cluster.dev.controlPlane;
    proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
    for (const r of REPLICAS) {
      for (const args of [
        ['create', 'serviceaccount', r, '-n', NS],
        ['create', 'clusterrolebinding', `osc-test-${r}`, '--clusterrole=cluster-admin', `--serviceaccount=${NS}:${r}`],
      ])
        assert.equal((await kubectl(args)).code, 0, args.join(' '));
      const token = await kubectl(['create', 'token', r, '-n', NS, '--duration=1h']);
      assert.equal(token.code, 0, token.stderr);
      const path = join(dir, `${r}.kubeconfig`);
      const server = r === 'replica-a' ? proxy.url : cp.apiserverUrl;
      writeFileSync(path, tokenKubeconfigText(server, cp.caPem, token.stdout.trim(), { user: r }));
      kubeconfigs.set(r, path);
    }
  });

  test('the partitioned leader stops and exits before the standby takes over; the install completes', async () => {
    start('replica-a');
    await waitFor(() => led('replica-a'), { timeoutMs: 60_000, message: 'replica-a leads' });
    start('replica-b');
    await waitFor(() => procs.get('replica-b')?.stdout.includes('"caches synced"'), { timeoutMs: 60_000, message: 'replica-b up' });
    await cluster.dev.client.create(KataConfigs, {
      metadata: { name: 'example' },
      spec: { checkNodeEligibility: false, logLevel: 'info' },
    } as KataConfig);
    await waitFor(async () => (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.kataNodes?.installing?.length, {
      timeoutMs: 120_000,
      message: 'a node installing',
    });

    // The partition: every open connection of replica-a goes quiet, and so does every new one.
    proxy?.setMode('blackhole');
    proxy?.blackholeAll();
    const a = procs.get('replica-a');
    const code = await Promise.race([a?.exited, new Promise((r) => setTimeout(() => r('still running'), 120_000))]);
    assert.notEqual(code, 'still running', 'the partitioned leader exits');
    assert.notEqual(code, 0, 'with a non-zero code, for its Deployment to restart it');
    assert.match(a?.stderr ?? '', /leader election lost/);
    await waitFor(() => led('replica-b'), { timeoutMs: 120_000, message: 'replica-b takes over' });
    proxy?.setMode('up');

    await waitFor(
      async () =>
        (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.conditions?.find((c) => c.type === 'InProgress')?.status ===
        'False',
      { timeoutMs: 240_000, message: 'kata installed' },
    );
    assert.deepEqual((await cluster.dev.client.get(KataConfigs, 'example')).status?.kataNodes?.installed, [
      'worker-0',
      'worker-1',
      'worker-2',
    ]);
    for (const p of procs.values()) p.kill('SIGTERM');
    await Promise.all([...procs.values()].map((p) => p.exited));
  });

  test('the audit log: never two leaders writing; replica-a had stopped before replica-b took the lease', () => {
    const events = audit
      .events()
      .filter((e) => REPLICAS.some((r) => e.user.username === user(r)))
      .filter((e) => (e.responseStatus?.code ?? 0) < 400)
      .sort((x, y) => x.requestReceivedTimestamp.localeCompare(y.requestReceivedTimestamp));
    const isLease = (e: AuditEvent) => e.objectRef?.resource === 'leases' && e.objectRef.name === LEADER_ELECTION_LEASE;
    const offenders = writesWithoutLease(events, {
      lease: LEADER_ELECTION_LEASE,
      replica: (e) => REPLICAS.find((r) => e.user.username === user(r)),
    });
    let holder: string | undefined;
    let takeover: number | undefined;
    for (const e of events.filter(isLease)) {
      if (holder === user('replica-a') && e.user.username === user('replica-b')) takeover ??= Date.parse(e.requestReceivedTimestamp);
      holder = e.user.username;
    }
    assert.deepEqual(offenders, [], 'a write by a replica that did not hold the lease');
    const writers = new Set(events.filter((e) => !isLease(e) && e.objectRef?.resource !== 'events').map((e) => e.user.username));
    assert.deepEqual([...writers].sort(), REPLICAS.map(user).sort(), 'both replicas wrote while leading');

    assert.ok(takeover, 'replica-b took the lease over from replica-a');
    const stopped = loggedAt(procs.get('replica-a')?.stdout ?? '', 'leader election lost');
    assert.ok(stopped, 'replica-a logged that it lost the lease');
    assert.ok(stopped < takeover, `replica-a stopped ${takeover - stopped} ms before replica-b took the lease (must be > 0)`);
    console.log(
      `# replica-a stopped leading ${takeover - stopped} ms before replica-b took the lease (lease ${quickLeaderElection.leaseDurationMs} ms, renew deadline ${quickLeaderElection.renewDeadlineMs} ms)`,
    );
  });
});
