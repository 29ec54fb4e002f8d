/**
 * The pod VM image osc built must not leak: a failed osc-podvm-image-deletion holds the KataConfig's
 * removal, shows on the KataConfig (condition and event), is retried once the cause is cleared, and the
 * administrator can choose to keep the image instead (kataconfiguration.openshift.io/keep-podvm-image).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PODVM_IMAGE_DELETION_JOB } from '../../src/api/names.ts';
import { KEEP_IMAGE_ANNOTATION, PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import { FAIL_IMAGE_DELETION_ANNOTATION } from '../../src/devcluster/clouds/image-jobs.ts';
import { ConfigMaps, Jobs, Secrets } from '../../src/kube/resources.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForEvents } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const cloudError = 'UnauthorizedOperation: You are not authorized to perform: ec2:DeregisterImage';

const data: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
  PODVM_AMI_ID: '',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
};

const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);

describe('peer pods: a failed pod VM image deletion', () => {
  const cluster = useDevCluster({
    workers: 1,
    platform: 'AWS',
    rebootMs: 300,
    // the administrator's IAM user, whose key peer-pods-secret holds
    awsUsers: [{ accessKeyId: 'AKIAIOSFODNN7OSCTEST', secretAccessKey: 'not-a-real-secret-access-key' }],
  });
  let op: RunningOperator;
  before(async () => {
    op = await startOperator(cluster.dev);
    await c().create(Secrets, {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7OSCTEST', AWS_SECRET_ACCESS_KEY: 'not-a-real-secret-access-key' },
    });
    await c().create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data });
  });
  after(() => op?.stop());

  const c = () => cluster.dev.client;
  const amiId = async () => (await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID ?? '';
  const patchCmAnnotations = (annotations: Record<string, string | null>) =>
    c().patch(ConfigMaps, PEER_PODS_CM, { metadata: { annotations } }, { namespace: NS });

  async function installAndBuild(name: string): Promise<string> {
    await c().create(KataConfigs, { metadata: { name }, spec: { enablePeerPods: true } });
    return waitFor(async () => ((await amiId()).startsWith('ami-') ? amiId() : undefined), {
      timeoutMs: 120_000,
      message: 'the pod VM image built',
    });
  }

  async function failedDeletion(name: string): Promise<KataConfig> {
    return waitFor(
      async () => {
        const kc = await c().find(KataConfigs, name);
        return cond(kc, 'PodVMImageJobFailed')?.status === 'True' ? kc : undefined;
      },
      { timeoutMs: 120_000, message: 'PodVMImageJobFailed on the KataConfig' },
    );
  }

  test('holds the removal and says so; retried and finished once the cause is cleared', async () => {
    const ami = await installAndBuild('leak');
    await patchCmAnnotations({ [FAIL_IMAGE_DELETION_ANNOTATION]: cloudError });
    await c().delete(KataConfigs, 'leak');
    const failed = await failedDeletion('leak');
    assert.equal(cond(failed, 'PodVMImageJobFailed')?.reason, 'ImageDeletionFailed');
    assert.match(
      cond(failed, 'PodVMImageJobFailed')?.message ?? '',
      /^Job osc-podvm-image-deletion failed \(.*\); see oc logs .* the removal waits until the image is deleted: fix the cause and it is retried when peer-pods-cm or peer-pods-secret changes .*oc annotate kataconfig leak kataconfiguration\.openshift\.io\/keep-podvm-image=true$/,
    );
    assert.ok(failed.metadata.finalizers?.includes(PEERPODS_FINALIZER), 'the KataConfig stays while its image exists');
    await waitForEvents(
      c(),
      'default',
      (e) => e.regarding?.name === 'leak' && e.reason === 'PodVMImageJobFailed' && e.type === 'Warning',
      'a Warning event PodVMImageJobFailed on the KataConfig',
    );
    assert.equal(await amiId(), ami);
    assert.ok(cluster.dev.cloud.images.has(ami), 'the image still exists in the cloud');

    // The administrator clears the cause: the deletion runs again, and the removal finishes.
    await patchCmAnnotations({ [FAIL_IMAGE_DELETION_ANNOTATION]: null });
    await waitFor(async () => !(await c().find(KataConfigs, 'leak')), { timeoutMs: 120_000, message: 'KataConfig gone after the retry' });
    assert.equal(await amiId(), '');
    assert.equal(cluster.dev.cloud.images.has(ami), false, 'the image is gone from the cloud');
  });

  test('the administrator keeps the image: the removal finishes and the image stays', async () => {
    const ami = await installAndBuild('keep');
    await patchCmAnnotations({ [FAIL_IMAGE_DELETION_ANNOTATION]: cloudError });
    await c().delete(KataConfigs, 'keep');
    await failedDeletion('keep');
    await c().patch(KataConfigs, 'keep', { metadata: { annotations: { [KEEP_IMAGE_ANNOTATION]: 'true' } } });
    await waitFor(async () => !(await c().find(KataConfigs, 'keep')), { timeoutMs: 120_000, message: 'KataConfig gone, image kept' });
    assert.equal(await amiId(), ami, 'PODVM_AMI_ID still names the kept image');
    assert.ok(cluster.dev.cloud.images.has(ami));
    await waitForEvents(c(), 'default', (e) => e.regarding?.name === 'keep' && e.reason === 'PodVMImageKept', 'the event PodVMImageKept');
    await patchCmAnnotations({ [FAIL_IMAGE_DELETION_ANNOTATION]: null });
    // The failed job was the KataConfig's: the garbage collector removes it with its owner, as on any cluster.
    await waitFor(async () => !(await c().find(Jobs, PODVM_IMAGE_DELETION_JOB, NS)), { message: 'the job gone with its owner' });
  });
});
