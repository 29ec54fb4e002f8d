/**
 * What an administrator does by hand, and what osc must make of it: a selector that selects nothing,
 * an edited kata-oc pool, a blocked uninstall with peer pods on, deleted or hijacked webhook
 * registrations, a second KataConfig that slipped past admission, and a finalizer removed by hand.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { EXTENSION_MACHINE_CONFIG, KATA_NODE_ROLE_LABEL, KATA_POOL } from '../../src/api/names.ts';
import { MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { ApiError } from '../../src/kube/errors.ts';
import { MutatingWebhookConfigurations, Nodes, Pods, RuntimeClasses, ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { type RunningOperator, StatusRecorder, type StatusView, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForEvents } from '../support/wait.ts';

const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';
const KATA_POOL_SELECTOR = { matchLabels: { [KATA_NODE_ROLE_LABEL]: '' } };

type WebhookConfig = KubeObject & { webhooks?: { clientConfig?: { url?: string; caBundle?: string } }[] };
const urlOf = (c: WebhookConfig | undefined) => c?.webhooks?.[0]?.clientConfig?.url;

describe('KataConfig under hand edits by an administrator', () => {
  const cluster = useDevCluster({ workers: 2 });
  let op: RunningOperator | undefined;
  before(async () => {
    op = await startOperator(cluster.dev);
  });
  after(() => op?.stop());

  const client = () => cluster.dev.client;
  const kubectl = (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });

  async function withRecorder<T>(name: string, fn: (rec: StatusRecorder) => Promise<T>): Promise<T> {
    const rec = new StatusRecorder(client(), name);
    await rec.synced();
    try {
      return await fn(rec);
    } finally {
      await rec.stop();
    }
  }

  async function deleteAndWait(name: string, rec: StatusRecorder): Promise<void> {
    await client().delete(KataConfigs, name);
    await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: `KataConfig ${name} gone` });
  }

  test('a selector that validly matches no worker: the status says so, and no RuntimeClass is offered', async () => {
    await withRecorder('nowhere', async (rec) => {
      await client().create(KataConfigs, {
        metadata: { name: 'nowhere' },
        spec: { kataConfigPoolSelector: { matchLabels: { zone: 'nowhere' } } },
      });
      await waitFor(() => rec.seen.at(-1)?.inProgress?.message?.startsWith('no worker Nodes match'), {
        timeoutMs: 60_000,
        message: 'the status says the selector selects nothing',
      });
      assert.deepEqual(rec.seen.at(-1)?.inProgress, {
        status: 'True',
        reason: 'Installing',
        message: messages.noMatchingNodes(),
      });
      assert.ok(!rec.seen.some(settled), 'never reported as installed');
      assert.equal(await client().find(RuntimeClasses, 'kata'), undefined, 'no RuntimeClass for zero nodes');
      await deleteAndWait('nowhere', rec);
    });
  });

  test('an edited kata-oc nodeSelector is put back, and kata returns to the nodes', async () => {
    await withRecorder('pool-edit', async (rec) => {
      await client().create(KataConfigs, { metadata: { name: 'pool-edit' }, spec: {} });
      const installed = () => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.readyNodeCount === 2;
      await waitFor(installed, { timeoutMs: 120_000, message: 'kata installed on both workers' });
      const edit = await kubectl([
        'patch',
        'mcp',
        KATA_POOL,
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'replace', path: '/spec/nodeSelector', value: { matchLabels: { 'example.com/pool': 'mine' } } }]),
      ]);
      assert.equal(edit.code, 0, edit.stderr);
      await waitFor(
        async () =>
          JSON.stringify((await client().get(MachineConfigPools, KATA_POOL)).spec.nodeSelector) === JSON.stringify(KATA_POOL_SELECTOR),
        { timeoutMs: 60_000, message: 'pool nodeSelector restored (replaced, not merged)' },
      );
      await waitFor(installed, { timeoutMs: 120_000, message: 'kata installed on both workers again' });
      await deleteAndWait('pool-edit', rec);
    });
  });

  test('with peer pods on, a blocked uninstall names the RuntimeClass the blocking pod uses', async () => {
    await withRecorder('remote', async (rec) => {
      await client().create(KataConfigs, { metadata: { name: 'remote' }, spec: { enablePeerPods: true } });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.runtimeClasses?.includes('kata-remote'), {
        timeoutMs: 120_000,
        message: 'kata and kata-remote offered',
      });
      await client().create(Pods, {
        metadata: { name: 'uses-kata', namespace: 'default' },
        spec: { runtimeClassName: 'kata', containers: [{ name: 'c', image: 'quay.io/openshift/origin-hello-openshift' }] },
      });
      await client().delete(KataConfigs, 'remote');
      await waitFor(() => rec.seen.at(-1)?.inProgress?.reason === 'BlockedByExistingKataPods', { timeoutMs: 60_000, message: 'blocked' });
      assert.equal(rec.seen.at(-1)?.inProgress?.message, messages.blocked(['kata']));
      await client().delete(Pods, 'uses-kata', { namespace: 'default' });
      await waitFor(() => rec.deleted.length > 0, { timeoutMs: 120_000, message: 'KataConfig gone once the pod is' });
    });
  });

  test('webhook registrations deleted or pointed elsewhere are restored', async () => {
    const validating = () =>
      client().find(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION) as Promise<WebhookConfig | undefined>;
    const mutating = () =>
      client().find(MutatingWebhookConfigurations, MUTATING_WEBHOOK_CONFIGURATION) as Promise<WebhookConfig | undefined>;
    const original = await validating();
    const url = urlOf(original);
    assert.ok(url, 'registered by URL');
    await client().delete(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION);
    await waitFor(async () => urlOf(await validating()) === url, { message: 'validating registration recreated' });
    await client().delete(MutatingWebhookConfigurations, MUTATING_WEBHOOK_CONFIGURATION);
    await waitFor(async () => (await mutating())?.webhooks?.length === 1, { message: 'mutating registration recreated' });
    const hijack = await kubectl([
      'patch',
      'validatingwebhookconfiguration',
      VALIDATING_WEBHOOK_CONFIGURATION,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/webhooks/0/clientConfig/url', value: 'https://127.0.0.1:1/dead' },
        { op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: Buffer.from('not a CA').toString('base64') },
      ]),
    ]);
    assert.equal(hijack.code, 0, hijack.stderr);
    await waitFor(
      async () => {
        const c = await validating();
        return urlOf(c) === url && c?.webhooks?.[0]?.clientConfig?.caBundle === original?.webhooks?.[0]?.clientConfig?.caBundle;
      },
      { message: 'endpoint and CA bundle restored' },
    );
  });

  test('a second KataConfig that slipped past admission says why it is ignored, in its status and an event', async () => {
    await withRecorder('first', async (first) => {
      await client().create(KataConfigs, { metadata: { name: 'first' }, spec: {} });
      await waitFor(() => first.seen.at(-1)?.inProgress, { message: 'first KataConfig picked up' });
      // Admission is off while the operator is down and its registration gone.
      await op?.stop();
      op = undefined;
      // A registration write the stopped operator sent just before it stopped may still land after this
      // delete (an aborted request the API server had already received): delete again until the create
      // is admitted without the webhook.
      await waitFor(
        async () => {
          await client().delete(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION);
          try {
            await client().create(KataConfigs, { metadata: { name: 'second' }, spec: {} });
            return true;
          } catch (e) {
            if (e instanceof ApiError && /failed calling webhook/.test(e.message)) return false;
            throw e;
          }
        },
        { message: 'the second KataConfig created with admission off' },
      );
      op = await startOperator(cluster.dev);
      const second = await waitFor(
        async () => {
          const kc = (await client().get(KataConfigs, 'second')) as KataConfig;
          return kc.status?.conditions?.find((c) => c.type === 'InProgress' && c.reason === 'Ignored');
        },
        { message: 'second KataConfig marked ignored' },
      );
      assert.equal(second.status, 'False');
      assert.equal(
        second.message,
        'A KataConfig instance already exists ("first"): this one is ignored, since only one may exist. Delete it',
      );
      // The event may be recorded after the status.
      const events = await waitForEvents(
        client(),
        'default',
        (e) => e.regarding?.kind === 'KataConfig' && e.regarding.name === 'second' && e.reason === 'Ignored',
        'an Ignored event',
      );
      assert.equal(events[0]?.type, 'Warning');
      assert.equal(events[0]?.note, second.message);
      assert.equal((await client().get(KataConfigs, 'second')).metadata.finalizers, undefined, 'an ignored KataConfig gets no finalizer');
      await client().delete(KataConfigs, 'second');
      await waitFor(() => settled(first.seen.at(-1)), { timeoutMs: 120_000, message: 'first installed' });
      await deleteAndWait('first', first);
    });
  });

  test('after the finalizer is removed by hand, nothing keeps pointing at the deleted KataConfig', async () => {
    await withRecorder('orphan', async (rec) => {
      const kc = await client().create(KataConfigs, { metadata: { name: 'orphan' }, spec: {} });
      await waitFor(() => settled(rec.seen.at(-1)) && rec.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
        timeoutMs: 120_000,
        message: 'kata installed',
      });
      const uid = kc.metadata.uid;
      // The uninstall is blocked by a kata pod, and the administrator forces the KataConfig out.
      await client().create(Pods, {
        metadata: { name: 'holds-kata', namespace: 'default' },
        spec: { runtimeClassName: 'kata', containers: [{ name: 'c', image: 'quay.io/openshift/origin-hello-openshift' }] },
      });
      await client().delete(KataConfigs, 'orphan');
      await waitFor(() => rec.seen.at(-1)?.inProgress?.reason === 'BlockedByExistingKataPods', { message: 'blocked' });
      const forced = await kubectl(['patch', 'kataconfig', 'orphan', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
      assert.equal(forced.code, 0, forced.stderr);
      await waitFor(() => rec.deleted.length > 0, { message: 'KataConfig gone at once' });
      await client().delete(Pods, 'holds-kata', { namespace: 'default' });
      const pointing = async () => {
        const objs: KubeObject[] = [
          ...(await client().list(MachineConfigs)).items,
          ...(await client().list(RuntimeClasses)).items,
          ...(await client().list(MachineConfigPools)).items,
        ];
        return objs.filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === uid)).map((o) => o.metadata.name);
      };
      await waitFor(async () => (await pointing()).length === 0, { timeoutMs: 120_000, message: 'no owner reference to the deleted UID' });
      await waitFor(
        async () =>
          !(await client().find(MachineConfigPools, KATA_POOL)) &&
          !(await client().find(MachineConfigs, EXTENSION_MACHINE_CONFIG)) &&
          (await client().list(Nodes)).items.every((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] === undefined),
        { timeoutMs: 120_000, message: 'what the KataConfig made is removed, as its uninstall would have' },
      );
    });
  });
});

describe('webhook registration with two operator replicas', () => {
  const cluster = useDevCluster({ workers: 1 });
  // A leader that misses its renew deadline stops for good (as in production), so the deadline leaves room
  // for a loaded machine; hand-overs here are releases, which a standby sees at its next retry.
  const leaseTimings = { leaseDurationMs: 9000, renewDeadlineMs: 6000, retryPeriodMs: 200 };

  test('only the leader registers: a standby that starts later and dies does not leave the API server calling it', async () => {
    const dev = cluster.dev;
    const registered = async () =>
      urlOf((await dev.client.find(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as WebhookConfig);
    const a = await startOperator(dev, { leaderElection: true, leaseTimings, identity: 'replica-a' });
    let b: RunningOperator | undefined;
    try {
      const urlA = `https://127.0.0.1:${a.operator.webhookPort}/validate-kataconfiguration-openshift-io-v1-kataconfig`;
      await waitFor(async () => (await registered()) === urlA, { message: 'the leader registered itself' });
      b = await startOperator(dev, { leaderElection: true, leaseTimings, identity: 'replica-b' });
      await waitFor(() => b?.operator.manager.isReady, { message: 'standby synced' });
      assert.equal(b.operator.manager.isLeader, false);
      assert.equal(await registered(), urlA, 'a standby does not point the registration at itself');
      await b.stop();
      b = undefined;
      assert.equal(await registered(), urlA);
      // And when the leader goes, the replica that takes over registers itself.
      b = await startOperator(dev, { leaderElection: true, leaseTimings, identity: 'replica-b' });
      const urlB = `https://127.0.0.1:${b.operator.webhookPort}/validate-kataconfiguration-openshift-io-v1-kataconfig`;
      await a.stop();
      await waitFor(async () => (await registered()) === urlB, { timeoutMs: 60_000, message: 'the new leader registered itself' });
    } finally {
      await b?.stop();
      await a.stop();
    }
  });
});
