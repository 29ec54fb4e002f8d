/**
 * The peer pods controller's plan: the writes one pass makes for each main state (peer pods off, a valid or
 * an invalid configuration, the image job running or done, the removal), from an observation and a clock.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { PeerPodConfig } from '../../src/api/peerpodconfig.ts';
import {
  CONFIG_HASH_ANNOTATION,
  configHash,
  DEFAULT_IMAGES,
  DELETES_IMAGE_ANNOTATION,
  IMAGE_ID_ANNOTATION,
  LIMIT_FROM_CM_ANNOTATION,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PEERPODS_FINALIZER,
} from '../../src/controllers/peerpods/desired.ts';
import type { PeerPodsObserved } from '../../src/controllers/peerpods/observed.ts';
import { planPeerPods } from '../../src/controllers/peerpods/plan.ts';
import type { PeerPodsPlan } from '../../src/controllers/peerpods/plan-types.ts';
import type { ConfigMap, DaemonSet, Job, Node, Secret } from '../../src/kube/resources.ts';

const NS = 'openshift-sandboxed-containers-operator';
const NOW = new Date('2026-03-01T12:00:00Z');
const KATA = { 'node-role.kubernetes.io/kata-oc': '' };
const VM = 'kata.peerpods.io/vm';

const kataConfig = (over: { enablePeerPods?: boolean; finalizers?: string[]; deleting?: boolean; uninstallStarted?: boolean } = {}) =>
  ({
    metadata: {
      name: 'example',
      uid: 'kc-uid',
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: over.finalizers ?? ['kataconfiguration.openshift.io/finalizer', PEERPODS_FINALIZER],
      ...(over.deleting ? { deletionTimestamp: '2026-03-01T11:00:00Z' } : {}),
    },
    spec: { enablePeerPods: over.enablePeerPods ?? true },
    status: over.uninstallStarted ? { uninstallStarted: true } : {},
  }) as KataConfig;

const validData = {
  CLOUD_PROVIDER: 'aws',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PEERPODS_LIMIT_PER_NODE: '4',
};
const configMap = (data: Record<string, string> = validData, annotations: Record<string, string> = {}): ConfigMap => ({
  metadata: { name: 'peer-pods-cm', namespace: NS, uid: 'cm-uid', resourceVersion: '11', annotations },
  data,
});
const secret: Secret = {
  metadata: { name: 'peer-pods-secret', namespace: NS, resourceVersion: '12' },
  data: { AWS_ACCESS_KEY_ID: Buffer.from('AKIAEXAMPLE').toString('base64'), AWS_SECRET_ACCESS_KEY: Buffer.from('s').toString('base64') },
};
const node = (name: string, vm?: string): Node => ({
  metadata: { name, labels: { ...KATA } },
  status: { capacity: { cpu: '4', ...(vm ? { [VM]: vm } : {}) }, allocatable: { cpu: '4', ...(vm ? { [VM]: vm } : {}) } },
});
const peerPodConfig = (limit = '4'): PeerPodConfig => ({
  metadata: {
    name: 'peerpodconfig-openshift',
    namespace: NS,
    uid: 'ppc-uid',
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
    annotations: { [LIMIT_FROM_CM_ANNOTATION]: limit },
  },
  spec: { cloudSecretName: 'peer-pods-secret', configMapName: 'peer-pods-cm', limit },
});
const daemonSet = {
  metadata: { name: 'osc-caa-ds', namespace: NS, uid: 'ds-uid', labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
} as unknown as DaemonSet;
const job = (
  kind: 'creation' | 'deletion',
  state: 'active' | 'complete' | 'failed',
  extra: Partial<Job['metadata']> = {},
  completionTime?: string,
): Job => ({
  metadata: { name: `osc-podvm-image-${kind}`, namespace: NS, uid: `${kind}-uid`, ...extra },
  spec: { template: { spec: {} } },
  status: {
    ...(state === 'active'
      ? {}
      : { conditions: [{ type: state === 'complete' ? 'Complete' : 'Failed', status: 'True', reason: 'BackoffLimitExceeded' }] }),
    ...(completionTime ? { completionTime } : {}),
  },
});

const observed = (over: Partial<PeerPodsObserved> = {}): PeerPodsObserved => ({
  key: 'example',
  kataConfigs: [kataConfig()],
  supportsPeerPods: true,
  placement: { nodeSelector: KATA, tolerations: [] },
  nodes: [node('worker-0')],
  configMap: configMap(),
  secret,
  remotePods: [],
  configMapAwaited: false,
  jobsAwaited: { creation: false, deletion: false },
  caaUpdateStrategy: 'RollingUpdate',
  options: { namespace: NS, images: DEFAULT_IMAGES, imageJobBackoffLimit: 1, blockedRecheckMs: 15_000 },
  ...over,
});

/** The writes as `op Kind/name`, in order. */
const writes = (p: PeerPodsPlan) => p.writes.map((w) => `${w.op} ${w.resource.kind}/${w.op === 'apply' ? w.object.metadata.name : w.name}`);
const cond = (p: PeerPodsPlan, type: string) => p.conditions?.find((c) => c.type === type);

describe('peer pods plan', () => {
  test('peer pods off and never on: nothing to write; turned off with conditions left: they are cleared', () => {
    const off = kataConfig({ enablePeerPods: false, finalizers: ['kataconfiguration.openshift.io/finalizer'] });
    const plan = planPeerPods(observed({ kataConfigs: [off] }), NOW);
    assert.deepEqual(plan.writes, []);
    assert.equal(plan.conditions, undefined);
    assert.equal(plan.addFinalizer, false);
    assert.equal(plan.gauges, 'reset');
    const withConditions = {
      ...off,
      status: { conditions: [{ type: 'PeerPodsConfigValid', status: 'True', reason: 'Valid', message: 'm' }] },
    } as KataConfig;
    assert.deepEqual(planPeerPods(observed({ kataConfigs: [withConditions] }), NOW).conditions, []);
  });

  test('a valid configuration: the finalizer, the PeerPodConfig, the adaptor DaemonSet and the image creation job', () => {
    const plan = planPeerPods(observed({ kataConfigs: [kataConfig({ finalizers: ['kataconfiguration.openshift.io/finalizer'] })] }), NOW);
    assert.equal(plan.addFinalizer, true);
    assert.deepEqual(writes(plan), [
      'apply PeerPodConfig/peerpodconfig-openshift',
      'apply DaemonSet/osc-caa-ds',
      'apply Job/osc-podvm-image-creation',
    ]);
    assert.equal(cond(plan, 'PeerPodsConfigValid')?.status, 'True');
    assert.equal(cond(plan, 'PodVMImageJobRunning')?.reason, 'ImageCreationRunning');
    assert.equal(cond(plan, 'PeerPodsConfigValid')?.lastTransitionTime, '2026-03-01T12:00:00Z', 'the clock is the plan input');
    assert.deepEqual(plan.gauges, { configValid: true, configProblems: 0, vmLimit: 0, nodes: 0 });
  });

  test('the PeerPodConfig cached: the kata nodes advertise its limit and its status says so', () => {
    const plan = planPeerPods(
      observed({
        peerPodConfig: peerPodConfig(),
        daemonSet,
        configMap: configMap({ ...validData, PODVM_AMI_ID: 'ami-0123456789abcdef0' }),
      }),
      NOW,
    );
    assert.deepEqual(writes(plan), ['apply DaemonSet/osc-caa-ds', 'patch Node/worker-0']);
    const patch = plan.writes[1];
    assert.deepEqual(patch?.op === 'patch' && patch.patch, { status: { capacity: { [VM]: '4' }, allocatable: { [VM]: '4' } } });
    assert.deepEqual(plan.peerPodConfigStatus, { setupCompleted: true, nodes: ['worker-0'] });
    // A provided image: no job, and no image condition unless one was there.
    assert.equal(cond(plan, 'PodVMImageJobRunning'), undefined);
    // Already advertised: no node write.
    const again = planPeerPods(
      observed({
        peerPodConfig: peerPodConfig(),
        daemonSet,
        nodes: [node('worker-0', '4')],
        configMap: configMap({ ...validData, PODVM_AMI_ID: 'ami-0123456789abcdef0' }),
      }),
      NOW,
    );
    assert.deepEqual(writes(again), ['apply DaemonSet/osc-caa-ds']);
  });

  test('a node without allocatable advertises in capacity only, and is not patched again once it does', () => {
    const bare: Node = { metadata: { name: 'worker-1', labels: { ...KATA } }, status: { capacity: { cpu: '4' } } };
    const cm = configMap({ ...validData, PODVM_AMI_ID: 'ami-0123456789abcdef0' });
    const first = planPeerPods(observed({ peerPodConfig: peerPodConfig(), daemonSet, configMap: cm, nodes: [bare] }), NOW);
    const w = first.writes.find((x) => x.resource.kind === 'Node');
    assert.deepEqual(w?.op === 'patch' && w.patch, { status: { capacity: { [VM]: '4' } } });
    const shown: Node = { ...bare, status: { capacity: { cpu: '4', [VM]: '4' } } };
    const again = planPeerPods(observed({ peerPodConfig: peerPodConfig(), daemonSet, configMap: cm, nodes: [shown] }), NOW);
    assert.ok(!again.writes.some((x) => x.resource.kind === 'Node'));
  });

  test('PEERPODS_LIMIT_PER_NODE changed: the PeerPodConfig limit is merge-patched, not applied (the administrator may patch it)', () => {
    const plan = planPeerPods(
      observed({
        peerPodConfig: peerPodConfig('2'),
        daemonSet,
        configMap: configMap({ ...validData, PODVM_AMI_ID: 'ami-0123456789abcdef0' }),
      }),
      NOW,
    );
    const w = plan.writes[0];
    assert.equal(w?.op, 'patch');
    assert.deepEqual(w?.op === 'patch' && w.patch, {
      metadata: { annotations: { [LIMIT_FROM_CM_ANNOTATION]: '4' } },
      spec: { limit: '4' },
    });
  });

  test('an invalid configuration: the condition only, naming the key; nothing started', () => {
    const plan = planPeerPods(observed({ configMap: configMap({ ...validData, AWS_REGION: '' }) }), NOW);
    assert.deepEqual(writes(plan), []);
    const c = cond(plan, 'PeerPodsConfigValid');
    assert.equal(c?.status, 'False');
    assert.equal(c?.reason, 'InvalidConfiguration');
    assert.match(c?.message ?? '', /AWS_REGION/);
    assert.equal(plan.notes[0]?.msg, 'peer pods configuration invalid; waiting for it to be fixed');
  });

  test('the image job done: its image recorded on peer-pods-cm, the job deleted, Completed; none twice while the cache lags', () => {
    const ami = 'ami-0123456789abcdef0';
    const done = job(
      'creation',
      'complete',
      { annotations: { [CONFIG_HASH_ANNOTATION]: configHash(configMap(), secret) } },
      '2026-03-01T11:59:59Z',
    );
    const base = { peerPodConfig: peerPodConfig(), daemonSet, nodes: [node('worker-0', '4')], creationJob: done };
    const plan = planPeerPods(observed({ ...base, configMap: configMap({ ...validData, PODVM_AMI_ID: ami }) }), NOW);
    assert.deepEqual(writes(plan), ['apply DaemonSet/osc-caa-ds', 'patch ConfigMap/peer-pods-cm', 'delete Job/osc-podvm-image-creation']);
    const record = plan.writes[1];
    assert.deepEqual(record?.op === 'patch' && record.patch, { metadata: { annotations: { [IMAGE_ID_ANNOTATION]: ami } } });
    const del = plan.writes[2];
    assert.equal(del?.op === 'delete' && del.uid, 'creation-uid', 'only the job the cache showed');
    assert.equal(cond(plan, 'PodVMImageJobCompleted')?.status, 'True');
    assert.match(cond(plan, 'PodVMImageJobCompleted')?.message ?? '', new RegExp(ami));
    // PODVM_AMI_ID not in the cache yet: no verdict from the cache; peer-pods-cm is read live once.
    const lagging = planPeerPods(observed({ ...base }), NOW);
    assert.equal(lagging.readConfigMapLive, true);
    assert.equal(lagging.requeueAfterMs, undefined);
    assert.equal(cond(lagging, 'PodVMImageJobFailed'), undefined);
    assert.ok(!writes(lagging).includes('delete Job/osc-podvm-image-creation'));
    // The live copy has it: recorded as above.
    const live = planPeerPods(observed({ ...base, configMap: configMap({ ...validData, PODVM_AMI_ID: ami }), configMapLive: true }), NOW);
    assert.deepEqual(writes(live), writes(plan));
    // The live copy has none either: the job never wrote it, whatever the clocks say.
    const none = planPeerPods(observed({ ...base, configMapLive: true }), NOW);
    assert.equal(none.readConfigMapLive, undefined);
    assert.equal(cond(none, 'PodVMImageJobFailed')?.status, 'True');
    assert.match(cond(none, 'PodVMImageJobFailed')?.message ?? '', /completed without setting PODVM_AMI_ID/);
  });

  test('a clock behind the server: a job that completed "in the future" without its image holds nothing up', () => {
    // The plan's clock a minute behind the job's completion (a stepped wall clock; a server clock ahead).
    const done = job(
      'creation',
      'complete',
      { annotations: { [CONFIG_HASH_ANNOTATION]: configHash(configMap(), secret) } },
      new Date(NOW.getTime() + 60_000).toISOString(),
    );
    const base = { peerPodConfig: peerPodConfig(), daemonSet, nodes: [node('worker-0', '4')], creationJob: done };
    const first = planPeerPods(observed(base), NOW);
    assert.equal(first.readConfigMapLive, true);
    assert.equal(first.requeueAfterMs, undefined, 'no wait counted on the clocks');
    const decided = planPeerPods(observed({ ...base, configMapLive: true }), NOW);
    assert.equal(cond(decided, 'PodVMImageJobFailed')?.status, 'True');
  });

  test('no image and a write of ours to peer-pods-cm not in the cache yet: no job started from the stale copy', () => {
    const plan = planPeerPods(observed({ peerPodConfig: peerPodConfig(), daemonSet, configMapAwaited: true }), NOW);
    assert.ok(!writes(plan).includes('apply Job/osc-podvm-image-creation'));
  });

  test('a failed image job is reported once per job and kept for its logs', () => {
    const failed = job('creation', 'failed');
    const hash = planPeerPods(observed({ peerPodConfig: peerPodConfig(), daemonSet }), NOW).writes.find(
      (w) => w.op === 'apply' && w.resource.kind === 'Job',
    );
    const configHash =
      hash?.op === 'apply' ? hash.object.metadata.annotations?.['peerpods.kataconfiguration.openshift.io/config-hash'] : '';
    failed.metadata.annotations = { 'peerpods.kataconfiguration.openshift.io/config-hash': configHash ?? '' };
    const plan = planPeerPods(observed({ peerPodConfig: peerPodConfig(), daemonSet, creationJob: failed }), NOW);
    assert.ok(!writes(plan).some((w) => w.includes('Job/')));
    assert.equal(cond(plan, 'PodVMImageJobFailed')?.status, 'True');
    assert.deepEqual(plan.failedJobs, [{ kind: 'creation', uid: 'creation-uid' }]);
    // The configuration edited since: the failed job goes, and the next pass starts another.
    const edited = planPeerPods(
      observed({ peerPodConfig: peerPodConfig(), daemonSet, creationJob: failed, configMap: configMap({ ...validData, TAGS: 'a=b' }) }),
      NOW,
    );
    assert.ok(writes(edited).includes('delete Job/osc-podvm-image-creation'));
  });

  test('uninstall: waits for the KataConfig controller, then for kata-remote pods, then removes everything and lets go', () => {
    const deleting = kataConfig({ deleting: true });
    const waiting = planPeerPods(observed({ kataConfigs: [deleting], daemonSet, peerPodConfig: peerPodConfig() }), NOW);
    assert.deepEqual(writes(waiting), []);
    assert.equal(waiting.removeFinalizer, false);
    const started = kataConfig({ deleting: true, uninstallStarted: true });
    const blocked = planPeerPods(observed({ kataConfigs: [started], daemonSet, remotePods: ['default/p'] }), NOW);
    assert.deepEqual(writes(blocked), []);
    assert.equal(blocked.requeueAfterMs, 15_000);
    const plan = planPeerPods(
      observed({ kataConfigs: [started], daemonSet, peerPodConfig: peerPodConfig(), nodes: [node('worker-0', '4')] }),
      NOW,
    );
    assert.deepEqual(writes(plan), ['delete DaemonSet/osc-caa-ds', 'delete PeerPodConfig/peerpodconfig-openshift', 'patch Node/worker-0']);
    const unadvertise = plan.writes[2];
    assert.deepEqual(unadvertise?.op === 'patch' && unadvertise.patch, {
      status: { capacity: { [VM]: null }, allocatable: { [VM]: null } },
    });
    assert.equal(plan.removeFinalizer, true);
    assert.deepEqual(
      plan.events.map((e) => `${e.reason}/${e.action}`),
      ['PeerPodsRemoved/Uninstall'],
    );
    assert.equal(plan.gauges, 'reset');
  });

  test('uninstall with an image osc built: the deletion job first, the removal held until it is done', () => {
    const ami = 'ami-0123456789abcdef0';
    const started = kataConfig({ deleting: true, uninstallStarted: true });
    const cm = configMap({ ...validData, PODVM_AMI_ID: ami }, { [IMAGE_ID_ANNOTATION]: ami });
    const plan = planPeerPods(observed({ kataConfigs: [started], configMap: cm }), NOW);
    assert.deepEqual(writes(plan), ['apply Job/osc-podvm-image-deletion']);
    assert.equal(plan.removeFinalizer, false);
    assert.equal(cond(plan, 'PodVMImageJobRunning')?.reason, 'ImageDeletionRunning');
    const deletion = job('deletion', 'complete', { annotations: { [DELETES_IMAGE_ANNOTATION]: ami } });
    const done = planPeerPods(observed({ kataConfigs: [started], configMap: cm, deletionJob: deletion }), NOW);
    assert.deepEqual(writes(done), ['patch ConfigMap/peer-pods-cm', 'delete Job/osc-podvm-image-deletion']);
    const clear = done.writes[0];
    assert.deepEqual(clear?.op === 'patch' && clear.patch, {
      metadata: { annotations: { [IMAGE_ID_ANNOTATION]: null }, resourceVersion: '11' },
      data: { PODVM_AMI_ID: '' },
    });
    assert.equal(done.removeFinalizer, true);
    assert.equal(cond(done, 'PodVMImageJobCompleted')?.reason, 'ImageDeleted');
    // The clearing not in the cache yet: no second deletion job for the image just deleted.
    const lagging = planPeerPods(observed({ kataConfigs: [started], configMap: cm, configMapAwaited: true }), NOW);
    assert.deepEqual(writes(lagging), []);
    assert.equal(lagging.removeFinalizer, false);
  });

  test('a deletion job started but not in the job cache yet, its image already cleared: the removal waits for it', () => {
    // The job cache's watch was down: the job ran and emptied PODVM_AMI_ID before the cache showed the job.
    const ami = 'ami-0123456789abcdef0';
    const turnedOff = kataConfig({ enablePeerPods: false });
    const cleared = configMap({ ...validData, PODVM_AMI_ID: '' }, { [IMAGE_ID_ANNOTATION]: ami });
    const awaited = { creation: false, deletion: true };
    const plan = planPeerPods(observed({ kataConfigs: [turnedOff], configMap: cleared, jobsAwaited: awaited }), NOW);
    assert.equal(plan.removeFinalizer, false);
    assert.deepEqual(writes(plan), []);
    // Once the cache shows the finished job, its bookkeeping is done and only then the removal goes on.
    const deletion = job('deletion', 'complete', { annotations: { [DELETES_IMAGE_ANNOTATION]: ami } });
    const done = planPeerPods(observed({ kataConfigs: [turnedOff], configMap: cleared, deletionJob: deletion }), NOW);
    assert.deepEqual(writes(done), ['patch ConfigMap/peer-pods-cm', 'delete Job/osc-podvm-image-deletion']);
    assert.equal(done.removeFinalizer, true);
  });

  test("the image just recorded as osc's, the record not in the cache yet: the removal waits rather than leave the image", () => {
    // recordImage's patch was accepted; the cache still shows peer-pods-cm without the record.
    const ami = 'ami-0123456789abcdef0';
    const turnedOff = kataConfig({ enablePeerPods: false });
    const unrecorded = configMap({ ...validData, PODVM_AMI_ID: ami });
    const plan = planPeerPods(observed({ kataConfigs: [turnedOff], configMap: unrecorded, configMapAwaited: true }), NOW);
    assert.equal(plan.removeFinalizer, false);
    assert.deepEqual(writes(plan), []);
  });

  test("an image recorded as osc's, its key empty and no job cached: the deletion is booked, not taken for nothing to do", () => {
    // A deletion job emptied PODVM_AMI_ID and is gone (or not in the cache): the record is cleared first.
    const ami = 'ami-0123456789abcdef0';
    const turnedOff = kataConfig({ enablePeerPods: false });
    const cleared = configMap({ ...validData, PODVM_AMI_ID: '' }, { [IMAGE_ID_ANNOTATION]: ami });
    const plan = planPeerPods(observed({ kataConfigs: [turnedOff], configMap: cleared }), NOW);
    assert.equal(plan.removeFinalizer, false);
    assert.deepEqual(writes(plan), ['patch ConfigMap/peer-pods-cm']);
    const book = plan.writes[0];
    assert.deepEqual(book?.op === 'patch' && book.patch, {
      metadata: { annotations: { [IMAGE_ID_ANNOTATION]: null }, resourceVersion: '11' },
    });
    // Once the cache shows the record cleared, the removal goes on.
    const booked = configMap({ ...validData, PODVM_AMI_ID: '' });
    assert.equal(planPeerPods(observed({ kataConfigs: [turnedOff], configMap: booked }), NOW).removeFinalizer, true);
  });

  test('a creation job started but not in the job cache yet: the removal waits rather than leak its image', () => {
    const turnedOff = kataConfig({ enablePeerPods: false });
    const plan = planPeerPods(
      observed({ kataConfigs: [turnedOff], configMap: configMap(), daemonSet, jobsAwaited: { creation: true, deletion: false } }),
      NOW,
    );
    assert.deepEqual(writes(plan), ['delete DaemonSet/osc-caa-ds']);
    assert.equal(plan.removeFinalizer, false);
  });

  test('removed, finalizer gone, then an adaptor and a PeerPodConfig of ours show again (an etcd restore): they go', () => {
    const off = kataConfig({ enablePeerPods: false, finalizers: ['kataconfiguration.openshift.io/finalizer'] });
    const plan = planPeerPods(observed({ kataConfigs: [off], daemonSet, peerPodConfig: peerPodConfig() }), NOW);
    assert.deepEqual(writes(plan), ['delete DaemonSet/osc-caa-ds', 'delete PeerPodConfig/peerpodconfig-openshift']);
    assert.deepEqual(
      plan.writes.map((w) => (w.op === 'delete' ? w.uid : undefined)),
      ['ds-uid', 'ppc-uid'],
    );
    // A node whose restored status advertises the pod VM capacity again loses it.
    const advertised = planPeerPods(observed({ kataConfigs: [off], nodes: [node('worker-0', '4')] }), NOW);
    assert.deepEqual(writes(advertised), ['patch Node/worker-0']);
    // Someone else's of those names stay.
    const theirs = { ...daemonSet, metadata: { ...daemonSet.metadata, labels: {} } } as unknown as DaemonSet;
    assert.deepEqual(writes(planPeerPods(observed({ kataConfigs: [off], daemonSet: theirs }), NOW)), []);
  });

  test('a deletion job that finished after the removal: the job and the image record do not stay behind', () => {
    const ami = 'ami-0123456789abcdef0';
    const deletion = job('deletion', 'complete', { annotations: { [DELETES_IMAGE_ANNOTATION]: ami } });
    const cleared = configMap({ ...validData, PODVM_AMI_ID: '' }, { [IMAGE_ID_ANNOTATION]: ami });
    const off = kataConfig({ enablePeerPods: false, finalizers: ['kataconfiguration.openshift.io/finalizer'] });
    const expected = ['patch ConfigMap/peer-pods-cm', 'delete Job/osc-podvm-image-deletion'];
    assert.deepEqual(writes(planPeerPods(observed({ kataConfigs: [off], configMap: cleared, deletionJob: deletion }), NOW)), expected);
    const none = observed({ key: '', kataConfigs: [], configMap: cleared, deletionJob: deletion });
    assert.deepEqual(writes(planPeerPods(none, NOW)), expected);
    // Still running: left to finish.
    const running = job('deletion', 'active', { annotations: { [DELETES_IMAGE_ANNOTATION]: ami } });
    assert.deepEqual(writes(planPeerPods(observed({ kataConfigs: [off], configMap: cleared, deletionJob: running }), NOW)), []);
  });

  test('no KataConfig at all: osc leftovers deleted, nothing of anyone else', () => {
    const plan = planPeerPods(
      observed({ key: '', kataConfigs: [], daemonSet, peerPodConfig: peerPodConfig(), nodes: [node('worker-0', '4')] }),
      NOW,
    );
    assert.deepEqual(writes(plan), ['delete DaemonSet/osc-caa-ds', 'delete PeerPodConfig/peerpodconfig-openshift', 'patch Node/worker-0']);
    const foreign = { ...daemonSet, metadata: { ...daemonSet.metadata, labels: {} } };
    assert.deepEqual(writes(planPeerPods(observed({ key: '', kataConfigs: [], daemonSet: foreign }), NOW)), []);
  });
});
