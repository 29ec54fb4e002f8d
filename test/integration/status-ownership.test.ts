import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { oscCRDs } from '../../src/api/crds.ts';
import { type KataConfig, type KataConfigStatus, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { setupKataConfigController } from '../../src/controllers/kataconfig/controller.ts';
import { kataConfigStatusShare, kataStatusApply } from '../../src/controllers/kataconfig/state.ts';
import { setupPeerPodsController } from '../../src/controllers/peerpods/controller.ts';
import { peerPodsStatusShare } from '../../src/controllers/peerpods/desired.ts';
import { openshiftCRDs } from '../../src/devcluster/openshift/crds.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { Namespaces } from '../../src/kube/resources.ts';
import type { Condition } from '../../src/kube/types.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';
import { rfc3339 } from '../../src/runtime/conditions.ts';
import { Manager } from '../../src/runtime/manager.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { applyStatusIfChanged } from '../../src/runtime/status.ts';
import { testLogger, useControlPlane } from '../support/controlplane.ts';
import { waitFor } from '../support/wait.ts';

interface ManagedFieldsEntry {
  manager: string;
  operation: string;
  subresource?: string;
  fieldsV1?: { 'f:status'?: Record<string, unknown> };
}

/** Which status fields each field manager owns, as the API server records it ("conditions/InProgress"...). */
async function statusOwners(client: KubeClient, name: string): Promise<Record<string, string[]>> {
  const kc = await client.get(KataConfigs, name);
  const owners: Record<string, string[]> = {};
  for (const e of (kc.metadata.managedFields ?? []) as ManagedFieldsEntry[]) {
    const status = e.fieldsV1?.['f:status'];
    if (!status) continue;
    const fields: string[] = [];
    for (const [k, v] of Object.entries(status)) {
      if (k === 'f:conditions') {
        for (const item of Object.keys(v as object))
          if (item.startsWith('k:')) fields.push(`conditions/${(JSON.parse(item.slice(2)) as { type: string }).type}`);
      } else if (k !== '.') fields.push(k.slice(2));
    }
    owners[`${e.manager} ${e.operation}${e.subresource ? ` ${e.subresource}` : ''}`] = fields.sort();
  }
  return owners;
}

const cond = (type: string, status: 'True' | 'False', reason: string, message: string): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: rfc3339(new Date()),
});

describe('one writer per KataConfig status field (server-side apply, a field manager per controller)', () => {
  const plane = useControlPlane();
  let client: KubeClient;

  before(async () => {
    client = plane.cp.client;
    await plane.cp.installCRDs([...oscCRDs(), ...openshiftCRDs()]);
    await client.create(Namespaces, { metadata: { name: OPERATOR_NAMESPACE } });
  });

  test('each share applies from a stale copy without a conflict, and neither loses the other its fields', async () => {
    const metrics = new RuntimeMetrics(undefined, { processMetrics: false });
    const created = await client.create(KataConfigs, { metadata: { name: 'shares' }, spec: { enablePeerPods: true } } as KataConfig);
    const installing = { status: 'True' as const, reason: 'Installing' as const, message: messages.installing('kata-remote') };
    const kataNodes = { nodeCount: 2, readyNodeCount: 0, installing: ['worker-1'], waitingToInstall: ['worker-0'] };
    const afterKata = await applyStatusIfChanged(
      client,
      KataConfigs,
      created,
      kataStatusApply(created.status, { inProgress: installing, kataNodes }),
      kataConfigStatusShare,
      metrics,
    );
    assert.ok(afterKata);
    // The peer pods controller's copy predates the KataConfig controller's write: with an update it would get 409.
    const valid = cond('PeerPodsConfigValid', 'False', 'Invalid', 'ConfigMap peer-pods-cm not found');
    const running = cond('PodVMImageJobRunning', 'True', 'ImageJobRunning', 'building');
    await applyStatusIfChanged(client, KataConfigs, created, { conditions: [valid, running] }, peerPodsStatusShare, metrics);
    // And the KataConfig controller's next write comes from a copy that has not seen the peer pods conditions.
    const progressed = { nodeCount: 2, readyNodeCount: 1, installed: ['worker-1'], installing: ['worker-0'] };
    await applyStatusIfChanged(
      client,
      KataConfigs,
      afterKata,
      kataStatusApply(afterKata.status, { inProgress: installing, kataNodes: progressed }),
      kataConfigStatusShare,
      metrics,
    );

    let kc = await client.get(KataConfigs, 'shares');
    assert.deepEqual(kc.status?.kataNodes, progressed, 'waitingToInstall, no longer applied, is gone');
    assert.deepEqual(kc.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`).sort(), [
      'InProgress=True/Installing',
      'PeerPodsConfigValid=False/Invalid',
      'PodVMImageJobRunning=True/ImageJobRunning',
    ]);
    assert.deepEqual(await statusOwners(client, 'shares'), {
      'osc-kataconfig Apply status': ['conditions/InProgress', 'kataNodes'],
      'osc-peerpods Apply status': ['conditions/PeerPodsConfigValid', 'conditions/PodVMImageJobRunning'],
    });
    const results = Object.fromEntries((await metrics.statusWrites.get()).values.map((v) => [v.labels.result, v.value]));
    assert.deepEqual(results, { written: 3 }, 'three applies, no conflict');

    // A condition the peer pods controller no longer applies goes; the KataConfig controller's stay.
    await applyStatusIfChanged(client, KataConfigs, kc, { conditions: [valid] }, peerPodsStatusShare, metrics);
    kc = await client.get(KataConfigs, 'shares');
    assert.deepEqual(kc.status?.conditions?.map((c) => c.type).sort(), ['InProgress', 'PeerPodsConfigValid']);
    assert.deepEqual(kc.status?.kataNodes, progressed);
    await client.delete(KataConfigs, 'shares');
  });

  test('both controllers running: their fields live side by side, owned apart, with no conflict; turned off, peer pods leaves none', async () => {
    const metrics = new RuntimeMetrics(undefined, { processMetrics: false });
    const mgr = new Manager({ client, log: testLogger(), metrics });
    const platform = openShiftPlatform();
    setupKataConfigController(mgr, platform);
    setupPeerPodsController(mgr, platform);
    const ac = new AbortController();
    const run = mgr.start(ac.signal);
    try {
      await client.create(KataConfigs, { metadata: { name: 'both' }, spec: { enablePeerPods: true } } as KataConfig);
      // No node and no peer-pods-cm: kata-remote is "installed" on no node, and the configuration is reported missing.
      const settled = (s: KataConfigStatus | undefined) =>
        s?.conditions?.some((c) => c.type === 'InProgress' && c.status === 'False' && c.reason === '') &&
        s.conditions.some((c) => c.type === 'PeerPodsConfigValid' && c.status === 'False') &&
        s.runtimeClasses?.length === 2;
      const kc = await waitFor(
        async () => {
          const k = await client.get(KataConfigs, 'both');
          return settled(k.status) ? k : undefined;
        },
        { timeoutMs: 60_000, message: 'both controllers to report' },
      );
      assert.deepEqual(kc.status?.kataNodes, { nodeCount: 0, readyNodeCount: 0 });
      assert.deepEqual(kc.status?.runtimeClasses, ['kata', 'kata-remote']);
      const owners = await statusOwners(client, 'both');
      assert.deepEqual(owners['osc-kataconfig Apply status'], ['conditions/InProgress', 'kataNodes', 'runtimeClasses']);
      assert.deepEqual(owners['osc-peerpods Apply status'], ['conditions/PeerPodsConfigValid']);
      assert.deepEqual(
        Object.keys(owners).sort(),
        ['osc-kataconfig Apply status', 'osc-peerpods Apply status'],
        'nobody else writes status',
      );

      // Peer pods turned off: its conditions go (it applies none), the KataConfig controller's fields stay.
      await client.patch(KataConfigs, 'both', { spec: { enablePeerPods: false } });
      const off = await waitFor(
        async () => {
          const k = await client.get(KataConfigs, 'both');
          const types = k.status?.conditions?.map((c) => c.type) ?? [];
          return !types.includes('PeerPodsConfigValid') && k.status?.runtimeClasses?.join() === 'kata' ? k : undefined;
        },
        { timeoutMs: 60_000, message: 'the peer pods conditions and kata-remote to go' },
      );
      assert.deepEqual(
        off.status?.conditions?.map((c) => `${c.type}=${c.status}/${c.reason}`),
        ['InProgress=False/'],
        'InProgress, and nothing else',
      );
      assert.deepEqual((await statusOwners(client, 'both'))['osc-peerpods Apply status'] ?? [], [], 'peer pods owns no field any more');
      const errors = (await metrics.statusWrites.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0;
      assert.equal(errors, 0, 'no status write failed (no 409 Conflict)');

      await client.delete(KataConfigs, 'both');
      await waitFor(async () => !(await client.find(KataConfigs, 'both')), { timeoutMs: 60_000, message: 'the KataConfig to go' });
    } finally {
      ac.abort();
      await run;
    }
  });
});
