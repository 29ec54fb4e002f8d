/**
 * osc's workloads against the dev cluster's SCC admission, as on OpenShift: the cloud-api-adaptor and kata
 * monitor DaemonSets and a pod VM image job, exactly as the controllers make them, are refused (0 pods,
 * FailedCreate) while their ServiceAccounts have no `use` grant, and admitted once the install's objects
 * are applied, each pod's `openshift.io/scc` naming osc's SCC (restricted-v2 for the image job).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, MONITOR_DAEMONSET, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { CAA_SCC, MONITOR_SCC, PODVM_IMAGE_SCC, SCC_REFUSAL, VALIDATED_SCC_ANNOTATION } from '../../src/api/scc.ts';
import { desiredMonitor } from '../../src/controllers/monitor/desired.ts';
import { desiredDaemonSet, desiredImageJob } from '../../src/controllers/peerpods/desired.ts';
import { applyAll } from '../../src/install/apply.ts';
import { manifestFiles, SCC_FILE } from '../../src/install/manifests.ts';
import { ConfigMaps, DaemonSets, Events, Jobs, Pods, ServiceAccounts } from '../../src/kube/resources.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = OPERATOR_NAMESPACE;
const workers = { 'node-role.kubernetes.io/worker': '' };
const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'scc-test-owner', uid: '' };
const kataConfig = {
  metadata: { name: 'example', uid: 'u1' },
  spec: { logLevel: 'info' },
  status: { runtimeClasses: ['kata'] },
} as KataConfig;

describe("osc's pods under SCC admission", () => {
  // A cluster without what `osc install` ships for SCC admission: the test applies it itself.
  const cluster = useDevCluster({ workers: 1, oscSecurityIdentity: false });

  const podsOf = async (selector: string) => (await cluster.dev.client.list(Pods, { namespace: ns, labelSelector: selector })).items;
  const identity = async () => {
    const file = (await manifestFiles({ distribution: 'openshift' })).find((f) => f.file === SCC_FILE);
    assert.ok(file);
    return file.objects;
  };

  test("osc's SCCs without its use grants: the privileged DaemonSets get no pods, and FailedCreate says why", async () => {
    const { client } = cluster.dev;
    await applyAll(
      client,
      (await identity()).filter((o) => o.kind !== 'Role' && o.kind !== 'RoleBinding'),
    );
    // The garbage collector must not take the objects: their owner is a real object of the namespace.
    const cm = await client.create(ConfigMaps, { metadata: { name: 'scc-test-owner', namespace: ns } });
    owner.uid = cm.metadata.uid ?? '';
    const monitor = desiredMonitor({ namespace: ns, image: 'monitor:1', kataConfig, kataNodeSelector: workers, prometheusOperator: false });
    assert.ok(monitor);
    // The monitor's ServiceAccount is the operator's to make; the others come with the install.
    await client.create(ServiceAccounts, {
      ...monitor.serviceAccount,
      metadata: { ...monitor.serviceAccount.metadata, ownerReferences: [owner] },
    });
    await client.create(DaemonSets, { ...monitor.daemonSet, metadata: { ...monitor.daemonSet.metadata, ownerReferences: [owner] } });
    const placement = { nodeSelector: workers, tolerations: [] };
    await client.create(DaemonSets, desiredDaemonSet({ namespace: ns, image: 'caa:1', configHash: 'h', placement, owner }));
    for (const [name, scc] of [
      [MONITOR_DAEMONSET, MONITOR_SCC],
      [CAA_DAEMONSET, CAA_SCC],
    ]) {
      const event = await waitFor(
        async () =>
          (await client.list(Events, { namespace: ns })).items.find(
            (e) => e.reason === 'FailedCreate' && e.regarding?.name === name && e.note?.includes(SCC_REFUSAL),
          ),
        { timeoutMs: 120_000, message: `FailedCreate for ${name}` },
      );
      // Pinned to osc's SCC, the pod is tried against that one alone, which its ServiceAccount may not use.
      assert.equal(event.note?.split(`${SCC_REFUSAL}: `)[1], `provider "${scc}": Forbidden: not usable by user or serviceaccount`, name);
    }
    assert.equal((await podsOf(`name=${MONITOR_DAEMONSET}`)).length + (await podsOf(`app=${CAA_DAEMONSET}`)).length, 0);
  });

  test("with the install's grants: every pod admitted, openshift.io/scc naming osc's SCC", async () => {
    const { client } = cluster.dev;
    await applyAll(client, await identity());
    await client.create(
      Jobs,
      desiredImageJob({ kind: 'creation', namespace: ns, image: 'builder:1', backoffLimit: 1, configHash: 'h', owner }),
    );
    let nudge = 0;
    for (const [selector, ds, scc] of [
      [`name=${MONITOR_DAEMONSET}`, MONITOR_DAEMONSET, MONITOR_SCC],
      [`app=${CAA_DAEMONSET}`, CAA_DAEMONSET, CAA_SCC],
      ['job-name=osc-podvm-image-creation', undefined, PODVM_IMAGE_SCC],
    ] as const) {
      const pod = await waitFor(
        async () => {
          const found = (await podsOf(selector))[0];
          // The DaemonSet controller backs off after its failures; a change has it try again at once.
          if (!found && ds)
            await client.patch(DaemonSets, ds, { metadata: { annotations: { nudge: String(nudge++) } } }, { namespace: ns });
          return found;
        },
        { timeoutMs: 120_000, intervalMs: 2_500, message: `a pod for ${selector}` },
      );
      assert.equal(pod.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], scc, selector);
    }
  });
});
