import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CRIO_CONFIG, EXTENSION_MACHINE_CONFIG, KATA_NODE_ROLE_LABEL, KATA_POOL } from '../../src/api/names.ts';
import { ContainerRuntimeConfigs, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { Nodes, RuntimeClasses } from '../../src/kube/resources.ts';
import { StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

async function assertNothingLeft(dev: DevCluster): Promise<void> {
  const c = dev.client;
  assert.equal(await c.find(MachineConfigPools, KATA_POOL), undefined, 'pool kata-oc deleted');
  assert.equal(await c.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined, 'machine config deleted');
  assert.equal(await c.find(ContainerRuntimeConfigs, CRIO_CONFIG), undefined, 'kata-crio-config deleted');
  assert.equal(await c.find(RuntimeClasses, 'kata'), undefined, 'runtime class deleted');
  const labelled = (await c.list(Nodes)).items.filter((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined);
  assert.deepEqual(
    labelled.map((n) => n.metadata.name),
    [],
  );
  assert.deepEqual((await c.list(KataConfigs)).items, []);
}

const create = (dev: DevCluster, name: string, spec: KataConfig['spec'] = {}) =>
  dev.client.create(KataConfigs, { metadata: { name }, spec });

describe('KataConfig convergence: restarts, deletion mid-install, a node deleted mid-rollout', () => {
  const cluster = useDevCluster({ workers: 3, rebootMs: 600 });

  test('an operator stopped and restarted during install and during uninstall converges to the same end state', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'restart');
    await rec.synced();
    let op = await startOperator(dev);
    try {
      await create(dev, 'restart');
      await waitFor(() => (rec.seen.at(-1)?.kataNodes?.readyNodeCount ?? 0) >= 1, { timeoutMs: 120_000, message: 'one node installed' });
      await op.stop(); // in the middle of the rollout
      op = await startOperator(dev);
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.readyNodeCount === 3, {
        timeoutMs: 120_000,
        message: 'install finished by the new operator',
      });
      assert.deepEqual(rec.seen.at(-1)?.kataNodes, { installed: ['worker-0', 'worker-1', 'worker-2'], nodeCount: 3, readyNodeCount: 3 });
      assert.deepEqual(rec.seen.at(-1)?.runtimeClasses, ['kata']);

      await dev.client.delete(KataConfigs, 'restart');
      await waitFor(() => rec.seen.at(-1)?.kataNodes?.uninstalling?.length, { timeoutMs: 120_000, message: 'uninstall under way' });
      await op.stop();
      op = await startOperator(dev);
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'KataConfig gone after the restart' });
      await assertNothingLeft(dev);
    } finally {
      await rec.stop();
      await op.stop();
    }
  });

  test('the operator process killed (SIGKILL) mid-install and mid-uninstall: a new one converges', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'killed');
    await rec.synced();
    const main = new URL('../../src/cli/main.ts', import.meta.url).pathname;
    const args = [
      main,
      'run',
      '--kubeconfig',
      dev.controlPlane.kubeconfigPath,
      '--no-leader-elect',
      '--metrics-bind-address',
      '127.0.0.1:0',
      '--health-probe-bind-address',
      '0',
      '--webhook-bind-address',
      '127.0.0.1:0',
      '--webhook-url',
      'https://127.0.0.1:{port}',
    ];
    // Ready once its caches synced (after it registered its webhooks): until then, with the webhook's
    // failurePolicy Fail, a KataConfig cannot be created.
    const launch = () => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      const ready = new Promise<void>((resolve) =>
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('"caches synced"')) resolve();
        }),
      );
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      return { child, exited, ready };
    };
    let op = launch();
    try {
      await op.ready;
      await create(dev, 'killed');
      await waitFor(() => (rec.seen.at(-1)?.kataNodes?.readyNodeCount ?? 0) >= 1, { timeoutMs: 120_000, message: 'one node installed' });
      op.child.kill('SIGKILL');
      await op.exited;
      op = launch();
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.readyNodeCount === 3, {
        timeoutMs: 120_000,
        message: 'install finished by the new process',
      });
      await dev.client.delete(KataConfigs, 'killed');
      await waitFor(() => rec.seen.at(-1)?.kataNodes?.uninstalling?.length, { timeoutMs: 120_000, message: 'uninstall under way' });
      op.child.kill('SIGKILL');
      await op.exited;
      op = launch();
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'KataConfig gone after the kill' });
      await assertNothingLeft(dev);
    } finally {
      await rec.stop();
      op.child.kill('SIGKILL');
      await op.exited;
    }
  });

  test('deleted while installing: the rollout settles first, then everything is removed', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'early-delete');
    await rec.synced();
    const op = await startOperator(dev);
    try {
      await create(dev, 'early-delete');
      await waitFor(() => rec.seen.at(-1)?.kataNodes?.installing?.length, { timeoutMs: 120_000, message: 'a node installing' });
      await dev.client.delete(KataConfigs, 'early-delete');
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 180_000, message: 'KataConfig gone' });
      // Never two nodes out at once, even across the switch from installing to uninstalling.
      for (const s of rec.seen) {
        const out = (s.kataNodes?.installing?.length ?? 0) + (s.kataNodes?.uninstalling?.length ?? 0);
        assert.ok(out <= 1, `one node at a time: ${JSON.stringify(s)}`);
      }
      assert.ok(rec.seen.some((s) => s.inProgress?.reason === 'Uninstalling'));
      await assertNothingLeft(dev);
    } finally {
      await rec.stop();
      await op.stop();
    }
  });

  test('a node deleted in the middle of a rollout drops out of the status and the install completes', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'node-gone');
    await rec.synced();
    const op = await startOperator(dev);
    try {
      await create(dev, 'node-gone');
      await waitFor(() => rec.seen.at(-1)?.kataNodes?.installing?.includes('worker-0'), {
        timeoutMs: 120_000,
        message: 'worker-0 installing',
      });
      await dev.removeNode('worker-2');
      await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 120_000, message: 'settled without worker-2' });
      assert.deepEqual(rec.seen.at(-1)?.kataNodes, { installed: ['worker-0', 'worker-1'], nodeCount: 2, readyNodeCount: 2 });
      await dev.client.delete(KataConfigs, 'node-gone');
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'KataConfig gone' });
      await assertNothingLeft(dev);
    } finally {
      await rec.stop();
      await op.stop();
    }
  });
});
