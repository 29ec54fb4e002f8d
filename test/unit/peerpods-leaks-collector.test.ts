/**
 * The leaked pod VM collector over in-memory caches, a recording client and a fixed inventory (no API
 * server): a VM is deleted only after the pods are read live, so a pod cache behind the API server never
 * has a live pod's VM taken for a leak; with nothing to delete, no live read is made.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { CLUSTER_UID_TAG } from '../../src/api/podvm-leaks.ts';
import { LeakedVMCollector } from '../../src/controllers/peerpods/leaks-controller.ts';
import { PodVMMetrics } from '../../src/controllers/peerpods/vm-metrics.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { Pod } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { PodVM, PodVMInventory } from '../../src/peerpods/leaks.ts';
import type { EventRecorder } from '../../src/runtime/events.ts';
import type { Informer } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/log.ts';
import type { Manager } from '../../src/runtime/manager.ts';

const NS = 'openshift-sandboxed-containers-operator';
const CLUSTER = 'cluster-uid';
const GRACE = 1000;

function cache<T extends KubeObject>(items: T[] = []) {
  const key = (o: KubeObject) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ''));
  const store = new Map(items.map((o) => [key(o), o]));
  return { get: (k: string) => store.get(k), list: () => [...store.values()] } as unknown as Informer<T>;
}

const kataConfig = {
  metadata: { name: 'example', uid: 'kc-uid', resourceVersion: '5' },
  spec: { enablePeerPods: true },
  status: {},
} as KataConfig;

const pod = (name: string): Pod => ({
  metadata: { name, namespace: 'app', uid: `${name}-uid` },
  spec: { runtimeClassName: 'kata-remote', containers: [] },
});

/** A pod VM an hour old, named by the adaptor for `podName`. */
const vm = (id: string, podName: string): PodVM => ({
  id,
  name: `podvm-${podName}-3f9a0c1e`,
  createdAt: new Date(Date.now() - 3_600_000).toISOString(),
  tags: { Name: `podvm-${podName}-3f9a0c1e`, [CLUSTER_UID_TAG]: CLUSTER },
});

/** The collector with `cached` pods in its cache and `live` pods on the API server; two passes a grace period apart. */
async function twoPasses(vms: PodVM[], cached: Pod[], live: Pod[]) {
  const podLists: string[] = [];
  const deleted: string[] = [];
  const client = {
    get: async () => ({ metadata: { name: 'kube-system', uid: CLUSTER } }),
    list: async (rt: { plural: string }, opts: { map?: (p: Pod) => Pod } = {}) => {
      podLists.push(rt.plural);
      return { metadata: {}, items: live.map((p) => (opts.map ? opts.map(p) : p)) };
    },
    patch: async (_rt: unknown, _name: string, body: unknown) => body,
  } as unknown as KubeClient;
  const inventory: PodVMInventory = {
    list: async () => vms,
    delete: async (id: string) => {
      deleted.push(id);
    },
  };
  const mgr = { client, events: { record: async () => {} } as unknown as EventRecorder } as unknown as Manager;
  let elapsed = 0;
  const collector = new LeakedVMCollector(
    mgr,
    { namespace: NS, inventory, graceMs: GRACE, intervalMs: 60_000, elapsedMs: () => elapsed },
    new PodVMMetrics(new Registry()),
    {
      kataConfigs: cache([kataConfig]),
      pods: cache(cached),
      configMaps: cache(),
      secrets: cache(),
      ccoSecrets: cache(),
      collectorSecrets: cache(),
    },
  );
  const signal = new AbortController().signal;
  await collector.reconcile(silentLogger(), signal);
  elapsed += GRACE;
  await collector.reconcile(silentLogger(), signal);
  return { podLists, deleted };
}

describe('leaked pod VM collector: a list the cloud refuses', () => {
  test('is the condition (reason PodVMListRefused, the error and the fix), tried again at the interval, cleared by a list that works', async () => {
    const patches: { status?: { conditions?: { type: string; reason?: string; message?: string }[] } }[] = [];
    const kc = structuredClone(kataConfig);
    let refuse = true;
    const client = {
      get: async () => ({ metadata: { name: 'kube-system', uid: CLUSTER } }),
      list: async () => ({ metadata: {}, items: [] }),
      patch: async (_rt: unknown, _name: string, body: (typeof patches)[number]) => {
        patches.push(body);
        return body;
      },
    } as unknown as KubeClient;
    const inventory: PodVMInventory = {
      list: async () => {
        if (refuse) throw new Error('AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity');
        return [];
      },
      delete: async () => {},
    };
    const mgr = { client, events: { record: async () => {} } as unknown as EventRecorder } as unknown as Manager;
    const collector = new LeakedVMCollector(
      mgr,
      { namespace: NS, inventory, graceMs: GRACE, intervalMs: 60_000 },
      new PodVMMetrics(new Registry()),
      {
        kataConfigs: cache([kc]),
        pods: cache(),
        configMaps: cache(),
        secrets: cache(),
        ccoSecrets: cache(),
        collectorSecrets: cache(),
      },
    );
    const signal = new AbortController().signal;
    const first = await collector.reconcile(silentLogger(), signal);
    // The cache shows what was written.
    kc.status = structuredClone(patches.at(-1)?.status) as KataConfig['status'];
    assert.deepEqual(first, { requeueAfterMs: 60_000 }, 'no error (no back-off loop): the interval');
    const c = patches.at(-1)?.status?.conditions?.[0];
    assert.equal(c?.type, 'PodVMDeletionFailed');
    assert.equal(c?.reason, 'PodVMListRefused');
    assert.match(
      c?.message ?? '',
      /cannot list the cluster's pod VMs .*AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity\. Fix: .*rerun ccoctl/,
    );
    refuse = false;
    await collector.reconcile(silentLogger(), signal);
    assert.equal(patches.length, 2);
    assert.deepEqual(patches.at(-1)?.status, {}, 'the condition goes once a list works');
  });
});

describe('leaked pod VM collector', () => {
  test('a pod the cache does not show yet, found by the live read: its VM is kept', async () => {
    const { podLists, deleted } = await twoPasses([vm('i-web', 'web-0')], [], [pod('web-0')]);
    assert.deepEqual(deleted, [], 'the VM of a live pod is not deleted');
    assert.deepEqual(podLists, ['pods'], 'the pods were read live before the deletion');
  });

  test('the cache agrees with the API server: the leaked VM is deleted after one live read of the pods', async () => {
    const { podLists, deleted } = await twoPasses([vm('i-gone', 'gone-0'), vm('i-web', 'web-0')], [pod('web-0')], [pod('web-0')]);
    assert.deepEqual(deleted, ['i-gone']);
    assert.deepEqual(podLists, ['pods']);
  });

  test('nothing to delete: no live read', async () => {
    const { podLists, deleted } = await twoPasses([vm('i-web', 'web-0')], [pod('web-0')], [pod('web-0')]);
    assert.deepEqual(deleted, []);
    assert.deepEqual(podLists, []);
  });
});
