/**
 * A compact dev cluster: three masters that also run workloads, no workers. The worker pool exists with no
 * machines (and is Updated); the master pool holds every node and rolls updates out one at a time.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MC_ROLE_LABEL, MCO_CURRENT_CONFIG, NFD_KATA_LABEL, WORKER_ROLE_LABEL } from '../../src/api/names.ts';
import { Infrastructures, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { DevCluster } from '../../src/devcluster/devcluster.ts';
import { Nodes } from '../../src/kube/resources.ts';
import { createLogger, silentLogger } from '../../src/runtime/log.ts';
import { summarizePool } from '../support/observe.ts';
import { waitFor } from '../support/wait.ts';

const log = process.env.OSC_TEST_LOG ? createLogger({ level: 'debug', destination: process.stderr }) : silentLogger();
let dc: DevCluster;

before(async () => {
  dc = await DevCluster.start({ compact: true, rebootMs: 200, virtualizationCapable: 'none', log });
});
after(() => dc?.stop());

const pool = (name: string) => dc.informers.pools.get(name) as MachineConfigPool;

test('compact cluster: masters only, the worker pool Updated with no machines', async () => {
  const nodes = (await dc.client.list(Nodes)).items;
  assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), ['master-0', 'master-1', 'master-2']);
  for (const n of nodes) {
    assert.equal(n.metadata.labels?.[WORKER_ROLE_LABEL], '', 'compact masters carry the worker role');
    assert.equal(n.metadata.labels?.['node-role.kubernetes.io/master'], '');
    assert.equal(n.spec?.taints, undefined, 'compact masters are schedulable');
    assert.equal(n.metadata.labels?.[NFD_KATA_LABEL], undefined, 'no node is virtualization-capable');
  }
  const worker = summarizePool(pool('worker'));
  assert.match(worker.config ?? '', /^rendered-worker-[0-9a-f]{32}$/);
  assert.deepEqual(
    [worker.updated, worker.updating, worker.degraded, worker.machineCount, worker.readyMachineCount, worker.updatedMachineCount],
    ['True', 'False', 'False', 0, 0, 0],
  );
  const master = summarizePool(pool('master'));
  assert.deepEqual([master.updated, master.machineCount, master.readyMachineCount, master.updatedMachineCount], ['True', 3, 3, 3]);
  assert.deepEqual(dc.mco.nodesOf('master'), ['master-0', 'master-1', 'master-2']);

  const infra = await dc.client.get(Infrastructures, 'cluster');
  assert.equal(infra.status?.controlPlaneTopology, 'HighlyAvailable');
  assert.equal(infra.status?.infrastructureTopology, 'HighlyAvailable');

  const mcp = await dc.controlPlane.kubectl(['get', 'mcp', 'worker', '--no-headers']);
  assert.equal(mcp.code, 0, mcp.stderr);
  assert.deepEqual(mcp.stdout.trim().split(/\s+/).slice(0, 9), ['worker', worker.config, 'True', 'False', 'False', '0', '0', '0', '0']);
});

test('compact cluster: a master MachineConfig rolls out over the masters one at a time', async () => {
  const before = pool('master').spec.configuration?.name;
  let maxUnavailable = 0;
  const seen: string[] = [];
  dc.informers.pools.addEventHandler({
    update: (_, p) => {
      if (p.metadata.name !== 'master') return;
      maxUnavailable = Math.max(maxUnavailable, p.status?.unavailableMachineCount ?? 0);
      seen.push(`${p.status?.updatedMachineCount}/${p.status?.machineCount}`);
    },
  });
  await dc.client.create(MachineConfigs, {
    metadata: { name: '50-test-master', labels: { [MC_ROLE_LABEL]: 'master' } },
    spec: { config: { ignition: { version: '3.2.0' } }, kernelArguments: ['osc.test=1'] },
  });
  const done = await waitFor(
    () => {
      const p = pool('master');
      const updated = p.status?.conditions?.find((c) => c.type === 'Updated')?.status === 'True';
      return p.spec.configuration?.name !== before && updated && p.status?.configuration?.name === p.spec.configuration?.name
        ? p
        : undefined;
    },
    { message: 'the master pool to roll out the new config' },
  );
  assert.equal(maxUnavailable, 1);
  for (const n of (await dc.client.list(Nodes)).items)
    assert.equal(n.metadata.annotations?.[MCO_CURRENT_CONFIG], done.spec.configuration?.name);
  assert.equal(pool('worker').status?.machineCount, 0);
  assert.ok(seen.includes('3/3'));
  assert.ok(
    (await dc.client.get(MachineConfigPools, 'worker')).status?.conditions?.some((c) => c.type === 'Updated' && c.status === 'True'),
  );
});
