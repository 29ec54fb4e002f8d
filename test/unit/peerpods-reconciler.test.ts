/**
 * The peer pods reconciler over in-memory caches and a recording client (no API server): before it lets go
 * of its finalizer it reads the image jobs and peer-pods-cm live once, and a cache behind them holds it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { DEFAULT_IMAGES, PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import { CACHE_BEHIND_RECHECK_MS, PeerPodsReconciler } from '../../src/controllers/peerpods/reconciler.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { ConfigMap, Job } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { EventRecorder } from '../../src/runtime/events.ts';
import type { Informer } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/log.ts';

const NS = 'openshift-sandboxed-containers-operator';

/** An informer's read side over a map keyed as informers key (namespace/name). */
function cache<T extends KubeObject>(items: T[] = []) {
  const key = (o: KubeObject) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ''));
  const store = new Map(items.map((o) => [key(o), o]));
  return {
    get: (k: string) => store.get(k),
    list: () => [...store.values()],
    byIndex: () => [],
    addEventHandler: () => {},
  } as unknown as Informer<T>;
}

/** Peer pods turned off on a KataConfig that still holds the peer pods finalizer: the removal's last pass. */
const turnedOff = {
  metadata: {
    name: 'example',
    uid: 'kc-uid',
    resourceVersion: '5',
    finalizers: ['kataconfiguration.openshift.io/finalizer', PEERPODS_FINALIZER],
  },
  spec: { enablePeerPods: false },
  status: {},
} as KataConfig;
const configMap: ConfigMap = {
  metadata: { name: 'peer-pods-cm', namespace: NS, uid: 'cm-uid', resourceVersion: '11' },
  data: { CLOUD_PROVIDER: 'aws', PODVM_AMI_ID: '' },
};
/** A deletion job an earlier process started, which this one's cache has not shown (its watch was down). */
const runningDeletion: Job = {
  metadata: { name: 'osc-podvm-image-deletion', namespace: NS, uid: 'job-uid', resourceVersion: '12' },
  spec: { template: { spec: {} } },
  status: { active: 1 },
};

function reconciler(live: Map<string, KubeObject>) {
  const calls: string[] = [];
  const client = {
    find: async (rt: { plural: string }, name: string) => {
      calls.push(`get ${rt.plural}/${name}`);
      return live.get(`${rt.plural}/${name}`);
    },
    // The cluster's UID (kube-system's), which the reconciler reads once for the pod VMs' cluster tag.
    get: async (rt: { plural: string }, name: string) => {
      calls.push(`get ${rt.plural}/${name}`);
      return { metadata: { name, uid: 'cluster-uid' } };
    },
    patch: async (rt: { plural: string }, name: string, body: unknown, opts: { subresource?: string } = {}) => {
      calls.push(`patch${opts.subresource ? `/${opts.subresource}` : ''} ${rt.plural}/${name}`);
      return { metadata: { name }, ...(body as object) };
    },
    delete: async (rt: { plural: string }, name: string) => {
      calls.push(`delete ${rt.plural}/${name}`);
      return true;
    },
  } as unknown as KubeClient;
  const events = { record: async () => {} } as unknown as EventRecorder;
  const r = new PeerPodsReconciler({
    client,
    kataConfigs: cache([turnedOff]),
    configMaps: cache([configMap]),
    secrets: cache(),
    peerPodConfigs: cache(),
    daemonSets: cache(),
    jobs: cache(),
    nodes: cache(),
    pods: cache(),
    platform: { kataNodeSelector: () => ({}), kataNodeTolerations: () => [], supportsPeerPods: true },
    events,
    options: { namespace: NS, images: DEFAULT_IMAGES, imageJobBackoffLimit: 1, blockedRecheckMs: 15_000 },
  });
  return { r, calls };
}

const finalizerWrites = (calls: string[]) => calls.filter((c) => c === 'patch kataconfigs/example');

describe('peer pods reconciler', () => {
  test('a deletion job the cache does not show yet, found by the live read before the finalizer goes: the removal waits', async () => {
    const live = new Map<string, KubeObject>([
      ['configmaps/peer-pods-cm', configMap],
      ['jobs/osc-podvm-image-deletion', runningDeletion],
    ]);
    const { r, calls } = reconciler(live);
    const result = await r.reconcile('example', silentLogger(), new AbortController().signal);
    assert.deepEqual(finalizerWrites(calls), [], 'the finalizer is kept');
    assert.ok(calls.includes('get jobs/osc-podvm-image-deletion'), 'the deletion job was read live');
    assert.ok((result?.requeueAfterMs ?? Number.POSITIVE_INFINITY) <= CACHE_BEHIND_RECHECK_MS, 'planned again soon');
  });

  test('the cache agrees with the API server: the finalizer goes, after one live read of each image job and peer-pods-cm', async () => {
    const { r, calls } = reconciler(new Map<string, KubeObject>([['configmaps/peer-pods-cm', configMap]]));
    await r.reconcile('example', silentLogger(), new AbortController().signal);
    assert.deepEqual(finalizerWrites(calls), ['patch kataconfigs/example']);
    assert.deepEqual(calls.filter((c) => c.startsWith('get ')).sort(), [
      'get configmaps/peer-pods-cm',
      'get jobs/osc-podvm-image-creation',
      'get jobs/osc-podvm-image-deletion',
      'get namespaces/kube-system',
    ]);
  });
});
