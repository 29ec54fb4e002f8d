/**
 * The KataConfig lifecycle on plain Kubernetes: the operator (in this process, its platform found by
 * discovery) on the dev cluster's kubernetes distribution, where kata-deploy's host side is simulated.
 * The documented status transitions, one node at a time; the kata RuntimeClass and a sandboxed pod on a
 * kata node; a failed update rolled back and the rollout stopped, then resumed by a spec change; the
 * guarded uninstall, one node at a time, leaving nothing behind.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { type KataNode, KataNodes } from '../../src/api/katanode.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  DaemonSets,
  Nodes,
  type Pod,
  Pods,
  RuntimeClasses,
  ServiceAccounts,
} from '../../src/kube/resources.ts';
import { INSTALL_LABEL, INSTALLER_NAME, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { inOrder, type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const KC = 'example-kataconfig';
const SOAK_MS = 1500;

describe('KataConfig on plain Kubernetes (kata-deploy)', () => {
  const cluster = useDevCluster({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    kataDeploy: { installMs: 1500, cleanupMs: 500, restartBackoffMs: 1000 },
  });
  let op: RunningOperator;
  let recorder: StatusRecorder;
  let kataNodes: Informer<KataNode>;
  const ac = new AbortController();
  let watching: Promise<void>;

  before(async () => {
    op = await startOperator(cluster.dev, {
      kataConfig: { soakMs: SOAK_MS },
      platformOptions: { settings: { kubernetes: { installDeadlineMs: 60_000 } } },
    });
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
  const settled = () => inProgress()?.status === 'False' && inProgress()?.reason === '';
  const kataNode = (name: string) => kataNodes.get(name)?.status;
  const busy = (s: StatusView) => (s.kataNodes?.installing?.length ?? 0) + (s.kataNodes?.uninstalling?.length ?? 0);

  test('the platform is found by discovery: no Machine Config Operator API', () => {
    assert.equal(op.operator.platform.name, 'kubernetes');
  });

  test('install: the documented transitions, one node at a time, then RuntimeClass kata from kata-deploy', async () => {
    await client().create(KataConfigs, { metadata: { name: KC }, spec: { logLevel: 'info' } } as KataConfig);
    await waitFor(() => settled() && recorder.current?.status?.runtimeClasses?.includes('kata'), {
      timeoutMs: 120_000,
      message: 'kata installed on both workers',
    });
    const seen = recorder.seen;
    const rt = 'kata';
    const order = inOrder(seen, [
      (s) => s.inProgress?.reason === 'Installing' && s.inProgress.message === messages.installing(rt) && s.kataNodes?.nodeCount === 0,
      (s) => s.kataNodes?.installing?.[0] === 'worker-0' && s.kataNodes.waitingToInstall?.[0] === 'worker-1',
      (s) => s.kataNodes?.installing?.[0] === 'worker-1' && s.kataNodes.installed?.[0] === 'worker-0',
      (s) =>
        s.inProgress?.status === 'False' &&
        s.kataNodes?.readyNodeCount === 2 &&
        JSON.stringify(s.kataNodes.installed) === '["worker-0","worker-1"]' &&
        JSON.stringify(s.runtimeClasses) === '["kata"]',
    ]);
    assert.ok(order.ok, `transitions in order (matched ${order.matched}): ${JSON.stringify(seen, null, 1)}`);
    assert.ok(
      seen.every((s) => busy(s) <= 1),
      'never more than one node installing',
    );
    const rc = await client().get(RuntimeClasses, 'kata');
    assert.equal(rc.handler, 'kata-qemu');
    assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_RUNTIME_LABEL]: 'true' });
    assert.deepEqual(rc.overhead?.podFixed, { memory: '320Mi', cpu: '250m' });
    for (const n of ['worker-0', 'worker-1']) {
      // KataNodes are written beside the KataConfig status: they may be a moment behind it.
      const s = await waitFor(() => (kataNode(n)?.phase === 'Installed' ? kataNode(n) : undefined), {
        message: `${n}'s KataNode Installed`,
      });
      assert.equal(s?.active?.id, s?.assigned?.id);
      assert.equal((await client().get(Nodes, n)).metadata.labels?.[KATA_RUNTIME_LABEL], 'true');
    }
    assert.equal((await client().get(Nodes, 'master-0')).metadata.labels?.[KATA_RUNTIME_LABEL], undefined);
  });

  test('osc status and osc must-gather work here: no Machine Config Operator to collect, the installer is', async () => {
    const out: string[] = [];
    const io = { stdout: Object.assign(new PassThrough(), { isTTY: false }), stderr: new PassThrough() };
    io.stdout.on('data', (d) => out.push(String(d)));
    const { status } = await import('../../src/cli/commands/status.ts');
    assert.equal(await status({ kubeconfig: cluster.dev.controlPlane.kubeconfigPath, output: 'json' }, io), 0);
    const shown = JSON.parse(out.join('')) as { kataConfigs: { name: string; readyNodeCount?: number }[] };
    assert.equal(shown.kataConfigs[0]?.name, KC);
    assert.match(out.join(''), /worker-0/);

    const dir = await mkdtemp(join(tmpdir(), 'osc-mg-'));
    try {
      const { mustGather } = await import('../../src/mustgather/collect.ts');
      const got = await mustGather(client(), { destDir: dir });
      // kwok runs no kubelet to serve container logs: only those may be missing.
      assert.deepEqual(
        got.problems.filter((p) => !p.startsWith('logs of ')),
        [],
        'everything else collected',
      );
      const has = (suffix: string) => got.files.some((f) => f.endsWith(suffix));
      assert.ok(has('cluster-scoped/katanodes.yaml'));
      assert.ok(has('cluster-scoped/PLATFORM.txt'));
      assert.ok(!has('cluster-scoped/machineconfigpools.yaml'));
      assert.ok(has(`namespaces/${OPERATOR_NAMESPACE}/daemonsets.yaml`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a sandboxed pod lands on a kata node', async () => {
    const pod: Pod = {
      metadata: { name: 'sandboxed', namespace: 'default' },
      spec: { runtimeClassName: 'kata', containers: [{ name: 'c', image: 'registry.example/app:1' }] },
    };
    await client().create(Pods, pod);
    const placed = await waitFor(async () => (await client().get(Pods, 'sandboxed', 'default')).spec?.nodeName, { timeoutMs: 60_000 });
    assert.match(placed, /^worker-/);
    assert.equal((await client().get(Nodes, placed)).metadata.labels?.[KATA_RUNTIME_LABEL], 'true');
    const withOverhead = await client().get(Pods, 'sandboxed', 'default');
    assert.deepEqual((withOverhead.spec as { overhead?: unknown }).overhead, { memory: '320Mi', cpu: '250m' });
  });

  test('a failed update rolls its node back, says why, and stops the rollout; a spec change resumes it', async () => {
    await waitFor(
      () => ['worker-0', 'worker-1'].every((n) => kataNode(n)?.lastKnownGood?.id === kataNode(n)?.active?.id && kataNode(n)?.lastKnownGood),
      {
        timeoutMs: 30_000,
        message: 'known good after the soak',
      },
    );
    const good = kataNode('worker-0')?.active?.id;
    await client().patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'containerd did not restart' } } });
    await client().patch(KataConfigs, KC, { spec: { logLevel: 'debug' } });
    await waitFor(() => inProgress()?.reason === 'Failed', { timeoutMs: 90_000, message: 'Failed' });
    assert.equal(inProgress()?.message, messages.failed('worker-0', 'containerd did not restart'));
    await waitFor(() => kataNode('worker-0')?.assigned?.id === good, { timeoutMs: 60_000, message: 'worker-0 rolled back' });
    const w0 = kataNode('worker-0');
    assert.equal(w0?.phase, 'FailedToInstall');
    assert.equal(w0?.error, 'containerd did not restart');
    assert.equal(w0?.active?.id, w0?.lastKnownGood?.id, 'active equals lastKnownGood');
    assert.equal(w0?.active?.id, good);
    const w1 = kataNode('worker-1');
    assert.equal(w1?.assigned?.id, good, 'worker-1 was not touched');
    assert.equal(w1?.phase, 'WaitingToInstall');
    assert.deepEqual(recorder.current?.status?.kataNodes?.failedToInstall, ['worker-0']);

    // Clear the failure and touch the spec: the rollout finishes, one node at a time.
    const from = recorder.seen.length;
    await client().patch(Nodes, 'worker-0', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    await client().patch(KataConfigs, KC, { spec: { logLevel: 'trace' } });
    await waitFor(() => settled() && ['worker-0', 'worker-1'].every((n) => kataNode(n)?.active?.id !== good && kataNode(n)?.error === ''), {
      timeoutMs: 120_000,
      message: 'both workers on the debug configuration',
    });
    assert.ok(recorder.seen.slice(from).every((s) => busy(s) <= 1));
    assert.match(kataNode('worker-1')?.active?.description ?? '', /debug on/);
  });

  test('uninstall: blocked while a kata pod runs, then one node at a time, and nothing is left', async () => {
    await client().delete(KataConfigs, KC);
    await waitFor(() => inProgress()?.reason === 'BlockedByExistingKataPods', { timeoutMs: 60_000 });
    assert.equal(inProgress()?.message, messages.blocked(['kata']));
    const from = recorder.seen.length;
    await client().delete(Pods, 'sandboxed', { namespace: 'default' });
    await waitFor(() => recorder.deleted.length > 0, { timeoutMs: 120_000, message: 'KataConfig gone' });
    const seen = recorder.seen.slice(from);
    const order = inOrder(seen, [
      (s) => s.inProgress?.reason === 'Uninstalling' && s.kataNodes?.uninstalling?.[0] === 'worker-0',
      (s) => s.inProgress?.reason === 'Uninstalling' && s.kataNodes?.uninstalling?.[0] === 'worker-1' && !s.kataNodes.waitingToUninstall,
    ]);
    assert.ok(order.ok, `uninstall transitions (matched ${order.matched}): ${JSON.stringify(seen, null, 1)}`);
    assert.ok(seen.some((s) => s.kataNodes?.waitingToUninstall?.[0] === 'worker-1'));
    assert.ok(seen.every((s) => busy(s) <= 1));
    const gone = async (p: Promise<unknown>) => {
      try {
        await p;
        return false;
      } catch (e) {
        return isNotFound(e);
      }
    };
    await waitFor(async () => (await client().list(KataNodes)).items.length === 0, { message: 'no KataNode left' });
    assert.ok(await gone(client().get(RuntimeClasses, 'kata')));
    assert.ok(await gone(client().get(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE)));
    // kata-deploy's ServiceAccount and RBAC belong to the install (here the dev cluster's seed), not to the KataConfig.
    assert.ok(await client().get(ServiceAccounts, INSTALLER_NAME, OPERATOR_NAMESPACE));
    assert.ok(await client().get(ClusterRoles, INSTALLER_NAME));
    assert.ok(await client().get(ClusterRoleBindings, INSTALLER_NAME));
    // And they stay gone: the operator's passes after the cleanup recreate nothing.
    await waitFor(
      async () =>
        (await client().list(Pods, { namespace: OPERATOR_NAMESPACE, labelSelector: `name=${INSTALLER_NAME}` })).items.length === 0,
      {
        message: 'installer pods gone',
      },
    );
    assert.ok(await gone(client().get(DaemonSets, INSTALLER_NAME, OPERATOR_NAMESPACE)));
    for (const n of (await client().list(Nodes)).items) {
      assert.equal(n.metadata.labels?.[KATA_RUNTIME_LABEL], undefined, `${n.metadata.name}: kata-deploy's label gone`);
      assert.equal(n.metadata.labels?.[INSTALL_LABEL], undefined, `${n.metadata.name}: osc's label gone`);
    }
  });
});

describe('peer pods on plain Kubernetes', () => {
  const cluster = useDevCluster({ distribution: 'kubernetes', workers: 1, masters: 1, kataDeploy: { installMs: 300, cleanupMs: 200 } });
  let op: RunningOperator;
  before(async () => {
    op = await startOperator(cluster.dev);
  });
  after(() => op?.stop());

  test('refused on creation by the webhook, and by the controller when turned on later', async () => {
    const client = cluster.dev.client;
    await assert.rejects(
      client.create(KataConfigs, { metadata: { name: KC }, spec: { enablePeerPods: true } } as KataConfig),
      /enablePeerPods: peer pods are supported on OpenShift only, and this cluster is kubernetes/,
    );
    await client.create(KataConfigs, { metadata: { name: KC }, spec: {} } as KataConfig);
    await client.patch(KataConfigs, KC, { spec: { enablePeerPods: true } });
    const failed = await waitFor(
      async () => {
        const c = (await client.get(KataConfigs, KC)).status?.conditions?.find((x) => x.type === 'InProgress');
        return c?.reason === 'Failed' ? c : undefined;
      },
      { timeoutMs: 60_000, message: 'Failed' },
    );
    assert.equal(failed.message, messages.peerPodsUnsupported('kubernetes'));
    assert.equal(await client.find(RuntimeClasses, 'kata-remote'), undefined);
    await client.patch(KataConfigs, KC, { spec: { enablePeerPods: false } });
    await waitFor(
      async () => {
        const kc = await client.get(KataConfigs, KC);
        const c = kc.status?.conditions?.find((x) => x.type === 'InProgress');
        return c?.status === 'False' && c.reason === '' && kc.status?.kataNodes?.readyNodeCount === 1;
      },
      { timeoutMs: 60_000, message: 'installed once peer pods are off' },
    );
    await client.delete(KataConfigs, KC);
    await waitFor(async () => !(await client.find(KataConfigs, KC)), { timeoutMs: 60_000, message: 'uninstalled' });
  });
});
