/**
 * An operator upgrade on OpenShift, N -> N+1 through `osc install`, with kata installed on 3 workers and
 * peer pods on (their AWS keys minted by the Cloud Credential Operator): nothing that runs kata may notice. Zero cordons, drains or reboots; no MachineConfig,
 * DaemonSet, peer-pods object or RuntimeClass written; the KataConfig and KataNodes not touched (status
 * included); the peer-pods pods not restarted (their images are the same); and the fail-closed webhooks
 * never unanswered for longer than the operator Deployment's rollout (with two replicas and
 * maxUnavailable 0, some replica answers throughout). osc install of N+1 first with --dry-run=server, then
 * for real: the same report, the image the one change, an object N+1 no longer ships removed. The
 * figures are printed (docs/upgrades.md quotes them).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useDevCluster } from '../support/operator.ts';
import { checkReport, describeFigures, MCORecords, runUpgrade, upgradeClusterOptions } from '../support/upgrade-scenario.ts';

const mco = new MCORecords();
const cluster = useDevCluster(upgradeClusterOptions('openshift', mco));

describe('upgrading the operator on OpenShift (N -> N+1, osc install)', () => {
  test('reboots, rewrites and restarts nothing; the webhooks keep answering', async () => {
    const f = await runUpgrade(cluster.dev, mco, 'openshift');
    console.log(`# osc install --dry-run=server of N+1 said:\n${f.dryRunReport.replace(/^/gm, '#   ')}`);
    console.log(`# osc install of N+1 said:\n${f.installReport.replace(/^/gm, '#   ')}`);
    console.log(describeFigures(f));
    assert.equal(f.cordons, 0, 'cordons');
    assert.equal(f.reboots, 0, 'reboots');
    assert.equal(f.mcoUpdates, 0, 'MCO node updates');
    assert.deepEqual(f.mcoRecords, { updating: 0, evicted: 0, rebooting: 0 }, "the MCO's records");
    assert.deepEqual(f.rewrites, [], 'rewrites');
    assert.deepEqual(f.statusChanges, [], 'KataConfig and KataNode changes');
    assert.deepEqual(f.restartedPods, [], 'operand pods restarted');
    assert.ok(
      f.podsBefore.some((p) => p.startsWith('osc-caa-ds-')),
      'the adaptor pods were there to restart',
    );
    assert.deepEqual(f.newLeaderWrites, [], "the new leader's writes");
    assert.match(f.mintedKey.before, /^AKIA/, 'peer pods run with the key the CCO minted');
    assert.equal(f.mintedKey.after, f.mintedKey.before, 'the upgrade has nothing minted again');
    assert.ok(f.probes >= 10, `${f.probes} webhook probes`);
    assert.ok(f.webhookGapMs <= f.rolloutMs, `webhooks unanswered for ${f.webhookGapMs} ms, longer than the rollout (${f.rolloutMs} ms)`);
    // Every replica answered throughout (two replicas, maxUnavailable 0). The one way a probe goes
    // unanswered here is this harness's: osc install points the webhooks at the in-cluster Service, which
    // the API server cannot reach in the dev cluster, until a replica registers its URL again moments later.
    for (const u of f.unanswered) assert.match(u, /osc-webhook-service\.openshift-sandboxed-containers-operator\.svc/, u);
    // The replicas here run outside the cluster and register the webhooks by URL, so osc install's
    // Service reference is a change to them; in a cluster both say the Service.
    checkReport(f, /^(validating|mutating)webhookconfiguration\./);
  });
});
