/**
 * The peer pods plan's credentials share (docs/cloud-credentials.md): the request made or deleted, the
 * pods wired to the chosen Secret, the condition for each missing piece, a rotated key rolling the adaptor,
 * and the request deleted only once the removal has deleted the image.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { awsCredentialsFile, type CredentialsRequest } from '../../src/api/cloudcredential.ts';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { CONFIG_HASH_ANNOTATION, DEFAULT_IMAGES, PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import type { ObservedCloudCredentials, PeerPodsObserved } from '../../src/controllers/peerpods/observed.ts';
import { planPeerPods } from '../../src/controllers/peerpods/plan.ts';
import type { PeerPodsPlan } from '../../src/controllers/peerpods/plan-types.ts';
import type { DaemonSet, Job, Secret } from '../../src/kube/resources.ts';
import { desiredCollectorRequest } from '../../src/peerpods/collector-credentials.ts';
import { desiredCredentialsRequest } from '../../src/peerpods/credentials.ts';

const NS = 'openshift-sandboxed-containers-operator';
const NOW = new Date('2026-03-01T12:00:00Z');
const KATA = { 'node-role.kubernetes.io/kata-oc': '' };
const b64 = (s: string) => Buffer.from(s).toString('base64');

const kataConfig = (deleting = false) =>
  ({
    metadata: {
      name: 'example',
      uid: 'kc-uid',
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: [PEERPODS_FINALIZER],
      ...(deleting ? { deletionTimestamp: '2026-03-01T11:00:00Z' } : {}),
    },
    spec: { enablePeerPods: true },
    status: {},
  }) as KataConfig;

const cm = {
  metadata: { name: 'peer-pods-cm', namespace: NS, resourceVersion: '11' },
  data: {
    CLOUD_PROVIDER: 'aws',
    AWS_REGION: 'us-east-2',
    AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
    AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
    AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
    PODVM_AMI_ID: 'ami-0123456789abcdef0',
  },
};
const minted = (key: string): Secret => ({
  metadata: { name: 'cco-secret', namespace: NS, resourceVersion: key },
  data: { aws_access_key_id: b64(key), aws_secret_access_key: b64('s'), credentials: b64(awsCredentialsFile(key, 's')) },
});
const adminSecret: Secret = {
  metadata: { name: 'peer-pods-secret', namespace: NS, resourceVersion: '12' },
  data: { AWS_ACCESS_KEY_ID: b64('AKIAEXAMPLE'), AWS_SECRET_ACCESS_KEY: b64('s') },
};
const request = (): CredentialsRequest => ({
  ...desiredCredentialsRequest(NS, ['default']),
  metadata: { ...desiredCredentialsRequest(NS, ['default']).metadata, uid: 'cr-uid' },
});

const observed = (cc: ObservedCloudCredentials | undefined, over: Partial<PeerPodsObserved> = {}): PeerPodsObserved => ({
  key: 'example',
  kataConfigs: [kataConfig()],
  supportsPeerPods: true,
  placement: { nodeSelector: KATA, tolerations: [] },
  nodes: [],
  configMap: cm,
  remotePods: [],
  configMapAwaited: false,
  jobsAwaited: { creation: false, deletion: false },
  caaUpdateStrategy: 'RollingUpdate',
  ...(cc ? { cloudCredentials: cc } : {}),
  options: { namespace: NS, images: DEFAULT_IMAGES, imageJobBackoffLimit: 1, blockedRecheckMs: 15_000 },
  ...over,
});
const writes = (p: PeerPodsPlan) => p.writes.map((w) => `${w.op} ${w.resource.kind}/${w.op === 'apply' ? w.object.metadata.name : w.name}`);
const configValid = (p: PeerPodsPlan) => p.conditions?.find((c) => c.type === 'PeerPodsConfigValid');
const daemonSet = (p: PeerPodsPlan) => p.writes.find((w) => w.op === 'apply' && w.resource.kind === 'DaemonSet');

describe('peer pods plan: credentials', () => {
  test('no Secret at all: the request is made, nothing else runs, the condition says so', () => {
    const plan = planPeerPods(observed({ mode: '' }), NOW);
    assert.ok(writes(plan).includes('apply CredentialsRequest/openshift-sandboxed-containers-aws'));
    assert.equal(daemonSet(plan), undefined);
    assert.equal(configValid(plan)?.status, 'False');
    assert.match(configValid(plan)?.message ?? '', /requesting credentials from the Cloud Credential Operator/);
  });

  test('minted keys: the adaptor reads them from cco-secret; a rotated key changes its pod template', () => {
    const plan = (key: string) => planPeerPods(observed({ mode: '', request: request(), secret: minted(key) }), NOW);
    const a = daemonSet(plan('AKIA1'));
    assert.equal(configValid(plan('AKIA1'))?.status, 'True');
    const spec = JSON.stringify(a?.op === 'apply' ? a.object : {});
    assert.match(spec, /"secretKeyRef":\{"name":"cco-secret","key":"aws_access_key_id"\}/);
    assert.doesNotMatch(spec, /peer-pods-secret/);
    const hash = (w: typeof a) =>
      ((w?.op === 'apply' ? w.object : {}) as DaemonSet).spec?.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
    assert.notEqual(hash(a), hash(daemonSet(plan('AKIA2'))), 'a new key rolls the adaptor');
  });

  test("an administrator's peer-pods-secret wins: used whole, and osc's request is deleted", () => {
    const plan = planPeerPods(observed({ mode: '', request: request(), secret: minted('AKIA1') }, { secret: adminSecret }), NOW);
    assert.ok(writes(plan).includes('delete CredentialsRequest/openshift-sandboxed-containers-aws'));
    const ds = daemonSet(plan);
    assert.match(JSON.stringify(ds?.op === 'apply' ? ds.object : {}), /"envFrom":\[\{"secretRef":\{"name":"peer-pods-secret"\}\}/);
  });

  test('Manual mode with no Secret: ccoctl or peer-pods-secret', () => {
    const plan = planPeerPods(observed({ mode: 'Manual', request: request() }), NOW);
    assert.match(configValid(plan)?.message ?? '', /Manual mode .*run ccoctl aws create-iam-roles/);
  });

  test("Manual mode: the leaked pod VM collector's own request too (list and delete only, the operator's ServiceAccount); elsewhere none, and one left over is deleted", () => {
    const manual = planPeerPods(observed({ mode: 'Manual', request: request() }), NOW);
    const collector = manual.writes.find(
      (w) => w.op === 'apply' && w.object.metadata.name === 'openshift-sandboxed-containers-aws-podvm-collector',
    );
    assert.ok(collector?.op === 'apply');
    const spec = (collector.object as CredentialsRequest).spec;
    assert.deepEqual(spec.serviceAccountNames, ['osc-controller-manager']);
    assert.deepEqual(spec.secretRef, { name: 'podvm-collector-cco-secret', namespace: NS });
    assert.deepEqual(spec.providerSpec.statementEntries, [
      { effect: 'Allow', action: ['ec2:DescribeInstances', 'ec2:TerminateInstances'], resource: '*' },
    ]);
    const mint = planPeerPods(observed({ mode: '', request: request() }), NOW);
    assert.ok(!writes(mint).some((w) => w.includes('podvm-collector')));
    const leftOver = { ...desiredCollectorRequest(NS), metadata: { ...desiredCollectorRequest(NS).metadata, uid: 'c-uid' } };
    const switched = planPeerPods(observed({ mode: '', request: request(), collectorRequest: leftOver }), NOW);
    assert.ok(writes(switched).includes('delete CredentialsRequest/openshift-sandboxed-containers-aws-podvm-collector'));
  });

  test('no Cloud Credential Operator: the Secret checks as before', () => {
    const plan = planPeerPods(observed(undefined), NOW);
    assert.ok(!writes(plan).some((w) => w.includes('CredentialsRequest')));
    assert.match(configValid(plan)?.message ?? '', /Secret peer-pods-secret not found in namespace/);
  });

  test('removal: the request goes only after the image is deleted (the deletion job uses the credentials)', () => {
    const cc: ObservedCloudCredentials = { mode: '', request: request(), secret: minted('AKIA1') };
    const builtByOsc = {
      ...cm,
      metadata: { ...cm.metadata, annotations: { 'peerpods.kataconfiguration.openshift.io/podvm-image-id': cm.data.PODVM_AMI_ID } },
    };
    const deleting = planPeerPods(observed(cc, { kataConfigs: [kataConfig(true)], configMap: builtByOsc }), NOW);
    const job = deleting.writes.find((w) => w.op === 'apply' && w.resource.kind === 'Job');
    assert.ok(job, 'a deletion job');
    assert.match(JSON.stringify(job?.op === 'apply' ? (job.object as Job) : {}), /"secretKeyRef":\{"name":"cco-secret"/);
    assert.ok(!writes(deleting).some((w) => w.includes('CredentialsRequest')));
    const done = planPeerPods(
      observed(cc, { kataConfigs: [kataConfig(true)], configMap: { ...cm, data: { ...cm.data, PODVM_AMI_ID: '' } } }),
      NOW,
    );
    assert.ok(writes(done).includes('delete CredentialsRequest/openshift-sandboxed-containers-aws'));
    assert.equal(done.removeFinalizer, true);
  });
});
