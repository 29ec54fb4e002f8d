import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { parseLimit } from '../../src/api/peerpodconfig.ts';
import {
  CONFIG_HASH_ANNOTATION,
  configCondition,
  configHash,
  DEFAULT_IMAGES,
  desiredDaemonSet,
  desiredImageJob,
  desiredPeerPodConfig,
  IMAGE_JOB_SELECTOR,
  imageConditions,
  imagesFromEnv,
  isKataNode,
  jobFailureDetail,
  jobPhase,
  SPEC_HASH_ANNOTATION,
} from '../../src/controllers/peerpods/desired.ts';
import { kataUninstallStarted } from '../../src/controllers/peerpods/reconciler.ts';
import type { ConfigMap, Job, Node, Secret } from '../../src/kube/resources.ts';
import type { OwnerReference } from '../../src/kube/types.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';

const owner: OwnerReference = {
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  name: 'example-kataconfig',
  uid: 'u1',
};
const NS = 'openshift-sandboxed-containers-operator';
const SECRET_VALUE = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

const cm = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secret = (value = SECRET_VALUE): Secret => ({
  metadata: { name: 'peer-pods-secret', namespace: NS },
  data: {
    AWS_ACCESS_KEY_ID: Buffer.from('AKIAEXAMPLE').toString('base64'),
    AWS_SECRET_ACCESS_KEY: Buffer.from(value).toString('base64'),
  },
});
const valid = {
  CLOUD_PROVIDER: 'aws',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
};

/** Where the OpenShift platform puts the kata nodes: a cluster with workers, or a compact one (masters only). */
const openshift = openShiftPlatform();
const clusterNodes = (compact: boolean): Node[] => [
  {
    metadata: {
      name: 'n',
      labels: compact
        ? { 'node-role.kubernetes.io/master': '', 'node-role.kubernetes.io/worker': '' }
        : { 'node-role.kubernetes.io/worker': '' },
    },
  },
];
const placement = (compact: boolean) => ({
  nodeSelector: openshift.kataNodeSelector(clusterNodes(compact)),
  tolerations: openshift.kataNodeTolerations(clusterNodes(compact)),
});

describe('configHash', () => {
  test('stable across key order, changed by any ConfigMap or Secret value, revealing none', () => {
    const h = configHash(cm({ A: '1', B: '2' }), secret());
    assert.match(h, /^[0-9a-f]{16}$/);
    assert.equal(configHash(cm({ B: '2', A: '1' }), secret()), h);
    assert.notEqual(configHash(cm({ A: '1', B: '3' }), secret()), h);
    assert.notEqual(configHash(cm({ A: '1', B: '2' }), secret(`${SECRET_VALUE}x`)), h);
    assert.notEqual(configHash(undefined, secret()), h);
  });
});

describe('desiredDaemonSet', () => {
  const ds = (over: Partial<Parameters<typeof desiredDaemonSet>[0]> = {}) =>
    desiredDaemonSet({ namespace: NS, image: DEFAULT_IMAGES.caa, configHash: 'abc', placement: placement(false), owner, ...over });

  test('osc-caa-ds on the kata-oc nodes, its environment from peer-pods-cm and peer-pods-secret by reference', () => {
    const d = ds();
    assert.equal(d.metadata.name, 'osc-caa-ds');
    const spec = d.spec.template.spec as Record<string, unknown> & { containers: Record<string, unknown>[] };
    assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/kata-oc': '' });
    assert.equal(spec.tolerations, undefined);
    assert.deepEqual(spec.containers[0]?.envFrom, [
      { secretRef: { name: 'peer-pods-secret' } },
      { configMapRef: { name: 'peer-pods-cm' } },
    ]);
    assert.equal(spec.containers[0]?.image, 'registry.redhat.io/openshift-sandboxed-containers/osc-cloud-api-adaptor-rhel9:1.12.0');
    assert.equal(d.spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION], 'abc');
    assert.deepEqual(d.spec.selector, { matchLabels: { app: 'osc-caa-ds' } });
    assert.equal(d.spec.template.metadata?.labels?.app, 'osc-caa-ds');
  });

  test('the masters on a compact cluster, tolerating their taint', () => {
    const spec = ds({ placement: placement(true) }).spec.template.spec as Record<string, unknown>;
    assert.deepEqual(spec.nodeSelector, { 'node-role.kubernetes.io/master': '' });
    assert.deepEqual(spec.tolerations, [{ key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' }]);
  });

  test('the spec hash follows the configuration hash and the image', () => {
    const h = ds().metadata.annotations?.[SPEC_HASH_ANNOTATION];
    assert.equal(ds().metadata.annotations?.[SPEC_HASH_ANNOTATION], h);
    assert.notEqual(ds({ configHash: 'abd' }).metadata.annotations?.[SPEC_HASH_ANNOTATION], h);
    assert.notEqual(ds({ image: 'quay.io/example/caa:dev' }).metadata.annotations?.[SPEC_HASH_ANNOTATION], h);
  });
});

describe('desiredImageJob', () => {
  const base = { namespace: NS, image: DEFAULT_IMAGES.podvmBuilder, backoffLimit: 1, configHash: 'h', owner };

  test('creation: /podvm-builder.sh create, one retry, found by the job selector', () => {
    const j = desiredImageJob({ ...base, kind: 'creation' });
    assert.equal(j.metadata.name, 'osc-podvm-image-creation');
    assert.equal(j.spec.backoffLimit, 1);
    const c = (j.spec.template.spec.containers as { command: string[]; env: unknown[] }[])[0];
    assert.deepEqual(c?.command, ['/podvm-builder.sh', 'create']);
    assert.deepEqual(c?.env, []);
    assert.equal(j.spec.template.spec.restartPolicy, 'Never');
    for (const sel of IMAGE_JOB_SELECTOR.split(',')) {
      const [k, v] = sel.split('=') as [string, string];
      assert.equal(j.metadata.labels?.[k], v);
    }
  });

  test('deletion: names the image it deletes', () => {
    const j = desiredImageJob({ ...base, kind: 'deletion', amiId: 'ami-0123456789abcdef0' });
    assert.equal(j.metadata.name, 'osc-podvm-image-deletion');
    const c = (j.spec.template.spec.containers as { command: string[]; env: unknown[] }[])[0];
    assert.deepEqual(c?.command, ['/podvm-builder.sh', 'delete']);
    assert.deepEqual(c?.env, [{ name: 'AMI_ID', value: 'ami-0123456789abcdef0' }]);
  });
});

describe('jobPhase and jobFailureDetail', () => {
  const job = (conditions: { type: string; status: string; reason?: string; message?: string }[]): Job => ({
    metadata: { name: 'j' },
    spec: { template: { spec: {} } },
    status: { conditions },
  });
  test('active until Complete or Failed is True', () => {
    assert.equal(jobPhase(job([])), 'active');
    assert.equal(jobPhase(job([{ type: 'SuccessCriteriaMet', status: 'True' }])), 'active');
    assert.equal(jobPhase(job([{ type: 'Complete', status: 'True' }])), 'complete');
    assert.equal(jobPhase(job([{ type: 'Failed', status: 'False' }])), 'active');
    const failed = job([
      { type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' },
    ]);
    assert.equal(jobPhase(failed), 'failed');
    assert.equal(jobFailureDetail(failed), 'DeadlineExceeded: Job was active longer than specified deadline');
  });
});

describe('conditions', () => {
  test('PeerPodsConfigValid: problems make it False, naming key and fix; warnings are noted when valid', () => {
    const bad = configCondition(validatePeerPodsConfig(cm({ ...valid, ROOT_VOLUME_SIZE: '4' }), secret()));
    assert.deepEqual(bad, {
      type: 'PeerPodsConfigValid',
      status: 'False',
      reason: 'InvalidConfiguration',
      message: 'Invalid peer pods configuration: ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more.',
    });
    const noted = configCondition(
      validatePeerPodsConfig(
        cm({ ...valid, PODVM_INSTANCE_TYPE: 't3.medium', PODVM_INSTANCE_TYPES: 't2.small,t2.medium,t3.large' }),
        secret(),
      ),
    );
    assert.equal(noted.status, 'True');
    assert.equal(
      noted.message,
      'The peer pods configuration (peer-pods-cm, peer-pods-secret) is valid; note: PODVM_INSTANCE_TYPE t3.medium is not in PODVM_INSTANCE_TYPES (t2.small,t2.medium,t3.large); pods may use it anyway, as the default.',
    );
    const secretBad = configCondition(validatePeerPodsConfig(cm(valid), secret(` ${SECRET_VALUE}`)));
    assert.equal(secretBad.status, 'False');
    assert.ok(!secretBad.message.includes(SECRET_VALUE), 'never a secret value');
  });

  test('PodVMImageJob*: at most one True', () => {
    const trues = (o: Parameters<typeof imageConditions>[0]) =>
      imageConditions(o)
        .filter((c) => c.status === 'True')
        .map((c) => c.type);
    assert.deepEqual(trues({ state: 'running', kind: 'creation' }), ['PodVMImageJobRunning']);
    assert.deepEqual(trues({ state: 'completed', kind: 'creation', amiId: 'ami-1' }), ['PodVMImageJobCompleted']);
    assert.deepEqual(trues({ state: 'failed', kind: 'deletion', detail: 'x', namespace: NS }), ['PodVMImageJobFailed']);
    assert.deepEqual(trues({ state: 'provided', amiId: 'ami-1' }), []);
    const [running] = imageConditions({ state: 'running', kind: 'deletion', amiId: 'ami-0123456789abcdef0' });
    assert.equal(running?.message, 'Job osc-podvm-image-deletion is deleting the pod VM image ami-0123456789abcdef0');
    assert.equal(running?.reason, 'ImageDeletionRunning');
  });
});

describe('PeerPodConfig', () => {
  test('spec.limit: a string (as documented) or an integer, a whole number from 1', () => {
    const cases: [string | number | undefined, number | undefined][] = [
      ['10', 10],
      [12, 12],
      ['0', undefined],
      [0, undefined],
      ['-1', undefined],
      ['010', undefined],
      ['1.5', undefined],
      [1.5, undefined],
      ['ten', undefined],
      [undefined, undefined],
    ];
    for (const [input, want] of cases) assert.equal(parseLimit(input), want, String(input));
  });

  test('peerpodconfig-openshift: limit from PEERPODS_LIMIT_PER_NODE, as a string', () => {
    const p = desiredPeerPodConfig(NS, 10, placement(false), owner);
    assert.equal(p.metadata.name, 'peerpodconfig-openshift');
    assert.deepEqual(p.spec, {
      cloudSecretName: 'peer-pods-secret',
      configMapName: 'peer-pods-cm',
      limit: '10',
      nodeSelector: { 'node-role.kubernetes.io/kata-oc': '' },
    });
  });
});

describe('helpers', () => {
  test('isKataNode: the kata-oc label, or the master role on compact clusters; never a node being deleted', () => {
    const node = (labels: Record<string, string>, deleting = false) => ({
      metadata: { name: 'n', labels, ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
    });
    assert.equal(isKataNode(node({ 'node-role.kubernetes.io/kata-oc': '' }), placement(false).nodeSelector), true);
    assert.equal(isKataNode(node({ 'node-role.kubernetes.io/worker': '' }), placement(false).nodeSelector), false);
    assert.equal(isKataNode(node({ 'node-role.kubernetes.io/kata-oc': '' }, true), placement(false).nodeSelector), false);
    assert.equal(isKataNode(node({ 'node-role.kubernetes.io/master': '' }), placement(true).nodeSelector), true);
  });

  test('images: RELATED_IMAGE_* overrides', () => {
    assert.deepEqual(imagesFromEnv({}), DEFAULT_IMAGES);
    assert.deepEqual(imagesFromEnv({ RELATED_IMAGE_CAA: 'quay.io/x/caa:1' }), { ...DEFAULT_IMAGES, caa: 'quay.io/x/caa:1' });
  });

  test('kataUninstallStarted: only on the signal the KataConfig controller owns, never on its condition', () => {
    const kc = (reason: string, uninstallStarted?: boolean, finalizers = ['kataconfiguration.openshift.io/finalizer']): KataConfig => ({
      metadata: { name: 'k', finalizers },
      status: {
        conditions: [{ type: 'InProgress', status: 'True', reason, message: '', lastTransitionTime: '' }],
        kataNodes: { nodeCount: 0, readyNodeCount: 0 },
        ...(uninstallStarted === undefined ? {} : { uninstallStarted }),
      },
    });
    assert.equal(kataUninstallStarted(kc('BlockedByExistingKataPods')), false);
    // The reason alone says nothing any more: a Failed or Uninstalling condition without the field is not the signal.
    assert.equal(kataUninstallStarted(kc('Uninstalling')), false);
    assert.equal(kataUninstallStarted(kc('Failed')), false);
    assert.equal(kataUninstallStarted(kc('Uninstalling', true)), true);
    assert.equal(kataUninstallStarted(kc('Failed', true)), true);
    // Its finalizer gone, the KataConfig controller is done with the uninstall.
    assert.equal(kataUninstallStarted(kc('BlockedByExistingKataPods', undefined, [])), true);
  });
});
