/**
 * The simulated clouds' side of the pod VM image jobs: a job pod's container runs once. An update of the pod
 * that comes before the cache shows it ended (kwok writing its status again) does not have the cloud do the
 * work a second time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLOUD_JOBS, ImageJobCloud } from '../../src/devcluster/clouds/image-jobs.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { Pod } from '../../src/kube/resources.ts';
import type { Controller } from '../../src/runtime/controller.ts';
import { openUntilAborted } from '../support/fake-client.ts';
import { waitFor } from '../support/wait.ts';

const NS = 'openshift-sandboxed-containers-operator';

const deletionPod = (rv: string): Pod => ({
  metadata: { name: 'deletion-abcde', namespace: NS, uid: 'pod-1', resourceVersion: rv, labels: { 'job-name': CLOUD_JOBS[1] } },
  spec: { containers: [{ name: 'delete', image: 'podvm-builder', env: [{ name: 'AMI_ID', value: 'ami-1' }] }] } as Pod['spec'],
  status: { phase: 'Running', startTime: '2026-01-01T00:00:00Z' } as Pod['status'],
});

test('a deletion job pod seen Running twice before its end shows: the image is deleted once', async () => {
  let emit: ((ev: { type: string; object: Pod }) => void) | undefined;
  const podPatches: unknown[] = [];
  const client = {
    list: async (_rt: unknown, opts: { map?: (o: Pod) => Pod }) => ({
      metadata: { resourceVersion: '1' },
      items: [deletionPod('1')].map((p) => opts.map?.(p) ?? p),
    }),
    watch: (_rt: unknown, opts: { signal: AbortSignal }, onEvent: (ev: { type: string; object: Pod }) => void) => {
      emit = onEvent;
      return openUntilAborted(opts.signal);
    },
    find: async (rt: { plural: string }) =>
      rt.plural === 'configmaps'
        ? { metadata: { name: 'peer-pods-cm', namespace: NS }, data: { PODVM_AMI_ID: 'ami-1' } }
        : rt.plural === 'jobs'
          ? { metadata: { name: CLOUD_JOBS[1], namespace: NS } }
          : undefined,
    patch: async (rt: { plural: string }, _name: string, patch: unknown) => {
      if (rt.plural === 'pods') podPatches.push(patch);
      return {};
    },
  } as unknown as KubeClient;
  const cloud = new ImageJobCloud(
    { client, namespace: NS, imageJobMs: 0 },
    { imageKey: 'PODVM_AMI_ID', deletionEnv: 'AMI_ID', newImage: () => 'ami-2', refuse: () => undefined },
  );
  const ac = new AbortController();
  try {
    await cloud.start(ac.signal);
    await waitFor(() => podPatches.length === 1 && emit !== undefined, { message: 'the pod ended once' });
    assert.equal(cloud.stats.deletions, 1);
    // kwok writes the pod's status again; the watch shows it Running still.
    emit?.({ type: 'MODIFIED', object: deletionPod('2') });
    const controller = (cloud as unknown as { controller: Controller }).controller;
    await waitFor(
      () =>
        cloud.pods.get(`${NS}/deletion-abcde`)?.metadata.resourceVersion === '2' &&
        controller.queue.length === 0 &&
        !controller.queue.isProcessing(`${NS}/deletion-abcde`),
      { message: 'the update handled' },
    );
    assert.equal(cloud.stats.deletions, 1, 'the image is deleted once');
    assert.ok(podPatches.length <= 2, 'at most the end written again');
  } finally {
    ac.abort();
  }
});
