import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { EXTENSION_MACHINE_CONFIG, KATA_NODE_ROLE_LABEL, KATA_POOL } from '../../src/api/names.ts';
import { MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { Nodes, RuntimeClasses } from '../../src/kube/resources.ts';
import { StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

describe('compact cluster: masters are the workers', () => {
  const cluster = useDevCluster({ compact: true, masters: 3, rebootMs: 400 });

  test('kata goes on the master pool: no kata-oc pool or labels; selector ignored; clean uninstall', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'compact');
    await rec.synced();
    const op = await startOperator(dev);
    try {
      await dev.client.create(KataConfigs, {
        metadata: { name: 'compact' },
        spec: { kataConfigPoolSelector: { matchLabels: { ignored: 'yes' } } },
      });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.readyNodeCount === 3, {
        timeoutMs: 120_000,
        message: 'installed on masters',
      });
      assert.deepEqual(rec.seen.at(-1)?.kataNodes, { installed: ['master-0', 'master-1', 'master-2'], nodeCount: 3, readyNodeCount: 3 });
      assert.ok(rec.seen.some((s) => s.kataNodes?.installing?.length === 1));
      assert.equal(await dev.client.find(MachineConfigPools, KATA_POOL), undefined, 'no kata-oc pool on a compact cluster');
      const mc = await dev.client.get(MachineConfigs, EXTENSION_MACHINE_CONFIG);
      assert.equal(mc.metadata.labels?.['machineconfiguration.openshift.io/role'], 'master');
      const rc = await dev.client.get(RuntimeClasses, 'kata');
      assert.deepEqual(rc.scheduling?.nodeSelector, { 'node-role.kubernetes.io/master': '' });
      const labelled = (await dev.client.list(Nodes)).items.filter((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined);
      assert.equal(labelled.length, 0);

      const mark = rec.seen.length;
      await dev.client.delete(KataConfigs, 'compact');
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'uninstalled' });
      const un = rec.seen.slice(mark);
      assert.ok(
        un.some((s) => s.inProgress?.reason === 'Uninstalling' && (s.kataNodes?.uninstalling?.length ?? 0) === 1),
        JSON.stringify(un),
      );
      assert.equal(await dev.client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined);
      assert.equal(await dev.client.find(RuntimeClasses, 'kata'), undefined);
      const master = await dev.client.get(MachineConfigPools, 'master');
      assert.ok(
        !(master.spec.configuration?.source ?? []).some((s) => s.name === EXTENSION_MACHINE_CONFIG),
        'masters are back on a config without kata',
      );
    } finally {
      await rec.stop();
      await op.stop();
    }
  });
});
