/**
 * An operator upgrade on plain Kubernetes, N -> N+1 through `osc install --distribution kubernetes`, with
 * kata installed by kata-deploy on 3 workers: no kata-deploy DaemonSet or pod rewritten or restarted, no
 * node cordoned, the KataConfig and KataNodes not touched, the webhooks answering throughout.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useDevCluster } from '../support/operator.ts';
import { checkReport, describeFigures, MCORecords, runUpgrade, upgradeClusterOptions } from '../support/upgrade-scenario.ts';

const records = new MCORecords();
const cluster = useDevCluster(upgradeClusterOptions('kubernetes', records));

describe('upgrading the operator on Kubernetes (N -> N+1, osc install --distribution kubernetes)', () => {
  test('rewrites and restarts nothing, cordons no node; the webhooks keep answering', async () => {
    const f = await runUpgrade(cluster.dev, records, 'kubernetes');
    console.log(`# osc install --dry-run=server of N+1 said:\n${f.dryRunReport.replace(/^/gm, '#   ')}`);
    console.log(`# osc install of N+1 said:\n${f.installReport.replace(/^/gm, '#   ')}`);
    console.log(describeFigures(f));
    assert.equal(f.cordons, 0, 'cordons');
    assert.equal(f.reboots, 0, 'nodes NotReady');
    assert.deepEqual(f.rewrites, [], 'rewrites');
    assert.deepEqual(f.statusChanges, [], 'KataConfig and KataNode changes');
    assert.deepEqual(f.restartedPods, [], 'kata-deploy pods restarted');
    assert.ok(f.probes >= 10, `${f.probes} webhook probes`);
    assert.ok(f.webhookGapMs <= f.rolloutMs, `webhooks unanswered for ${f.webhookGapMs} ms, longer than the rollout (${f.rolloutMs} ms)`);
    // Every replica answered throughout (two replicas, maxUnavailable 0). The one way a probe goes
    // unanswered here is this harness's: osc install points the webhooks at the in-cluster Service, which
    // the API server cannot reach in the dev cluster, until a replica registers its URL again moments later.
    for (const u of f.unanswered) assert.match(u, /osc-webhook-service\.openshift-sandboxed-containers-operator\.svc/, u);
    // The replicas here run outside the cluster and register the webhooks by URL (see upgrade-openshift).
    checkReport(f, /^(validating|mutating)webhookconfiguration\./);
  });
});
