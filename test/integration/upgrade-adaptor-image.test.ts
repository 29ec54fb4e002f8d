/**
 * An operator upgrade on OpenShift whose N+1 moves the cloud-api-adaptor to a new image: the peer-pods pods
 * are restarted because their image changed, and only they (upgrade-openshift.test.ts shows an N+1 with the
 * same adaptor image restarting none). The adaptor DaemonSet rolls to the new image; nothing else is
 * rewritten, no node cordoned or rebooted, the KataConfig and KataNodes untouched, the minted key kept, and
 * the webhooks never unanswered for longer than the operator's own rollout.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CAA_DAEMONSET, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { DaemonSets } from '../../src/kube/resources.ts';
import { useDevCluster } from '../support/operator.ts';
import { describeFigures, MCORecords, NEXT_CAA_IMAGE, runUpgrade, upgradeClusterOptions } from '../support/upgrade-scenario.ts';

const mco = new MCORecords();
const cluster = useDevCluster(upgradeClusterOptions('openshift', mco));

describe('upgrading the operator to a release with a new cloud-api-adaptor image (OpenShift)', () => {
  test('the adaptor pods, and only they, are restarted; nothing else changes', async () => {
    const f = await runUpgrade(cluster.dev, mco, 'openshift', { caaImage: NEXT_CAA_IMAGE });
    console.log(describeFigures(f));
    const adaptor = (name: string) => name.startsWith(`${CAA_DAEMONSET}-`);
    const before = f.podsBefore.filter(adaptor);
    assert.equal(before.length, 3, 'an adaptor pod on each of the 3 workers');
    assert.deepEqual([...f.restartedPods].sort(), [...before].sort(), 'exactly the adaptor pods restarted');
    const ds = await cluster.dev.client.get(DaemonSets, CAA_DAEMONSET, OPERATOR_NAMESPACE);
    const image = (ds.spec as unknown as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]?.image;
    assert.equal(image, NEXT_CAA_IMAGE);
    // What changed: the adaptor DaemonSet and its pods, nothing else.
    for (const c of f.rewrites)
      assert.ok(
        (c.kind === 'DaemonSet' && c.name.endsWith(`/${CAA_DAEMONSET}`)) || (c.kind === 'Pod' && adaptor(c.name.split('/')[1] ?? '')),
        `${c.type} ${c.kind} ${c.name} [${c.fields.join(', ')}]`,
      );
    assert.equal(f.cordons, 0, 'cordons');
    assert.equal(f.reboots, 0, 'reboots');
    assert.deepEqual(f.mcoRecords, { updating: 0, evicted: 0, rebooting: 0 }, "the MCO's records");
    assert.deepEqual(f.statusChanges, [], 'KataConfig and KataNode changes');
    assert.equal(f.mintedKey.after, f.mintedKey.before, 'nothing minted again');
    assert.ok(f.webhookGapMs <= f.rolloutMs, `webhooks unanswered for ${f.webhookGapMs} ms, longer than the rollout (${f.rolloutMs} ms)`);
  });
});
