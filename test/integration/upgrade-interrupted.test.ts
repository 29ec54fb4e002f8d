/**
 * An upgrade interrupted halfway: `osc install` of N+1 on OpenShift with kata on 3 workers and peer pods on,
 * and the rollout held with N's two replicas and N+1's first one running side by side. The leading version's
 * replicas crash until leadership has gone from N to N+1 and back, so both versions lead the same cluster in
 * turn; then the rollout completes. Neither version may undo the other's work: zero cordons, drains or
 * reboots, zero rewrites, the KataConfig and KataNodes untouched, nothing restarted, and at the end only
 * N+1 runs, leading, with nothing of N left behind.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { Pods } from '../../src/kube/resources.ts';
import { useDevCluster } from '../support/operator.ts';
import { OPERATOR_PODS } from '../support/operator-kubelet.ts';
import { describeFigures, MCORecords, runUpgrade, upgradeClusterOptions } from '../support/upgrade-scenario.ts';
import { waitFor } from '../support/wait.ts';

const mco = new MCORecords();
const cluster = useDevCluster(upgradeClusterOptions('openshift', mco));

describe('an upgrade interrupted halfway (N and N+1 both running, leader election deciding)', () => {
  test('both versions lead in turn and change nothing; the rollout then completes with nothing left behind', async () => {
    const f = await runUpgrade(cluster.dev, mco, 'openshift', { interrupt: true });
    console.log(`# leaders while the rollout stood halfway: ${f.leaders.join(' -> ')}`);
    console.log(describeFigures(f));
    assert.match(f.leaders.join(' '), /N\+1 N/, 'leadership went from N to N+1 and back');
    assert.equal(f.cordons, 0, 'cordons');
    assert.equal(f.reboots, 0, 'reboots');
    assert.deepEqual(f.mcoRecords, { updating: 0, evicted: 0, rebooting: 0 }, "the MCO's records");
    assert.deepEqual(f.rewrites, [], 'rewrites');
    assert.deepEqual(f.statusChanges, [], 'KataConfig and KataNode changes');
    assert.deepEqual(f.restartedPods, [], 'operand pods restarted');
    assert.deepEqual(f.newLeaderWrites, [], "the final leader's writes");
    assert.equal(f.mintedKey.after, f.mintedKey.before, 'nothing minted again');
    // The webhooks: never unanswered for longer than the rollout, even though the test crashes every
    // replica of the leading version while the other version's new one is held unready.
    assert.ok(f.probes >= 10, `${f.probes} webhook probes`);
    assert.ok(f.webhookGapMs <= f.rolloutMs, `webhooks unanswered for ${f.webhookGapMs} ms, longer than the rollout (${f.rolloutMs} ms)`);
    // Nothing of N left: its ReplicaSet scaled to 0, two operator pods, both N+1.
    const client = cluster.dev.client;
    // N's last pod object goes when its node agent deletes it after the process exited, which may be
    // a moment after the rollout is seen complete: waited for, not assumed.
    let names: string[] = [];
    await waitFor(
      async () => {
        const pods = (await client.list(Pods, { namespace: OPERATOR_NAMESPACE, labelSelector: OPERATOR_PODS })).items;
        names = pods.map((p) => `${p.metadata.name}${p.metadata.deletionTimestamp ? ' (deleting)' : ''}`);
        return pods.length === 2;
      },
      { timeoutMs: 120_000, message: 'two operator pods, both N+1' },
    ).catch((e) => assert.fail(`${e instanceof Error ? e.message : e}: ${names.join(', ')}`));
    const sets = (
      await client.request<{ items: { spec?: { replicas?: number }; status?: { replicas?: number } }[] }>(
        'GET',
        `/apis/apps/v1/namespaces/${OPERATOR_NAMESPACE}/replicasets?labelSelector=${encodeURIComponent(OPERATOR_PODS)}`,
      )
    ).items;
    assert.equal(sets.filter((s) => (s.spec?.replicas ?? 0) > 0 || (s.status?.replicas ?? 0) > 0).length, 1, 'one ReplicaSet with pods');
  });
});
