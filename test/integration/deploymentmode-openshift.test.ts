/**
 * `deploymentMode: DaemonSet` on OpenShift, with SCC admission on: the operator runs kata-deploy's platform,
 * the installer's pods are admitted under osc's own SCC by the ServiceAccount and pinned grant osc ships,
 * the dev cluster plays kata-deploy's host side on the OpenShift nodes, and one KataConfig rolls out
 * without a MachineConfig. The mode changed while kata is on the nodes: a FeatureGateMode warning says
 * what to do, a restart keeps the platform that installed, and once the KataConfig is gone a restart
 * switches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FEATURE_GATES_CONFIGMAP, featureGateTexts } from '../../src/api/featuregates.ts';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { EXTENSION_MACHINE_CONFIG, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { KATA_DEPLOY_SCC, REQUIRED_SCC_ANNOTATION, VALIDATED_SCC_ANNOTATION } from '../../src/api/scc.ts';
import { ConfigMaps, DaemonSets, Events, Nodes, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { INSTALLER_NAME, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import { type RunningOperator, StatusRecorder, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const WORKERS = ['worker-0', 'worker-1'];

describe('deploymentMode DaemonSet on OpenShift', () => {
  const cluster = useDevCluster({ workers: 2, kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 1000 } });
  let op: RunningOperator | undefined;
  let rec: StatusRecorder;
  const restart = async () => {
    await op?.stop();
    op = await startOperator(cluster.dev);
    return op.operator.platform.name;
  };
  const settled = () => {
    const c = rec.current?.status?.conditions?.find((x) => x.type === 'InProgress');
    return c?.status === 'False' && c.reason === '';
  };
  const modeEvents = async () =>
    (await cluster.dev.client.list(Events, { namespace: 'default' })).items.filter((e) => e.reason === 'FeatureGateMode');

  before(async () => {
    const { client } = cluster.dev;
    assert.ok(cluster.dev.sccAdmission, 'SCC admission on');
    await client.create(ConfigMaps, {
      metadata: { name: FEATURE_GATES_CONFIGMAP, namespace: OPERATOR_NAMESPACE },
      data: { deploymentMode: 'DaemonSet' },
    });
    rec = new StatusRecorder(client, KC);
    await rec.synced();
  });
  after(async () => {
    await op?.stop();
    await rec.stop();
  });

  test("one KataConfig rolls out through kata-deploy: its pods admitted under osc's SCC, no MachineConfig", async () => {
    const { client } = cluster.dev;
    assert.equal(await restart(), 'kubernetes', 'the DaemonSet mode runs kata-deploy on OpenShift');
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} });
    await waitFor(() => settled() && rec.current?.status?.runtimeClasses?.includes('kata'), {
      timeoutMs: 180_000,
      message: 'installed through kata-deploy',
    });
    assert.equal((await client.get(RuntimeClasses, 'kata')).handler, 'kata-qemu');
    for (const w of WORKERS) assert.equal((await client.get(Nodes, w)).metadata.labels?.[KATA_RUNTIME_LABEL], 'true', `${w} has kata`);
    const pods = (await client.list(Pods, { namespace: OPERATOR_NAMESPACE, labelSelector: `name=${INSTALLER_NAME}` })).items;
    assert.equal(pods.length, WORKERS.length);
    for (const p of pods) {
      assert.equal(p.metadata.annotations?.[REQUIRED_SCC_ANNOTATION], KATA_DEPLOY_SCC);
      assert.equal(p.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], KATA_DEPLOY_SCC, 'admitted under osc-kata-deploy');
      assert.equal((p.spec as { serviceAccountName?: string }).serviceAccountName, INSTALLER_NAME);
      assert.equal(p.status?.phase, 'Running');
    }
    assert.equal(await client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined, 'no MachineConfig');
    assert.equal(await client.find(MachineConfigPools, 'kata-oc'), undefined, 'no kata-oc pool');
  });

  test('the mode changed while kata is on the nodes: a FeatureGateMode warning says what to do, and a restart keeps kata-deploy', async () => {
    const { client } = cluster.dev;
    await client.patch(
      ConfigMaps,
      FEATURE_GATES_CONFIGMAP,
      { data: { deploymentMode: 'MachineConfig' } },
      { namespace: OPERATOR_NAMESPACE },
    );
    const ev = await waitFor(async () => (await modeEvents())[0], { timeoutMs: 60_000, message: 'the FeatureGateMode event' });
    assert.equal(ev.type, 'Warning');
    assert.equal(ev.regarding?.name, KC);
    assert.equal(ev.note, featureGateTexts.modeMismatch('MachineConfig', 'kubernetes'));
    assert.match(ev.note ?? '', /delete the KataConfig and wait until it is gone, restart the operator/);

    // A restart does not start a second installer beside kata-deploy's: the platform that installed stays.
    assert.equal(await restart(), 'kubernetes');
    await waitFor(() => settled(), { timeoutMs: 60_000, message: 'still settled' });
    assert.equal(await client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined, 'still no MachineConfig');
    assert.ok(await client.find(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE));
    // The restarted operator says so again (its own first pass).
    await waitFor(async () => (await modeEvents()).reduce((n, e) => n + (e.series?.count ?? 1), 0) >= 2, {
      timeoutMs: 60_000,
      message: 'the warning again',
    });
  });

  test('the KataConfig deleted: kata-deploy cleans up; the next start runs the mode asked for', async () => {
    const { client } = cluster.dev;
    await client.delete(KataConfigs, KC);
    await waitFor(async () => !(await client.find(KataConfigs, KC)), { timeoutMs: 180_000, message: 'uninstalled' });
    await waitFor(async () => !(await client.find(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE)), {
      timeoutMs: 60_000,
      message: 'the installer DaemonSet gone',
    });
    for (const w of WORKERS) assert.equal((await client.get(Nodes, w)).metadata.labels?.[KATA_RUNTIME_LABEL], undefined, `${w} cleaned up`);
    assert.equal(await restart(), 'openshift');
  });
});
