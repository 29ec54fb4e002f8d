/**
 * A failed update on plain Kubernetes, then every order of clearing the fault and touching the spec, as a
 * new user would try it (issue 25): the rollout always comes back to every node Installed. The soak is
 * the default (10 minutes), so a node that fails has no last known good configuration yet: kata leaves it,
 * and kata-deploy's crashed installer cannot clean up (its restart back-off outlasts the test). Also: the
 * operator restarted mid-rollout and mid-rollback converges to the same end, and a KataConfig deleted
 * while failed is uninstalled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { type KataNode, KataNodes } from '../../src/api/katanode.ts';
import { type LogLevel, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { DaemonSets, Nodes, Pods } from '../../src/kube/resources.ts';
import { INSTALL_LABEL, INSTALLER_NAME, KATA_RUNTIME_LABEL, ROLLOUT_ANNOTATION } from '../../src/platform/kubernetes/katadeploy.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const WORKERS = ['worker-0', 'worker-1'];

describe('KataConfig on plain Kubernetes: failures cleared in every order', () => {
  const cluster = useDevCluster({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    // A failed installer waits long before its restart: deleted then, it exits without cleaning up.
    kataDeploy: { installMs: 1000, cleanupMs: 300, restartBackoffMs: 600_000 },
  });
  let op: RunningOperator | undefined;
  let recorder: StatusRecorder;
  let kataNodes: Informer<KataNode>;
  const ac = new AbortController();
  let watching: Promise<void>;
  const start = async () => {
    op = await startOperator(cluster.dev, { platformOptions: { settings: { kubernetes: { installDeadlineMs: 90_000 } } } });
  };

  before(async () => {
    await start();
    recorder = new StatusRecorder(cluster.dev.client, KC);
    kataNodes = new Informer(cluster.dev.client, KataNodes);
    watching = kataNodes.run(ac.signal);
    await Promise.all([recorder.synced(), kataNodes.waitForSync()]);
  });
  after(async () => {
    ac.abort();
    await watching;
    await recorder?.stop();
    await op?.stop();
  });

  const client = () => cluster.dev.client;
  const inProgress = () => recorder.current?.status?.conditions?.find((x) => x.type === 'InProgress');
  const kataNode = (name: string) => kataNodes.get(name)?.status;
  const busy = (s: StatusView) => (s.kataNodes?.installing?.length ?? 0) + (s.kataNodes?.uninstalling?.length ?? 0);
  const logLevel = (level: LogLevel) => client().patch(KataConfigs, KC, { spec: { logLevel: level } });
  const fault = (reason: string | null) =>
    client().patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: reason } } });
  const debugOn = (n: string) => /debug on/.test(kataNode(n)?.active?.description ?? '');

  /** Every worker Installed on the configuration of `debug`, the KataConfig settled, osc's label on each node. */
  async function settledOn(debug: boolean, message: string): Promise<void> {
    await waitFor(
      () =>
        inProgress()?.status === 'False' &&
        inProgress()?.reason === '' &&
        recorder.current?.status?.kataNodes?.readyNodeCount === 2 &&
        WORKERS.every((n) => kataNode(n)?.phase === 'Installed' && kataNode(n)?.error === '' && debugOn(n) === debug),
      { timeoutMs: 180_000, message },
    );
    for (const n of WORKERS) {
      const labels = (await client().get(Nodes, n)).metadata.labels ?? {};
      assert.equal(labels[INSTALL_LABEL], 'true', `${n} carries osc's label`);
      assert.equal(labels[KATA_RUNTIME_LABEL], 'true', `${n} runs kata`);
    }
  }

  /** worker-0 fails its update: Failed with its reason, and it leaves the rollout. */
  async function failsOnWorker0(reason: string): Promise<void> {
    await waitFor(() => inProgress()?.reason === 'Failed' && inProgress()?.message === `Node worker-0 Degraded: ${reason}`, {
      timeoutMs: 120_000,
      message: `Failed on worker-0: ${reason}`,
    });
    await waitFor(() => kataNode('worker-0')?.phase === 'FailedToInstall' && kataNode('worker-0')?.error === reason, {
      message: "worker-0's KataNode FailedToInstall",
    });
    assert.equal(kataNode('worker-1')?.phase, 'WaitingToInstall', 'worker-1 was not touched');
  }

  test('install on both workers', async () => {
    await client().create(KataConfigs, { metadata: { name: KC }, spec: { logLevel: 'info' } } as KataConfig);
    await settledOn(false, 'installed on both workers');
  });

  test('issue 25: fail, then clear and set the spec back: the failed node is given its configuration again', async () => {
    await fault('disk full');
    await logLevel('debug');
    await failsOnWorker0('disk full');
    await waitFor(async () => (await client().get(Nodes, 'worker-0')).metadata.labels?.[INSTALL_LABEL] === undefined, {
      message: 'kata taken off worker-0 (no last known good yet)',
    });
    const from = recorder.seen.length;
    await fault(null);
    await logLevel('info');
    await settledOn(false, 'both workers back on the info configuration');
    assert.ok(
      recorder.seen.slice(from).every((s) => busy(s) <= 1),
      'one node at a time',
    );
  });

  test('fail, clear, then touch the spec to the configuration that failed: it installs', async () => {
    await fault('containerd did not restart');
    await logLevel('debug');
    await failsOnWorker0('containerd did not restart');
    await fault(null);
    await logLevel('trace');
    await settledOn(true, 'both workers on the debug configuration');
  });

  test('fail on the return to a previous value; touch the spec to a third value while failed: it fails again', async () => {
    await fault('no space left on device');
    await logLevel('info');
    await failsOnWorker0('no space left on device');
    const generation = recorder.current?.metadata.generation ?? 0;
    // A new generation resumes the rollout from worker-0, which fails again: the fault is still there.
    await fault('no space left, again');
    await logLevel('warn');
    await waitFor(() => (recorder.current?.metadata.generation ?? 0) > generation);
    await failsOnWorker0('no space left, again');
    await fault(null);
    await logLevel('info');
    await settledOn(false, 'both workers back on the info configuration');
  });

  test('the operator restarted mid-rollout and mid-rollback converges to the same end', async () => {
    await logLevel('debug');
    await waitFor(() => kataNode('worker-0')?.phase === 'Installing' || kataNode('worker-1')?.phase === 'Installing', {
      message: 'mid-rollout',
    });
    await op?.stop();
    await start();
    await settledOn(true, 'the rollout finished after a restart');

    await fault('disk full');
    await logLevel('info');
    await failsOnWorker0('disk full');
    await op?.stop();
    await start();
    // The new operator knows the rollout failed, and why, from the cluster alone.
    await waitFor(() => inProgress()?.reason === 'Failed', { message: 'still Failed after the restart' });
    assert.equal(inProgress()?.message, 'Node worker-0 Degraded: disk full');
    await fault(null);
    await op?.stop();
    await start();
    await logLevel('warn');
    await settledOn(false, 'both workers on the info configuration after restarts');
  });

  test("kata-deploy's label taken from an installed node (as an etcd restore does): its installer runs again", async () => {
    await settledOn(false, 'settled before');
    const installerOn = async (node: string) =>
      (await client().list(Pods, { labelSelector: `name=${INSTALLER_NAME}` })).items.find(
        (p) => p.spec?.nodeName === node && !p.metadata.deletionTimestamp,
      );
    const before = (await installerOn('worker-1'))?.metadata.name;
    assert.ok(before, 'an installer on worker-1');
    // kata-deploy labels a node once, after installing; the label goes, the installer stays Ready.
    await client().patch(Nodes, 'worker-1', { metadata: { labels: { [KATA_RUNTIME_LABEL]: null } } });
    await waitFor(async () => (await installerOn('worker-1'))?.metadata.name !== before, {
      timeoutMs: 90_000,
      message: 'a new installer on worker-1',
    });
    await settledOn(false, 'worker-1 labelled again by its new installer, both Installed');
  });

  test('a KataConfig deleted while failed is uninstalled', async () => {
    await fault('disk full');
    await logLevel('debug');
    await failsOnWorker0('disk full');
    await fault(null);
    await client().delete(KataConfigs, KC);
    await waitFor(() => recorder.deleted.length > 0, { timeoutMs: 180_000, message: 'KataConfig gone' });
    assert.notEqual(inProgress()?.message, messages.blocked(['kata']));
    await waitFor(async () => (await client().list(KataNodes)).items.length === 0, { message: 'no KataNode left' });
    for (const n of (await client().list(Nodes)).items) {
      assert.equal(n.metadata.labels?.[INSTALL_LABEL], undefined, `${n.metadata.name}: osc's label gone`);
      assert.equal(n.metadata.annotations?.[ROLLOUT_ANNOTATION], undefined, `${n.metadata.name}: the rollout's memory gone`);
      assert.equal(n.metadata.labels?.[KATA_RUNTIME_LABEL], undefined, `${n.metadata.name}: kata-deploy cleaned it up`);
    }
  });

  test('the installer DaemonSet gone while nodes still have kata to lose (as an etcd restore can leave them): the uninstall brings it back and cleans them', async () => {
    await client().create(KataConfigs, { metadata: { name: KC }, spec: { logLevel: 'info' } } as KataConfig);
    await settledOn(false, 'installed again');
    // With the operator away: the KataConfig deleted, the DaemonSet and its pods gone, then kata-deploy's
    // label back on the nodes, osc's assignment never taken off (a restore to a backup from before the
    // cleanup, after a pass from caches behind the restore had deleted the DaemonSet the restore gave back).
    await op?.stop();
    await client().delete(KataConfigs, KC);
    await client().delete(DaemonSets, INSTALLER_NAME, { namespace: OPERATOR_NAMESPACE, propagationPolicy: 'Background' });
    await waitFor(async () => (await client().list(Pods, { labelSelector: `name=${INSTALLER_NAME}` })).items.length === 0, {
      message: 'the installer pods gone',
    });
    for (const n of WORKERS) await client().patch(Nodes, n, { metadata: { labels: { [KATA_RUNTIME_LABEL]: 'true' } } });
    const seenBefore = recorder.seen.length;
    const deletedBefore = recorder.deleted.length;
    await start();
    await waitFor(() => recorder.deleted.length > deletedBefore, { timeoutMs: 180_000, message: 'KataConfig gone' });
    const failed = recorder.seen.slice(seenBefore).filter((s) => s.inProgress?.reason === 'Failed');
    assert.deepEqual(failed, [], 'no node waited out its deadline');
    for (const n of (await client().list(Nodes)).items) {
      assert.equal(n.metadata.labels?.[INSTALL_LABEL], undefined, `${n.metadata.name}: osc's label gone`);
      assert.equal(n.metadata.labels?.[KATA_RUNTIME_LABEL], undefined, `${n.metadata.name}: kata-deploy cleaned it up`);
    }
    assert.equal(await client().find(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE), undefined, 'the DaemonSet gone again');
  });
});
