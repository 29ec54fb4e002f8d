import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type Socket } from 'node:net';
import { before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { kataConfigCRD } from '../../src/api/crds.ts';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import type { ControlPlane } from '../../src/devcluster/controlplane.ts';
import { FaultProxy } from '../../src/devcluster/faultproxy.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { type ConfigMap, ConfigMaps, Events, Leases, Namespaces, Secrets } from '../../src/kube/resources.ts';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../src/runtime/finalizers.ts';
import { DEFAULT_WATCH_IDLE_TIMEOUT_MS, Informer, labelIndex, WRITE_SHOW_TIMEOUT_MS } from '../../src/runtime/informer.ts';
import { LeadershipLostError, Manager } from '../../src/runtime/manager.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { writeStatusIfChanged } from '../../src/runtime/status.ts';
import { testLogger, useControlPlane } from '../support/controlplane.ts';
import { waitFor } from '../support/wait.ts';

describe('controller runtime against a real kube-apiserver', () => {
  // ConfigMap watches bypass the watch cache and etcd compacts every 2s, so that an informer holding an
  // old resourceVersion really gets 410 Gone from the server.
  const plane = useControlPlane({ apiserverArgs: ['--watch-cache-sizes=configmaps#0', '--etcd-compaction-interval=2s'] });
  let cp: ControlPlane;
  let client: KubeClient;

  const ns = async (name: string) => {
    await client.create(Namespaces, { metadata: { name } });
    return name;
  };
  const cm = (name: string, namespace: string, labels: Record<string, string> = {}, data: Record<string, string> = {}): ConfigMap => ({
    metadata: { name, namespace, labels },
    data,
  });
  const namesRVs = (items: ConfigMap[]) => Object.fromEntries(items.map((o) => [o.metadata.name, o.metadata.resourceVersion]).sort());

  before(async () => {
    cp = plane.cp;
    client = cp.client;
    await cp.installCRDs([kataConfigCRD()]);
  });

  describe('informer', () => {
    test('lists, then follows adds, updates and deletes through the watch; indexes by label', async () => {
      const namespace = await ns('informer-basic');
      await client.create(ConfigMaps, cm('pre-existing', namespace, { tier: 'a' }));
      // Every namespace also gets the cluster's CA bundle from the controller-manager: not this test's.
      const inf = new Informer(client, ConfigMaps, { namespace, fieldSelector: 'metadata.name!=kube-root-ca.crt', log: testLogger() });
      inf.addIndex('tier', labelIndex('tier'));
      const seen: string[] = [];
      inf.addEventHandler({
        add: (o) => seen.push(`add:${o.metadata.name}`),
        update: (_o, n) => seen.push(`update:${n.metadata.name}`),
        delete: (o) => seen.push(`delete:${o.metadata.name}`),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        assert.equal(await inf.waitForSync(), true);
        assert.deepEqual(seen, ['add:pre-existing'], 'the initial list is delivered as adds');
        assert.equal(inf.get(`${namespace}/pre-existing`)?.metadata.managedFields, undefined, 'managedFields are stripped');

        await client.create(ConfigMaps, cm('b', namespace, { tier: 'b' }));
        await client.patch(ConfigMaps, 'pre-existing', { metadata: { labels: { tier: 'b' } } }, { namespace });
        await client.delete(ConfigMaps, 'b', { namespace });
        await waitFor(() => seen.includes('delete:b'), { message: 'the delete of b' });
        assert.deepEqual(seen, ['add:pre-existing', 'add:b', 'update:pre-existing', 'delete:b']);
        assert.deepEqual(
          inf.byIndex('tier', 'b').map((o) => o.metadata.name),
          ['pre-existing'],
          'the index follows label changes',
        );
        assert.deepEqual(inf.byIndex('tier', 'a'), []);
        assert.ok(inf.stats.lists === 1 && inf.stats.relistsOnGone === 0);
      } finally {
        ac.abort();
        await run;
      }
    });

    test('a transform reduces every object it caches, listed page by page or watched', async () => {
      const namespace = await ns('informer-transform');
      for (const name of ['a', 'b', 'c']) await client.create(ConfigMaps, cm(name, namespace, { tier: 'a' }, { big: 'x'.repeat(1000) }));
      let reduced = 0;
      const inf = new Informer<ConfigMap>(client, ConfigMaps, {
        namespace,
        fieldSelector: 'metadata.name!=kube-root-ca.crt',
        log: testLogger(),
        transform: (o: ConfigMap) => {
          reduced++;
          return { metadata: o.metadata, data: { size: String(o.data?.big?.length ?? 0) } };
        },
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        assert.equal(await inf.waitForSync(), true);
        assert.deepEqual(
          inf.list().map((o) => o.data),
          [{ size: '1000' }, { size: '1000' }, { size: '1000' }],
          'listed objects are cached reduced',
        );
        await client.create(ConfigMaps, cm('d', namespace, { tier: 'a' }, { big: 'y'.repeat(10) }));
        const d = await waitFor(() => inf.get(`${namespace}/d`), { message: 'd through the watch' });
        assert.deepEqual(d.data, { size: '10' }, 'watched objects are cached reduced');
        assert.equal(reduced, 4, 'each object reduced once');
      } finally {
        ac.abort();
        await run;
      }
    });

    test('relists when its resourceVersion was compacted away (410 Gone) and misses nothing', async () => {
      const namespace = await ns('informer-gone');
      const inf = new Informer(client, ConfigMaps, { namespace, watchTimeoutSeconds: 2, log: testLogger() });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        await client.create(ConfigMaps, cm('first', namespace));
        await waitFor(() => inf.get(`${namespace}/first`), { message: 'first object seen' });
        // Advance etcd's revision with other objects until compaction passes the informer's version.
        const other = await ns('informer-gone-other');
        let i = 0;
        await waitFor(
          async () => {
            await client.create(Secrets, { metadata: { name: `s${i++}`, namespace: other } });
            return inf.stats.relistsOnGone > 0;
          },
          { intervalMs: 500, timeoutMs: 120_000, message: 'a 410 Gone and a relist' },
        );
        await client.create(ConfigMaps, cm('second', namespace));
        await waitFor(() => inf.get(`${namespace}/second`), { message: 'second object seen after the relist' });
        const truth = await client.list(ConfigMaps, { namespace });
        assert.deepEqual(namesRVs(inf.list()), namesRVs(truth.items));
      } finally {
        ac.abort();
        await run;
      }
    });

    test('survives a kube-apiserver restart and converges to the true state', async () => {
      const namespace = await ns('informer-restart');
      for (const n of ['keep', 'change', 'remove']) await client.create(ConfigMaps, cm(n, namespace, {}, { v: '1' }));
      const inf = new Informer(client, ConfigMaps, {
        namespace,
        backoff: { initialMs: 1000, maxMs: 2000 },
        log: testLogger(),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        const reconnectsBefore = inf.stats.reconnects;
        await cp.stopApiServer();
        await waitFor(() => inf.stats.reconnects > reconnectsBefore, { message: 'the informer noticing the outage' });
        await cp.startApiServer();
        // Changes made while the informer may still be backing off, before it reconnects.
        await client.patch(ConfigMaps, 'change', { data: { v: '2' } }, { namespace });
        await client.delete(ConfigMaps, 'remove', { namespace });
        await client.create(ConfigMaps, cm('added', namespace));
        await waitFor(
          async () => {
            const truth = await client.list(ConfigMaps, { namespace });
            return JSON.stringify(namesRVs(inf.list())) === JSON.stringify(namesRVs(truth.items));
          },
          { message: 'the cache equal to a fresh list' },
        );
        assert.equal(inf.get(`${namespace}/change`)?.data?.v, '2');
        assert.equal(inf.get(`${namespace}/remove`), undefined);
      } finally {
        ac.abort();
        await run;
      }
    });

    test('a request on a black-holed keep-alive connection times out, and the next one gets a fresh connection', async () => {
      const namespace = await ns('client-blackhole');
      const proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kc = new KubeConfig();
      kc.loadFromString((await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.apiserverUrl, proxy.url));
      const proxied = new KubeClient(kc, { requestTimeoutMs: 2000 });
      try {
        await proxied.list(ConfigMaps, { namespace }); // a pooled keep-alive connection now exists
        assert.equal(proxy.blackholeAll(), 1);
        await assert.rejects(proxied.list(ConfigMaps, { namespace }), 'the request on the dead connection fails');
        // The dead connection must not be handed out again: before, every later request timed out on it.
        await client.create(ConfigMaps, cm('after', namespace));
        const after = await proxied.list(ConfigMaps, { namespace });
        assert.ok(after.items.some((o) => o.metadata.name === 'after'));
      } finally {
        await proxied.close();
        await proxy.close();
      }
    });

    test('a request timed out on a black-holed pooled connection: its idle siblings are dropped too, so the next request works', async () => {
      const namespace = await ns('client-blackhole-pool');
      const proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kc = new KubeConfig();
      kc.loadFromString((await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.apiserverUrl, proxy.url));
      const proxied = new KubeClient(kc, { requestTimeoutMs: 2000 });
      try {
        // Several requests at once: several pooled keep-alive connections.
        await Promise.all([1, 2, 3, 4].map(() => proxied.list(ConfigMaps, { namespace })));
        assert.ok(proxy.blackholeAll() >= 2, 'several pooled connections black-holed');
        await assert.rejects(proxied.list(ConfigMaps, { namespace }), 'the request on a dead connection times out');
        const started = Date.now();
        await proxied.list(ConfigMaps, { namespace });
        assert.ok(Date.now() - started < 2000, 'the next request did not wait on another dead connection');
      } finally {
        await proxied.close();
        await proxy.close();
      }
    });

    test('abandons a watch the server does not end by its timeoutSeconds, however chatty the connection looked', async () => {
      const namespace = await ns('informer-deadline');
      // Black-holed connections: no bookmark can arrive, and the idle timeout is set far away, so only the
      // client-side deadline (timeoutSeconds plus a grace) can notice.
      const proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kc = new KubeConfig();
      kc.loadFromString((await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.apiserverUrl, proxy.url));
      const proxied = new KubeClient(kc, { requestTimeoutMs: 3000 });
      const inf = new Informer(proxied, ConfigMaps, {
        namespace,
        idleTimeoutMs: 10 * 60_000,
        watchTimeoutSeconds: 2,
        backoff: { initialMs: 100, maxMs: 500 },
        log: testLogger(),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        await client.create(ConfigMaps, cm('before', namespace));
        await waitFor(() => inf.get(`${namespace}/before`), { message: 'seen through the proxy' });
        const reconnects = inf.stats.reconnects;
        proxy.blackholeAll();
        await client.create(ConfigMaps, cm('during', namespace));
        await waitFor(() => inf.get(`${namespace}/during`), { message: 'seen after the black-holed watch was abandoned' });
        assert.ok(inf.stats.reconnects > reconnects, 'the watch was abandoned at its deadline and re-established');
      } finally {
        ac.abort();
        await run;
        await proxied.close();
        await proxy.close();
      }
    });

    test('a write of ours that its watch does not show within the limit: the watch is presumed dead and reconnected', async () => {
      const namespace = await ns('informer-unshown');
      // Black-holed, with the idle timeout and the watch deadline far away: only the missing event of the
      // informer's own client's write can tell, well before a bookmark's absence would.
      const proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kc = new KubeConfig();
      kc.loadFromString((await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.apiserverUrl, proxy.url));
      const proxied = new KubeClient(kc, { requestTimeoutMs: 2000 });
      const inf = new Informer(proxied, ConfigMaps, {
        namespace,
        idleTimeoutMs: 10 * 60_000,
        watchTimeoutSeconds: 10 * 60,
        backoff: { initialMs: 100, maxMs: 500 },
        log: testLogger(),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        await proxied.create(ConfigMaps, cm('before', namespace));
        await waitFor(() => inf.get(`${namespace}/before`), { message: 'seen through the proxy' });
        const reconnects = inf.stats.reconnects;
        proxy.blackholeAll();
        // The pooled connections went with the watch: a request may fail once before a fresh one is made.
        await waitFor(async () => !!(await proxied.create(ConfigMaps, cm('during', namespace)).catch(() => undefined)), {
          message: 'the write made',
        });
        const made = Date.now();
        await waitFor(() => inf.get(`${namespace}/during`), {
          timeoutMs: 60_000,
          message: 'the write shown after the watch was reconnected',
        });
        assert.ok(inf.stats.reconnects > reconnects, 'the watch was reconnected');
        assert.ok(Date.now() - made < WRITE_SHOW_TIMEOUT_MS + 10_000, 'well before the idle timeout or the deadline');
      } finally {
        ac.abort();
        await run;
        await proxied.close();
        await proxy.close();
      }
    });

    test("while work is under way, a silent watch is reconnected after the short limit, and sees others' changes", async () => {
      const namespace = await ns('informer-busy');
      const proxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kc = new KubeConfig();
      kc.loadFromString((await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.apiserverUrl, proxy.url));
      const proxied = new KubeClient(kc, { requestTimeoutMs: 2000 });
      let busy = true;
      const inf = new Informer(proxied, ConfigMaps, {
        namespace,
        idleTimeoutMs: 10 * 60_000,
        watchTimeoutSeconds: 10 * 60,
        quietWhileBusy: { busy: () => busy, afterMs: 2000 },
        backoff: { initialMs: 100, maxMs: 500 },
        log: testLogger(),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        await client.create(ConfigMaps, cm('before', namespace));
        await waitFor(() => inf.get(`${namespace}/before`), { message: 'seen through the proxy' });
        assert.ok(proxy.blackholeAll() >= 1, 'the watch black-holed');
        // Someone else's change (the direct client's), which only a working watch can bring.
        const made = Date.now();
        await client.create(ConfigMaps, cm('others', namespace));
        await waitFor(() => inf.get(`${namespace}/others`), { timeoutMs: 60_000, message: 'seen after the silent watch was reconnected' });
        assert.ok(Date.now() - made < 20_000, 'within a few short limits, not the idle timeout');
        busy = false;
      } finally {
        ac.abort();
        await run;
        await proxied.close();
        await proxy.close();
      }
    });

    test('by default, a watch silent for longer than the API server takes to send a bookmark is presumed dead', () => {
      // kube-apiserver bookmarks every watch that allows them about once a minute (its watch cache's
      // bookmark frequency): a healthy watch is never quiet for 90 s.
      assert.ok(DEFAULT_WATCH_IDLE_TIMEOUT_MS > 60_000 && DEFAULT_WATCH_IDLE_TIMEOUT_MS <= 120_000);
    });

    test('reconnects a watch that goes silent without closing (a dead connection)', async () => {
      const namespace = await ns('informer-silent');
      // A TCP proxy in front of the API server that can freeze the connections it has: they stay open but
      // carry nothing, as when a peer vanishes without a FIN. New connections still pass.
      const target = new URL(cp.apiserverUrl);
      const live = new Set<{ frozen: boolean; sockets: Socket[] }>();
      const proxy = createServer((downstream) => {
        const upstream = connect(Number(target.port), target.hostname);
        const conn = { frozen: false, sockets: [downstream, upstream] };
        live.add(conn);
        downstream.on('data', (d) => conn.frozen || upstream.write(d));
        upstream.on('data', (d) => conn.frozen || downstream.write(d));
        const end = () => {
          live.delete(conn);
          downstream.destroy();
          upstream.destroy();
        };
        downstream.on('close', end);
        upstream.on('close', end);
        downstream.on('error', end);
        upstream.on('error', end);
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      const port = (proxy.address() as { port: number }).port;
      const kc = new KubeConfig();
      const cluster = cp.kubeConfig.getCurrentCluster();
      kc.loadFromOptions({
        clusters: [{ ...cluster, name: 'proxied', server: `https://127.0.0.1:${port}` }],
        users: cp.kubeConfig.getUsers(),
        contexts: [{ name: 'proxied', cluster: 'proxied', user: cp.kubeConfig.getCurrentUser()?.name }],
        currentContext: 'proxied',
      });
      const proxied = new KubeClient(kc, { requestTimeoutMs: 3000 });
      const inf = new Informer(proxied, ConfigMaps, {
        namespace,
        idleTimeoutMs: 1500,
        backoff: { initialMs: 100, maxMs: 500 },
        log: testLogger(),
      });
      const ac = new AbortController();
      const run = inf.run(ac.signal);
      try {
        await inf.waitForSync();
        await client.create(ConfigMaps, cm('before', namespace));
        await waitFor(() => inf.get(`${namespace}/before`), { message: 'seen through the proxy' });
        const reconnects = inf.stats.reconnects;
        for (const c of live) c.frozen = true;
        await client.create(ConfigMaps, cm('during', namespace));
        await waitFor(() => inf.get(`${namespace}/during`), { message: 'seen after the silent watch was replaced' });
        assert.ok(inf.stats.reconnects > reconnects, 'the silent watch was abandoned and re-established');
      } finally {
        ac.abort();
        await run;
        await proxied.close();
        for (const c of live) for (const s of c.sockets) s.destroy();
        await new Promise<void>((r) => proxy.close(() => r()));
      }
    });
  });

  describe('status and finalizer helpers', () => {
    test('writeStatusIfChanged writes a change once and skips an identical status', async () => {
      const metrics = new RuntimeMetrics(undefined, { processMetrics: false });
      const kc = await client.create(KataConfigs, { metadata: { name: 'status-test' }, spec: {} } as KataConfig);
      const status = { kataNodes: { nodeCount: 2, readyNodeCount: 0, waitingToInstall: ['worker-0', 'worker-1'] } };
      const written = await writeStatusIfChanged(client, KataConfigs, kc, status, metrics);
      assert.ok(written, 'a changed status is written');
      assert.notEqual(written.metadata.resourceVersion, kc.metadata.resourceVersion);
      const skipped = await writeStatusIfChanged(client, KataConfigs, written, { ...status }, metrics);
      assert.equal(skipped, undefined, 'an identical status is not written');
      const fresh = await client.get(KataConfigs, 'status-test');
      assert.equal(fresh.metadata.resourceVersion, written.metadata.resourceVersion, 'no write reached the server');
      assert.deepEqual(fresh.status, status);
      const counts = Object.fromEntries((await metrics.statusWrites.get()).values.map((v) => [v.labels.result, v.value]));
      assert.deepEqual(counts, { written: 1, skipped: 1 });
      await client.delete(KataConfigs, 'status-test');
    });

    test('a finalizer holds deletion until it is removed', async () => {
      const namespace = await ns('finalizers');
      let obj = await client.create(ConfigMaps, cm('held', namespace));
      obj = await addFinalizer(client, ConfigMaps, obj, 'example.com/hold');
      assert.ok(hasFinalizer(obj, 'example.com/hold'));
      assert.deepEqual(await addFinalizer(client, ConfigMaps, obj, 'example.com/hold'), obj, 'adding twice is a no-op');
      await client.delete(ConfigMaps, 'held', { namespace });
      const deleting = await client.get(ConfigMaps, 'held', namespace);
      assert.ok(deleting.metadata.deletionTimestamp, 'deletion is pending');
      await removeFinalizer(client, ConfigMaps, deleting, 'example.com/hold');
      assert.equal(await client.find(ConfigMaps, 'held', namespace), undefined, 'gone once the finalizer is removed');
    });

    test('a finalizer patch on a stale object fails with a conflict instead of overwriting', async () => {
      const namespace = await ns('finalizer-conflict');
      const stale = await client.create(ConfigMaps, cm('c', namespace));
      await client.patch(ConfigMaps, 'c', { metadata: { finalizers: ['other.io/keep'] } }, { namespace });
      await assert.rejects(addFinalizer(client, ConfigMaps, stale, 'example.com/mine'), (e: { status?: number }) => e.status === 409);
      const now = await client.get(ConfigMaps, 'c', namespace);
      assert.deepEqual(now.metadata.finalizers, ['other.io/keep']);
      await client.patch(ConfigMaps, 'c', { metadata: { finalizers: null } }, { namespace });
    });
  });

  describe('manager', () => {
    test('leader election: exactly one of two managers reconciles; the other takes over when it stops', async () => {
      const namespace = await ns('leader');
      const reconciledBy: Record<string, string[]> = { one: [], two: [] };
      const makeManager = (id: 'one' | 'two') => {
        const m = new Manager({
          client,
          log: testLogger(),
          metrics: new RuntimeMetrics(),
          identity: id,
          metricsAddress: '127.0.0.1:0',
          leaderElection: { namespace, name: 'osc-test-leader', leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 300 },
        });
        const inf = m.informer(ConfigMaps, { namespace });
        m.addController({
          name: 'record',
          watches: [{ informer: inf, keys: (o) => [o.metadata.name ?? ''] }],
          reconcile: async (key) => {
            reconciledBy[id]?.push(key);
            return undefined;
          },
        });
        return m;
      };
      const one = makeManager('one');
      const two = makeManager('two');
      const acOne = new AbortController();
      const acTwo = new AbortController();
      const runs: Promise<void>[] = [];
      try {
        runs.push(one.start(acOne.signal));
        await waitFor(() => one.isLeader, { message: 'manager one leading' });
        // Settles with the reason it stopped (below, it loses its lease).
        const twoStopped = two.start(acTwo.signal).then(
          () => undefined,
          (e: unknown) => e,
        );
        runs.push(twoStopped.then(() => undefined));
        await waitFor(() => two.isReady, { message: 'manager two synced' });

        await client.create(ConfigMaps, cm('a', namespace));
        await waitFor(() => reconciledBy.one?.includes('a'), { message: 'leader reconciling a' });
        assert.equal(two.isLeader, false);
        assert.deepEqual(reconciledBy.two, [], 'the standby reconciles nothing');

        // /metrics, /readyz and /healthz
        const text = await (await fetch(`http://${one.boundAddress}/metrics`)).text();
        assert.match(text, /leader_election_master_status\{name="osc-test-leader"\} 1/);
        assert.match(text, /controller_runtime_reconcile_total\{controller="record",result="success"\} \d+/);
        assert.match(text, /rest_client_requests_total\{verb="GET",resource="configmaps",code="200"\}/);
        assert.match(text, /workqueue_adds_total\{name="record"\}/);
        assert.match(text, /process_cpu_user_seconds_total/);
        assert.equal((await fetch(`http://${two.boundAddress}/readyz`)).status, 200);
        assert.equal((await fetch(`http://${two.boundAddress}/healthz`)).status, 200);

        acOne.abort();
        await runs[0];
        const lease = await client.get(Leases, 'osc-test-leader', namespace);
        assert.equal(lease.spec?.holderIdentity ?? null, null, 'a stopped leader releases its lease');
        await waitFor(() => two.isLeader, { message: 'manager two taking over' });
        await client.create(ConfigMaps, cm('b', namespace));
        await waitFor(() => reconciledBy.two?.includes('b'), { message: 'new leader reconciling b' });
        assert.equal(reconciledBy.one?.includes('b'), false);

        // A leader that cannot renew stops reconciling, and stops altogether rather than campaign again with
        // caches that may be stale: its process exits and its Deployment restarts it, as controller-runtime's.
        await cp.stopApiServer();
        try {
          await waitFor(() => !two.isLeader, { message: 'leader giving up after the renew deadline' });
          assert.ok((await twoStopped) instanceof LeadershipLostError, 'the manager stops with LeadershipLostError');
        } finally {
          await cp.startApiServer();
        }
        assert.equal(two.isReady, false, 'a manager that lost its lease serves no readiness');
      } finally {
        acOne.abort();
        acTwo.abort();
        await Promise.all(runs);
      }
    });

    test('records events about an object (events.k8s.io/v1), folding repeats into a series', async () => {
      const m = new Manager({ client, log: testLogger(), metrics: new RuntimeMetrics(undefined, { processMetrics: false }) });
      const kc = await client.create(KataConfigs, { metadata: { name: 'events-test' }, spec: {} } as KataConfig);
      await m.events.record(kc, 'Normal', 'Installing', 'Install', messages.installing('kata'));
      await m.events.record(kc, 'Normal', 'Installing', 'Install', messages.installing('kata'));
      const events = (await client.list(Events, { namespace: 'default' })).items.filter((e) => e.regarding?.name === 'events-test');
      assert.equal(events.length, 1);
      assert.equal(events[0]?.reason, 'Installing');
      assert.equal(events[0]?.regarding?.kind, 'KataConfig');
      assert.equal(events[0]?.series?.count, 2);
      const described = await cp.kubectl(['describe', 'kataconfig', 'events-test']);
      assert.match(described.stdout, /Installing\s+.*Performing initial installation of kata on cluster/);
      await client.delete(KataConfigs, 'events-test');
    });
  });
});
