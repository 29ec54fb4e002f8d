/**
 * The admission webhooks fail closed, and a kata install drains worker nodes: draining the node of the
 * operator's leader, mid-install, must not leave them unanswered. The operator is installed as shipped
 * (`osc install`: its Deployment, disruption budget, anti-affinity); kwok schedules its pods but runs no
 * containers, so this test plays their kubelet: it runs one `osc run` process per scheduled pod, reports
 * the pod Ready once the process is, stops the process (SIGTERM) when the pod is deleted and reports its
 * exit. A loopback proxy plays the webhook Service: it sends each connection to a ready replica. Then
 * `kubectl drain` (the Eviction API, honouring disruption budgets) empties the leader's node while a
 * KataConfig dry-run create and a kata-remote pod dry-run create are sent over and over: every one must be
 * answered by the webhooks, and the install must complete. With one replica and no budget, the drain
 * leaves nothing to answer until the replacement pod's process is up, and this test fails.
 */

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { Pods, RuntimeClasses, ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { runOsc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { alive, OPERATOR_PODS, OPERATOR_PODS_QUERY, OperatorKubelet } from '../support/operator-kubelet.ts';
import { ServiceProxy } from '../support/serviceproxy.ts';
import { waitFor } from '../support/wait.ts';
import { probeWebhooks } from '../support/webhook-probe.ts';

const NS = OPERATOR_NAMESPACE;
const cluster = useDevCluster({
  workers: 3,
  rebootMs: 1500,
  // The operator's pods: this test runs their processes and reports their status, as their kubelet would.
  callerPlayedPods: OPERATOR_PODS_QUERY,
});

describe('the webhooks keep answering while the leader’s node is drained mid-install', () => {
  let service: ServiceProxy | undefined;
  let kubelet: OperatorKubelet | undefined;
  let probes: ReturnType<typeof probeWebhooks> | undefined;
  after(async () => {
    // Stopped here too: a failed assertion must not leave them asking a stopped cluster for good.
    await probes?.stop();
    await kubelet?.stop();
    await service?.close();
  });
  const kubectl = (args: string[]) => cluster.dev.controlPlane.kubectl(args);

  test('drain the leader’s node during an install: every webhook call answered, the install completes', async () => {
    service = await ServiceProxy.start();
    kubelet = new OperatorKubelet(cluster.dev, service);
    // The kata-remote RuntimeClass, so that a kata-remote pod gets past RuntimeClass admission to the webhook.
    await cluster.dev.client.create(RuntimeClasses, {
      metadata: { name: KATA_REMOTE_RUNTIME_CLASS },
      handler: 'kata-remote',
    } as KubeObject);
    const installed = await runOsc(['install', '--kubeconfig', cluster.dev.kubeconfigPath]);
    assert.equal(installed.code, 0, installed.stderr);
    kubelet.start();
    const k = kubelet;
    await waitFor(() => k.leader() && service?.ready.length === [...k.replicas.values()].length && service.ready.length > 0, {
      timeoutMs: 120_000,
      message: 'the replicas ready, one leading',
    });
    const replicas = (await cluster.dev.client.list(Pods, { namespace: NS, labelSelector: OPERATOR_PODS })).items;
    console.log(`# operator pods: ${replicas.map((p) => `${p.metadata.name} on ${p.spec?.nodeName}`).join(', ')}`);
    await waitFor(
      async () => {
        const w = (await cluster.dev.client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as KubeObject & {
          webhooks?: { clientConfig?: { url?: string } }[];
        };
        return w.webhooks?.[0]?.clientConfig?.url?.startsWith(`https://127.0.0.1:${service?.port}/`);
      },
      { timeoutMs: 60_000, message: 'the webhooks registered at the Service' },
    );

    probes = probeWebhooks(cluster.dev.client);
    const probing = probes;
    await cluster.dev.client.create(KataConfigs, {
      metadata: { name: 'example' },
      spec: { checkNodeEligibility: false, logLevel: 'info' },
    } as KataConfig);
    await waitFor(async () => (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.kataNodes?.installing?.length, {
      timeoutMs: 120_000,
      message: 'a node installing',
    });

    // A leader, as the drain finds it: on a loaded machine the one that led may have just lost its lease
    // (it exits, and its pod's process starts again as a standby) and another be about to take it.
    let leader: ReturnType<typeof k.leader>;
    await waitFor(() => (leader = k.leader()) !== undefined, { timeoutMs: 120_000, message: 'a replica leading' });
    if (!leader) throw new Error('no replica leads');
    const drainStarted = Date.now();
    const drained = await kubectl([
      'drain',
      leader.node,
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      `--pod-selector=${OPERATOR_PODS}`,
      '--timeout=300s',
    ]);
    assert.equal(drained.code, 0, drained.stderr);
    console.log(`# drained ${leader.node} (the leader ${leader.pod}'s) in ${Date.now() - drainStarted} ms`);
    assert.equal(alive(leader), false, 'the drained leader stopped');
    await waitFor(() => k.leader(), { timeoutMs: 120_000, message: 'another replica leads' });
    assert.equal((await kubectl(['uncordon', leader.node])).code, 0);

    await waitFor(
      async () =>
        (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.conditions?.find((c) => c.type === 'InProgress')?.status ===
        'False',
      { timeoutMs: 300_000, message: 'kata installed' },
    );
    const results = await probing.stop();
    assert.deepEqual((await cluster.dev.client.get(KataConfigs, 'example')).status?.kataNodes?.installed, [
      'worker-0',
      'worker-1',
      'worker-2',
    ]);

    const during = results.filter((p) => p.at >= drainStarted);
    assert.ok(during.length >= 10, `${during.length} probes from the drain on`);
    for (const what of ['KataConfig', 'kata-remote pod'])
      assert.ok(
        results.some((p) => p.what === what && p.answered && p.message !== 'allowed'),
        `the ${what} webhook denied what it must`,
      );
    const unanswered = results.filter((p) => !p.answered).map((p) => `${new Date(p.at).toISOString()} ${p.what}: ${p.message}`);
    console.log(`# ${results.length} probes, ${unanswered.length} unanswered; the Service refused ${service.stats.refused} connections`);
    assert.deepEqual(unanswered, [], 'webhook calls left unanswered');
  });
});
