/**
 * The monitor controller over in-memory caches and a recording client: once its caches show the monitor as
 * planned it makes no request and asks for no periodic re-check; a change its caches report brings one pass.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { setupMonitorController } from '../../src/controllers/monitor/controller.ts';
import { desiredMonitor } from '../../src/controllers/monitor/desired.ts';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import { DaemonSets, ServiceAccounts, Services } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { appliedForm } from '../../src/runtime/applier.ts';
import type { ControllerSpec } from '../../src/runtime/controller.ts';
import type { EventHandler } from '../../src/runtime/informer.ts';
import { silentLogger } from '../../src/runtime/log.ts';
import type { Manager } from '../../src/runtime/manager.ts';

const NS = 'openshift-sandboxed-containers-operator';

/** An informer's read side over a map, and its handlers, which the test calls as watch events would. */
function fakeInformer() {
  const store = new Map<string, KubeObject>();
  const handlers: EventHandler<KubeObject>[] = [];
  const key = (o: KubeObject) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ''));
  return {
    store,
    get: (k: string) => store.get(k),
    list: () => [...store.values()],
    byIndex: () => [],
    addIndex: () => {},
    addEventHandler: (h: EventHandler<KubeObject>) => handlers.push(h),
    put(o: KubeObject) {
      const old = store.get(key(o));
      store.set(key(o), o);
      for (const h of handlers) old ? h.update?.(old, o) : h.add?.(o);
    },
  };
}

function setup() {
  const informers = new Map<string, ReturnType<typeof fakeInformer>>();
  const requests: string[] = [];
  const client = {
    request: async (verb: string, path: string) => {
      requests.push(`${verb} ${path}`);
      return { resources: [] };
    },
    patch: async (rt: ResourceType, name: string, body: KubeObject) => {
      requests.push(`apply ${rt.plural}/${name}`);
      return { ...body, metadata: { ...body.metadata, uid: `${name}-uid`, resourceVersion: '2' } };
    },
    apply: async (rt: ResourceType, body: KubeObject) => {
      requests.push(`apply ${rt.plural}/${body.metadata.name}`);
      return { ...body, metadata: { ...body.metadata, uid: `${body.metadata.name}-uid`, resourceVersion: '2' } };
    },
    delete: async (rt: ResourceType, name: string) => {
      requests.push(`delete ${rt.plural}/${name}`);
      return true;
    },
    find: async () => undefined,
  } as unknown as KubeClient;
  let spec: ControllerSpec | undefined;
  const mgr = {
    client,
    metrics: { registry: new Registry(), applierWrites: { inc: () => {} } },
    informer: (rt: ResourceType) => {
      const inf = informers.get(rt.plural) ?? fakeInformer();
      informers.set(rt.plural, inf);
      return inf;
    },
    addController: (s: ControllerSpec) => {
      spec = s;
    },
  } as unknown as Manager;
  setupMonitorController(mgr, { kataNodeSelector: () => ({ kata: '' }) }, { namespace: NS, image: 'example.com/kata-monitor:1' });
  const reconcile = () => spec?.reconcile('kata-monitor', { log: silentLogger(), signal: new AbortController().signal });
  return { informers, requests, reconcile, inf: (plural: string) => informers.get(plural) as ReturnType<typeof fakeInformer> };
}

const installed: KataConfig = {
  metadata: { name: 'example', uid: 'kc' },
  spec: { logLevel: 'info' },
  status: { runtimeClasses: ['kata'] },
};

describe('kata monitor controller', () => {
  test('its objects as planned in its caches: no request, no periodic re-check; an edit reported by a cache is corrected', async () => {
    const { requests, reconcile, inf } = setup();
    inf('kataconfigs').put(installed);
    const first = await reconcile();
    assert.equal(first, undefined, 'no re-check on a timer');
    assert.deepEqual(requests, [
      'GET /apis/monitoring.coreos.com/v1',
      'apply serviceaccounts/monitor',
      'apply daemonsets/openshift-sandboxed-containers-monitor',
      'apply services/metrics',
    ]);
    // The caches show what was applied (the server's answer stands in for the watch events).
    const applied = requests.length;
    const want = desiredMonitor({
      namespace: NS,
      image: 'example.com/kata-monitor:1',
      kataConfig: installed,
      kataNodeSelector: { kata: '' },
      prometheusOperator: false,
    });
    assert.ok(want);
    for (const [rt, obj] of [
      [ServiceAccounts, want.serviceAccount],
      [DaemonSets, want.daemonSet],
      [Services, want.service],
    ] as [ResourceType, KubeObject][]) {
      const form = appliedForm(rt, obj);
      inf(rt.plural).put({ ...form, metadata: { ...form.metadata, uid: `${obj.metadata.name}-uid`, resourceVersion: '2' } });
    }
    assert.equal(await reconcile(), undefined);
    assert.equal(requests.length, applied, `no request once the caches show the monitor: ${requests.slice(applied).join(', ')}`);
    // Someone edits the Service: one discovery and one apply.
    const svc = inf('services').get(`${NS}/metrics`) as KubeObject & { spec: Record<string, unknown> };
    inf('services').put({
      ...svc,
      metadata: { ...svc.metadata, resourceVersion: '3' },
      spec: { ...svc.spec, selector: { name: 'other' } },
    } as KubeObject);
    await reconcile();
    assert.deepEqual(requests.slice(applied), ['GET /apis/monitoring.coreos.com/v1', 'apply services/metrics']);
  });
});
