import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { CRIO_CONFIG, EXTENSION_MACHINE_CONFIG, KATA_NODE_ROLE_LABEL, KATA_POOL } from '../../src/api/names.ts';
import { ContainerRuntimeConfigs, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { FAIL_NEXT_UPDATE_ANNOTATION } from '../../src/devcluster/devcluster.ts';
import { Events, Nodes, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { inOrder, type StatusView, scrapeMetrics, useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor, waitForEvents } from '../support/wait.ts';

const KC = 'example-kataconfig';
const kataConfigYaml = (spec = '  checkNodeEligibility: false\n  logLevel: info\n') =>
  `apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: ${KC}\nspec:\n${spec}`;

const eq = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const sorted = (xs: string[] | undefined) => [...(xs ?? [])].sort();
const onePair = (a: string[] | undefined, b: string[] | undefined) =>
  a?.length === 1 && b?.length === 1 && eq(sorted([...a, ...b]), ['worker-0', 'worker-1']);

describe('KataConfig lifecycle on a simulated two-worker OpenShift cluster', () => {
  const cluster = useDevCluster({ workers: 2 });
  const running = useOperator(cluster, KC);

  const kubectl = (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });
  const get = () => cluster.dev.client.get(KataConfigs, KC);
  const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';

  test('install: the documented transitions, in order, and the kata RuntimeClass only at the end', async () => {
    const created = await kubectl(['create', '-f', '-'], kataConfigYaml());
    assert.equal(created.code, 0, created.stderr);
    await waitFor(() => settled(running.recorder.seen.at(-1)) && running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 120_000,
      message: 'kata installed on both workers',
    });
    const seen = running.recorder.seen;
    const documented: ((s: StatusView) => boolean)[] = [
      (s) =>
        eq(s.inProgress, { status: 'True', reason: 'Installing', message: messages.installing('kata') }) &&
        eq(s.kataNodes, { nodeCount: 0, readyNodeCount: 0 }),
      (s) => eq(s.kataNodes, { nodeCount: 2, readyNodeCount: 0, waitingToInstall: ['worker-0', 'worker-1'] }),
      (s) =>
        s.kataNodes?.nodeCount === 2 && s.kataNodes.readyNodeCount === 0 && onePair(s.kataNodes.installing, s.kataNodes.waitingToInstall),
      (s) => s.kataNodes?.nodeCount === 2 && s.kataNodes.readyNodeCount === 1 && onePair(s.kataNodes.installed, s.kataNodes.installing),
      (s) =>
        eq(s.inProgress, { status: 'False', reason: '', message: '' }) &&
        eq(s.kataNodes, { installed: ['worker-0', 'worker-1'], nodeCount: 2, readyNodeCount: 2 }) &&
        eq(s.runtimeClasses, ['kata']),
    ];
    const order = inOrder(seen, documented);
    assert.ok(
      order.ok,
      `documented step ${order.matched + 1} not seen in order; recorded:\n${seen.map((s) => JSON.stringify(s)).join('\n')}`,
    );
    // Until the end nothing says "done", never more than one node is unavailable, and no RuntimeClass is reported.
    assert.deepEqual(
      seen[0],
      { inProgress: undefined, kataNodes: undefined, runtimeClasses: undefined },
      'as created, before the operator wrote',
    );
    for (const s of seen.slice(1, -1)) {
      assert.equal(s.inProgress?.status, 'True', `not done before the end: ${JSON.stringify(s)}`);
      assert.equal(s.inProgress?.reason, 'Installing');
      assert.ok((s.kataNodes?.installing?.length ?? 0) <= 1, 'one node at a time');
      assert.equal(s.runtimeClasses, undefined);
    }
    const rc = await cluster.dev.client.get(RuntimeClasses, 'kata');
    assert.equal(rc.handler, 'kata');
    assert.deepEqual(rc.overhead?.podFixed, { memory: '350Mi', cpu: '250m' });
    assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_NODE_ROLE_LABEL]: '' });
    const kc = await get();
    const rcCreated = Date.parse(rc.metadata.creationTimestamp ?? '');
    const startedAt = Date.parse(kc.metadata.creationTimestamp ?? '');
    assert.ok(rcCreated >= startedAt, 'the RuntimeClass was made by this install');
    for (const n of ['worker-0', 'worker-1']) {
      const node = await cluster.dev.client.get(Nodes, n);
      assert.equal(node.metadata.labels?.[KATA_NODE_ROLE_LABEL], '');
    }
    const mc = await cluster.dev.client.get(MachineConfigs, EXTENSION_MACHINE_CONFIG);
    assert.deepEqual(mc.spec.extensions, ['sandboxed-containers']);
    assert.deepEqual(mc.metadata.labels, { 'machineconfiguration.openshift.io/role': KATA_POOL, app: KC });
  });

  test('kubectl shows what the documents show', async () => {
    const list = await kubectl(['get', 'kataconfig']);
    assert.equal(list.code, 0, list.stderr);
    const [header, row] = list.stdout.trim().split('\n');
    assert.match(header ?? '', /^NAME\s+IN PROGRESS\s+COMPLETED\s+TOTAL\s+AGE$/);
    assert.match(row ?? '', new RegExp(`^${KC}\\s+False\\s+2\\s+2\\s+\\S+$`));

    await waitForEvents(cluster.dev.client, 'default', (e) => e.regarding?.name === KC && e.reason === 'Installed', 'the event Installed');
    const described = await kubectl(['describe', 'kataconfig']);
    const status = described.stdout.slice(described.stdout.indexOf('Status:'), described.stdout.indexOf('Events:'));
    assert.match(status, /Kata Nodes:\s+Installed:\s+worker-0\s+worker-1\s+Node Count:\s+2\s+Ready Node Count:\s+2/);
    assert.match(status, /Reason:\s*\n\s+Status:\s+False\s+Type:\s+InProgress/);
    assert.match(described.stdout, /Events:[\s\S]*Installed/);

    const mcp = await kubectl(['get', 'mcp', KATA_POOL]);
    assert.match(
      mcp.stdout,
      /^NAME\s+CONFIG\s+UPDATED\s+UPDATING\s+DEGRADED\s+MACHINECOUNT\s+READYMACHINECOUNT\s+UPDATEDMACHINECOUNT\s+DEGRADEDMACHINECOUNT\s+AGE/,
    );
    assert.match(mcp.stdout, new RegExp(`${KATA_POOL}\\s+rendered-${KATA_POOL}-\\S+\\s+True\\s+False\\s+False\\s+2\\s+2\\s+2\\s+0`));

    const rcs = await kubectl(['get', 'runtimeclass']);
    assert.match(rcs.stdout, /^NAME\s+HANDLER\s+AGE\s*\nkata\s+kata\s+\S+/);
  });

  test('metrics: kata nodes per state, the InProgress reason and the runtime class', async () => {
    const { status, text } = await scrapeMetrics(cluster.dev, running.op.operator);
    assert.equal(status, 200, text);
    assert.match(text, /^osc_kata_nodes\{state="installed"\} 2$/m);
    assert.match(text, /^osc_kata_nodes\{state="installing"\} 0$/m);
    assert.match(text, /^osc_kata_selected_nodes 2$/m);
    assert.match(text, /^osc_kataconfig_in_progress\{reason="Installing"\} 0$/m);
    assert.match(text, /^osc_runtime_class_available\{runtime_class="kata"\} 1$/m);
    assert.match(text, /^controller_runtime_reconcile_total\{controller="kataconfig",result="success"\} \d+$/m);
    assert.match(text, /^osc_status_writes_total\{resource="kataconfigs",result="written"\} \d+$/m);
  });

  test('a second KataConfig is refused at admission with the documented message', async () => {
    const second = await kubectl(['create', '-f', '-'], kataConfigYaml().replace(`name: ${KC}`, 'name: another'));
    assert.notEqual(second.code, 0);
    assert.match(second.stderr, /A KataConfig instance already exists, refusing to create a duplicate/);
    assert.equal(await cluster.dev.client.find(KataConfigs, 'another'), undefined);
  });

  test('updating: a new worker joins, a selector edit removes a node, and the status says Updating', async () => {
    const mark = running.recorder.seen.length;
    await cluster.dev.addWorker('worker-2');
    await waitFor(
      () =>
        eq(running.recorder.seen.at(-1)?.kataNodes?.installed, ['worker-0', 'worker-1', 'worker-2']) &&
        settled(running.recorder.seen.at(-1)),
      {
        timeoutMs: 120_000,
        message: 'worker-2 installed',
      },
    );
    const joined = running.recorder.seen.slice(mark);
    assert.ok(
      joined.some((s) => eq(s.inProgress, { status: 'True', reason: 'Updating', message: messages.updating() })),
      JSON.stringify(joined),
    );
    assert.ok(joined.some((s) => eq(s.kataNodes?.waitingToInstall, ['worker-2']) || eq(s.kataNodes?.installing, ['worker-2'])));

    // Narrow the selection: worker-2 stops matching and loses kata.
    await cluster.dev.client.patch(Nodes, 'worker-0', { metadata: { labels: { kata: 'yes' } } });
    await cluster.dev.client.patch(Nodes, 'worker-1', { metadata: { labels: { kata: 'yes' } } });
    const mark2 = running.recorder.seen.length;
    await cluster.dev.client.patch(KataConfigs, KC, {
      spec: { kataConfigPoolSelector: { matchExpressions: [{ key: 'kata', operator: 'In', values: ['yes'] }] } },
    });
    await waitFor(
      () =>
        settled(running.recorder.seen.at(-1)) &&
        running.recorder.seen.at(-1)?.kataNodes?.nodeCount === 2 &&
        running.recorder.seen.length > mark2,
      {
        timeoutMs: 120_000,
        message: 'worker-2 removed',
      },
    );
    const left = running.recorder.seen.slice(mark2);
    assert.ok(
      left.some((s) => sorted([...(s.kataNodes?.uninstalling ?? []), ...(s.kataNodes?.waitingToUninstall ?? [])]).includes('worker-2')),
    );
    assert.ok(left.every((s) => s.inProgress?.reason === 'Updating' || settled(s)));
    const w2 = await cluster.dev.client.get(Nodes, 'worker-2');
    assert.equal(w2.metadata.labels?.[KATA_NODE_ROLE_LABEL], undefined);
    assert.deepEqual(running.recorder.seen.at(-1)?.kataNodes, { installed: ['worker-0', 'worker-1'], nodeCount: 2, readyNodeCount: 2 });
  });

  test('logLevel: a non-default level rolls out kata-crio-config; info removes it again', async () => {
    await cluster.dev.client.patch(KataConfigs, KC, { spec: { logLevel: 'debug' } });
    await waitFor(() => cluster.dev.client.find(ContainerRuntimeConfigs, CRIO_CONFIG), { message: 'kata-crio-config created' });
    const crc = await cluster.dev.client.get(ContainerRuntimeConfigs, CRIO_CONFIG);
    assert.equal(crc.spec.containerRuntimeConfig.logLevel, 'debug');
    assert.deepEqual(crc.spec.machineConfigPoolSelector, {
      matchLabels: { 'pools.operator.machineconfiguration.openshift.io/kata-oc': '' },
    });
    const mark = running.recorder.seen.length;
    await waitFor(
      async () => {
        const pool = await cluster.dev.client.get(MachineConfigPools, KATA_POOL);
        return (
          (pool.spec.configuration?.source ?? []).some((s) => s.name.includes('generated-containerruntime')) &&
          settled(running.recorder.seen.at(-1))
        );
      },
      { timeoutMs: 120_000, message: 'the CRI-O config rolled out' },
    );
    assert.ok(
      running.recorder.seen.slice(mark - 1).some((s) => s.inProgress?.reason === 'Updating'),
      'the rollout shows as Updating',
    );
    await cluster.dev.client.patch(KataConfigs, KC, { spec: { logLevel: 'info' } });
    await waitFor(async () => !(await cluster.dev.client.find(ContainerRuntimeConfigs, CRIO_CONFIG)), {
      message: 'kata-crio-config removed',
    });
    await waitFor(() => settled(running.recorder.seen.at(-1)), { timeoutMs: 120_000, message: 'settled again' });
  });

  test('a node that fails its update: Failed with the node’s message, and recovery when it heals', async () => {
    await cluster.dev.client.patch(Nodes, 'worker-1', {
      metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: 'failed to pull the extension image' } },
    });
    await cluster.dev.client.patch(KataConfigs, KC, { spec: { logLevel: 'warn' } });
    await waitFor(() => running.recorder.seen.at(-1)?.inProgress?.reason === 'Failed', { timeoutMs: 120_000, message: 'Failed reported' });
    const failed = running.recorder.seen.at(-1);
    assert.deepEqual(failed?.inProgress, {
      status: 'True',
      reason: 'Failed',
      message: messages.failed('worker-1', 'failed to pull the extension image'),
    });
    assert.deepEqual(failed?.kataNodes?.failedToInstall, ['worker-1']);
    await waitForEvents(
      cluster.dev.client,
      'default',
      (e) => e.regarding?.name === KC && e.reason === 'Failed' && e.type === 'Warning',
      'a Warning event Failed on the KataConfig',
    );

    await cluster.dev.client.patch(Nodes, 'worker-1', { metadata: { annotations: { [FAIL_NEXT_UPDATE_ANNOTATION]: null } } });
    await waitFor(() => settled(running.recorder.seen.at(-1)) && running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 120_000,
      message: 'recovered',
    });
    assert.equal(running.recorder.seen.at(-1)?.kataNodes?.failedToInstall, undefined);
  });

  test('uninstall: blocked while a kata pod exists, then the documented transitions and nothing left behind', async () => {
    const pod = await kubectl(
      ['create', '-f', '-'],
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: hello-openshift\n  namespace: default\n  labels:\n    app: hello-openshift\nspec:\n  runtimeClassName: kata\n  containers:\n  - name: hello-openshift\n    image: quay.io/openshift/origin-hello-openshift\n    ports:\n    - containerPort: 8888\n',
    );
    assert.equal(pod.code, 0, pod.stderr);
    const mark = running.recorder.seen.length;
    const deletion = kubectl(['delete', 'kataconfig', KC, '--timeout=300s']);
    await waitFor(() => running.recorder.seen.at(-1)?.inProgress?.reason === 'BlockedByExistingKataPods', {
      message: 'blocked by the pod',
    });
    assert.deepEqual(running.recorder.seen.at(-1)?.inProgress, {
      status: 'False',
      reason: 'BlockedByExistingKataPods',
      message: messages.blocked(['kata']),
    });
    assert.equal((await get()).metadata.labels?.x, undefined);
    for (const n of ['worker-0', 'worker-1'])
      assert.equal((await cluster.dev.client.get(Nodes, n)).metadata.labels?.[KATA_NODE_ROLE_LABEL], '', 'nothing removed while blocked');

    await cluster.dev.client.delete(Pods, 'hello-openshift', { namespace: 'default' });
    const deleted = await deletion; // kubectl delete waits until the finalizer is gone
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, new RegExp(`kataconfig.kataconfiguration.openshift.io "${KC}" deleted`));
    await waitFor(() => running.recorder.deleted.length > 0, { message: 'KataConfig gone' });

    const seen = running.recorder.seen.slice(mark);
    const documented: ((s: StatusView) => boolean)[] = [
      (s) =>
        eq(s.inProgress, { status: 'True', reason: 'Uninstalling', message: messages.uninstalling('kata') }) &&
        eq(s.kataNodes, { nodeCount: 0, readyNodeCount: 0, waitingToUninstall: ['worker-0', 'worker-1'] }),
      (s) => s.kataNodes?.nodeCount === 0 && onePair(s.kataNodes.uninstalling, s.kataNodes.waitingToUninstall),
      (s) => s.kataNodes?.nodeCount === 0 && s.kataNodes.uninstalling?.length === 1 && !s.kataNodes.waitingToUninstall,
    ];
    const order = inOrder(seen, documented);
    assert.ok(
      order.ok,
      `uninstall step ${order.matched + 1} not seen in order; recorded:\n${seen.map((s) => JSON.stringify(s)).join('\n')}`,
    );

    // Nothing the operator created is left behind.
    const c = cluster.dev.client;
    assert.equal(await c.find(MachineConfigPools, KATA_POOL), undefined, 'pool kata-oc deleted');
    assert.equal(await c.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined, 'machine config deleted');
    assert.equal(await c.find(ContainerRuntimeConfigs, CRIO_CONFIG), undefined, 'kata-crio-config deleted');
    assert.equal(await c.find(RuntimeClasses, 'kata'), undefined, 'runtime class deleted');
    const nodes = await c.list(Nodes);
    assert.deepEqual(
      nodes.items.filter((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined).map((n) => n.metadata.name),
      [],
      'no node keeps the kata-oc label',
    );
    // The pool's rendered configs go a moment after the pool, as the garbage collector removes them.
    await waitFor(async () => !(await c.list(MachineConfigs)).items.some((m) => m.metadata.name?.includes(KATA_POOL)), {
      message: 'no MachineConfig of the kata-oc pool left',
    });
    const kcs = (await c.list(KataConfigs)).items as KataConfig[];
    assert.deepEqual(kcs, []);
  });

  test('one event for every phase change, in order', async () => {
    await waitForEvents(
      cluster.dev.client,
      'default',
      (e) => e.regarding?.name === KC && e.reason === 'Uninstalled',
      'the event Uninstalled',
    );
    const events = (await cluster.dev.client.list(Events, { namespace: 'default' })).items
      .filter((e) => e.regarding?.kind === 'KataConfig' && e.regarding.name === KC)
      .sort((a, b) => (a.eventTime ?? '').localeCompare(b.eventTime ?? ''));
    const reasons = events.map((e) => e.reason);
    const expected = ['Installing', 'Installed', 'Updating', 'Failed', 'BlockedByExistingKataPods', 'Uninstalling', 'Uninstalled'];
    let i = 0;
    for (const r of reasons) if (r === expected[i]) i++;
    assert.equal(i, expected.length, `phase events in order; got ${reasons.join(', ')}`);
    const installing = events.find((e) => e.reason === 'Installing');
    assert.equal(installing?.note, messages.installing('kata'));
    assert.equal(installing?.type, 'Normal');
    assert.equal(events.find((e) => e.reason === 'BlockedByExistingKataPods')?.type, 'Warning');
    assert.equal(events.find((e) => e.reason === 'Uninstalling')?.note, messages.uninstalling('kata'));
  });
});
