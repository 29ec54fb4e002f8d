import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { NFD_KATA_LABEL } from '../../src/api/names.ts';
import { VIRTUALIZATION_CAPABLE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { Nodes } from '../../src/kube/resources.ts';
import { StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

describe('checkNodeEligibility with Node Feature Discovery', () => {
  // NFD finds virtualization on worker-1 only.
  const cluster = useDevCluster({ workers: 3, virtualizationCapable: ['worker-1'], rebootMs: 300 });

  test('only NFD-labelled workers get kata; with none, the status says why and a label added later is picked up', async () => {
    const dev = cluster.dev;
    const rec = new StatusRecorder(dev.client, 'eligible');
    await rec.synced();
    const op = await startOperator(dev);
    try {
      await dev.client.create(KataConfigs, { metadata: { name: 'eligible' }, spec: { checkNodeEligibility: true } });
      await waitFor(() => settled(rec.seen.at(-1)), { timeoutMs: 120_000, message: 'installed' });
      assert.deepEqual(rec.seen.at(-1)?.kataNodes, { installed: ['worker-1'], nodeCount: 1, readyNodeCount: 1 });

      // Virtualization gets disabled on worker-1 (say, in its firmware): NFD withdraws the label, nothing is eligible.
      await dev.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [VIRTUALIZATION_CAPABLE_ANNOTATION]: 'false' } } });
      await waitFor(() => rec.seen.at(-1)?.inProgress?.message === messages.noEligibleNodes(), {
        timeoutMs: 120_000,
        message: 'the NFD hint',
      });
      assert.equal(rec.seen.at(-1)?.inProgress?.status, 'True');

      // An administrator labels a node by hand (the documented alternative to NFD).
      await dev.client.patch(Nodes, 'worker-2', { metadata: { labels: { [NFD_KATA_LABEL]: 'true' } } });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.installed?.[0] === 'worker-2', {
        timeoutMs: 120_000,
        message: 'worker-2 installed',
      });
      assert.deepEqual(rec.seen.at(-1)?.kataNodes, { installed: ['worker-2'], nodeCount: 1, readyNodeCount: 1 });
      await dev.client.delete(KataConfigs, 'eligible');
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'uninstalled' });
    } finally {
      await rec.stop();
      await op.stop();
    }
  });
});
