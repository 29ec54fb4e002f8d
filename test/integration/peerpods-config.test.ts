/**
 * Peer pods against the dev cluster, beyond the documented happy path: every kind of bad peer-pods-cm and
 * peer-pods-secret shows in the KataConfig status (the key and the fix) and clears when fixed; edits restart
 * the cloud-api-adaptor; the pod VM image job's failure is reported and not retried; turning enablePeerPods
 * off on a live KataConfig removes the peer-pod parts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  OPERATOR_NAMESPACE,
  PEER_POD_CONFIG,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PODVM_IMAGE_CREATION_JOB,
} from '../../src/api/names.ts';
import { PeerPodConfigs } from '../../src/api/peerpodconfig.ts';
import { CONFIG_HASH_ANNOTATION, PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import { FAIL_IMAGE_CREATION_ANNOTATION } from '../../src/devcluster/clouds/image-jobs.ts';
import { ConfigMaps, DaemonSets, Events, Jobs, Namespaces, Nodes, Pods, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount, waitForEvents } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYOSCTESTKEY';
const ACCESS_KEY = 'AKIAIOSFODNN7OSCTEST';
const PROVIDED_AMI = 'ami-0123456789abcdef0';

const validData: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
  PODVM_AMI_ID: PROVIDED_AMI,
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  TAGS: 'team=sandbox,env=test',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
};

/**
 * Bad ConfigMaps: the change (null removes a key) and what the PeerPodsConfigValid message must say. Every
 * kind of problem the issue lists: a missing required key, ROOT_VOLUME_SIZE under 6, a malformed list,
 * TAGS, a duration, an unknown CLOUD_PROVIDER; and a few more.
 */
const badConfigMaps: { name: string; data: Record<string, string | null>; message: RegExp }[] = [
  {
    name: 'a required key is missing',
    data: { AWS_REGION: null },
    message:
      /^Invalid peer pods configuration: AWS_REGION is missing from ConfigMap peer-pods-cm: it is required for aws; set it to the cluster's region \(oc get infrastructure\/cluster -o jsonpath='\{\.status\.platformStatus\.aws\.region\}'\)\.$/,
  },
  {
    name: 'ROOT_VOLUME_SIZE under 6',
    data: { ROOT_VOLUME_SIZE: '4' },
    message: /^Invalid peer pods configuration: ROOT_VOLUME_SIZE is "4": the minimum is 6 \(GB\); set it to 6 or more\.$/,
  },
  {
    name: 'ROOT_VOLUME_SIZE with a unit',
    data: { ROOT_VOLUME_SIZE: '10Gi' },
    message: /ROOT_VOLUME_SIZE is "10Gi": it must be a whole number of GB without a unit; set it to 6 or more/,
  },
  {
    name: 'an instance type list with spaces',
    data: { PODVM_INSTANCE_TYPES: 't3.small, t3.medium' },
    message: /PODVM_INSTANCE_TYPES is "t3.small, t3.medium": the list must not contain spaces; write it as t3.small,t3.medium,t3.large/,
  },
  {
    name: 'an instance type list with an empty item',
    data: { PODVM_INSTANCE_TYPES: 't3.small,,t3.large' },
    message: /PODVM_INSTANCE_TYPES is "t3.small,,t3.large": it has an empty item/,
  },
  {
    name: 'a default instance type that is not one',
    data: { PODVM_INSTANCE_TYPE: 'medium' },
    message: /PODVM_INSTANCE_TYPE is "medium": it is not an AWS instance type name \(like t3.medium\); set it to one/,
  },
  {
    name: 'TAGS with ":"',
    data: { TAGS: 'key1:value1,key2:value2' },
    message:
      /TAGS is "key1:value1,key2:value2": "key1:value1" has no "=" \(use = between key and value, not :\); write tags as key1=value1,key2=value2/,
  },
  {
    name: 'a duration without a unit',
    data: { PROXY_TIMEOUT: '5' },
    message: /PROXY_TIMEOUT is "5": it is not a duration \(a number needs a unit\); write it like 5m, 30s or 1h30m/,
  },
  {
    name: 'a cloud provider osc does not drive',
    data: { CLOUD_PROVIDER: 'libvirt' },
    message: /CLOUD_PROVIDER is "libvirt": this operator supports only "aws", "azure" and "gcp" peer pods so far/,
  },
  {
    name: 'an unknown cloud provider',
    data: { CLOUD_PROVIDER: 'openstack' },
    message: /CLOUD_PROVIDER is "openstack": it is not a known cloud provider; set it to "aws"/,
  },
  {
    name: 'a limit of 0',
    data: { PEERPODS_LIMIT_PER_NODE: '0' },
    message: /PEERPODS_LIMIT_PER_NODE is "0": it must be a whole number of pod VMs per node, 1 or more/,
  },
  {
    name: "the Kata agent's port as VXLAN port",
    data: { VXLAN_PORT: '15150' },
    message: /VXLAN_PORT is "15150": port 15150 is the Kata agent's port in the pod VM; set it to 9000 as documented/,
  },
  {
    name: 'the placeholder AMI ID from the example',
    data: { PODVM_AMI_ID: '<podvm_ami_id>' },
    message:
      /PODVM_AMI_ID is "<podvm_ami_id>", the placeholder from the example: set it to your own AMI ID, or to "" to have the operator build the pod VM image/,
  },
  {
    name: 'a security group ID that is not one',
    data: { AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890,default' },
    message: /AWS_SG_IDS is "sg-0a1b2c3d4e5f67890,default": "default" is not a security group ID/,
  },
  {
    name: 'DISABLECVM not a boolean',
    data: { DISABLECVM: 'yes' },
    message: /DISABLECVM is "yes": it must be true or false; set it to "true" as documented/,
  },
  {
    name: 'two problems at once',
    data: { ROOT_VOLUME_SIZE: '5', AWS_VPC_ID: null },
    message:
      /^Invalid peer pods configuration \(2 problems\): AWS_VPC_ID is missing from ConfigMap peer-pods-cm: .*\. ROOT_VOLUME_SIZE is "5": the minimum is 6 \(GB\); set it to 6 or more\.$/,
  },
];

const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);

describe('peer pods: configuration checks, restarts, image job failures, turning peer pods off', () => {
  const cluster = useDevCluster({
    workers: 1,
    platform: 'AWS',
    rebootMs: 300,
    // The administrator's key, and the one a test below rotates its secret to.
    awsUsers: [
      { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
      { accessKeyId: ACCESS_KEY, secretAccessKey: `${SECRET_KEY}2` },
    ],
    // An OpenShift without the Cloud Credential Operator: peer-pods-secret is the only source, and its
    // checks are what is tested here (the cluster's credentials: peerpods-credentials.test.ts).
    cloudCredentialOperator: false,
  });
  let op: RunningOperator;

  before(async () => {
    op = await startOperator(cluster.dev, { peerPods: { blockedRecheckMs: 60_000 } });
  });
  after(async () => {
    await op?.stop();
  });

  const c = () => cluster.dev.client;
  const kc = () => c().get(KataConfigs, KC);
  const metrics = () => op.operator.manager.metrics.registry.metrics();
  const patchCm = (data: Record<string, string | null>, annotations?: Record<string, string | null>) =>
    c().patch(ConfigMaps, PEER_PODS_CM, { data, ...(annotations ? { metadata: { annotations } } : {}) }, { namespace: NS });
  const configValid = async (status: 'True' | 'False', message?: RegExp) => {
    const k = await waitFor(
      async () => {
        const cur = await kc();
        const c0 = cond(cur, 'PeerPodsConfigValid');
        return c0?.status === status && (!message || message.test(c0.message)) ? cur : undefined;
      },
      { message: `PeerPodsConfigValid ${status} ${message ?? ''}` },
    );
    return cond(k, 'PeerPodsConfigValid');
  };
  const dsHash = async () => (await c().get(DaemonSets, CAA_DAEMONSET, NS)).spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
  const assertNoSecretInStatusOrEvents = async () => {
    const dump = JSON.stringify([await kc(), await c().list(Events, { namespace: 'default' }), await c().list(Events, { namespace: NS })]);
    assert.ok(!dump.includes(SECRET_KEY) && !dump.includes(ACCESS_KEY), 'no secret value in status or events');
  };

  test('set up: a valid configuration with a provided AMI, and a KataConfig with peer pods', async () => {
    await c().create(Secrets, {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY },
    });
    await c().create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data: validData });
    await c().create(KataConfigs, { metadata: { name: KC }, spec: { enablePeerPods: true } });
    const valid = await configValid('True');
    assert.equal(valid?.reason, 'Valid');
    assert.equal(valid?.message, 'The peer pods configuration (peer-pods-cm, peer-pods-secret) is valid.');
    await waitFor(() => c().find(DaemonSets, CAA_DAEMONSET, NS), { message: 'the DaemonSet' });
    // The administrator's AMI: no image job, no image conditions.
    const k = await kc();
    assert.equal(cond(k, 'PodVMImageJobRunning'), undefined);
    assert.equal(await c().find(Jobs, PODVM_IMAGE_CREATION_JOB, NS), undefined);
    assert.ok(k.metadata.finalizers?.includes(PEERPODS_FINALIZER));
    await waitFor(async () => /^osc_peerpods_config_valid 1$/m.test(await metrics()), { message: 'metric: valid' });
  });

  test('every bad ConfigMap in the table shows in the KataConfig status, naming the key and the fix, and clears when fixed', async () => {
    const before = await c().get(DaemonSets, CAA_DAEMONSET, NS);
    for (const row of badConfigMaps) {
      await patchCm(row.data);
      const bad = await configValid('False', row.message);
      assert.equal(bad?.reason, 'InvalidConfiguration', row.name);
      await waitFor(async () => /^osc_peerpods_config_valid 0$/m.test(await metrics()), { message: 'metric: invalid' });
      const restore = Object.fromEntries(Object.keys(row.data).map((k) => [k, validData[k] ?? null]));
      await patchCm(restore);
      await configValid('True');
    }
    // An invalid configuration never restarted the cloud-api-adaptor.
    const afterTable = await c().get(DaemonSets, CAA_DAEMONSET, NS);
    assert.equal(afterTable.metadata.generation, before.metadata.generation);
    const invalid = await waitForEvents(
      c(),
      'default',
      (e) => e.regarding?.name === KC && e.reason === 'InvalidPeerPodsConfiguration',
      'a Warning event per problem',
      badConfigMaps.length - 1,
    );
    assert.ok(invalid.every((e) => e.type === 'Warning'));
  });

  test('a bad or missing Secret, or a missing ConfigMap, is reported without a secret value', async () => {
    await c().patch(Secrets, 'peer-pods-secret', { data: { AWS_SECRET_ACCESS_KEY: null } }, { namespace: NS });
    await configValid(
      'False',
      /AWS_SECRET_ACCESS_KEY is missing in Secret peer-pods-secret: it is required for aws; set it to the AWS secret access key/,
    );
    await c().patch(Secrets, 'peer-pods-secret', { stringData: { AWS_SECRET_ACCESS_KEY: `${SECRET_KEY}\n` } }, { namespace: NS });
    await configValid('False', /AWS_SECRET_ACCESS_KEY in Secret peer-pods-secret ends with a line break/);
    await assertNoSecretInStatusOrEvents();
    await c().delete(Secrets, 'peer-pods-secret', { namespace: NS });
    await configValid('False', /Secret peer-pods-secret not found in namespace openshift-sandboxed-containers-operator/);
    await c().create(Secrets, {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY },
    });
    await configValid('True');

    await c().delete(ConfigMaps, PEER_PODS_CM, { namespace: NS });
    await configValid('False', /ConfigMap peer-pods-cm not found in namespace openshift-sandboxed-containers-operator/);
    await c().create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data: validData });
    await configValid('True');
    await assertNoSecretInStatusOrEvents();
  });

  test('an edit of peer-pods-cm or peer-pods-secret restarts the adaptor; PEERPODS_LIMIT_PER_NODE edits reach the PeerPodConfig', async () => {
    const h0 = await dsHash();
    assert.match(h0 ?? '', /^[0-9a-f]{16}$/);
    await patchCm({ TAGS: 'team=sandbox,env=staging' });
    const h1 = await waitFor(async () => ((await dsHash()) !== h0 ? dsHash() : undefined), { message: 'restart on a ConfigMap edit' });
    await c().patch(Secrets, 'peer-pods-secret', { stringData: { AWS_SECRET_ACCESS_KEY: `${SECRET_KEY}2` } }, { namespace: NS });
    await waitFor(async () => (await dsHash()) !== h1, { message: 'restart on a Secret edit' });
    const daemonSet = await c().get(DaemonSets, CAA_DAEMONSET, NS);
    assert.ok(!JSON.stringify(daemonSet).includes(SECRET_KEY), 'the DaemonSet carries a digest of the Secret, not its values');
    // The one peer-pods-cm value osc writes itself: TAGS, with the cluster's tag that marks the pod VMs as its own.
    const env = (daemonSet.spec.template.spec as { containers: { env?: { name: string; value?: string }[] }[] }).containers[0]?.env;
    assert.match(env?.find((e) => e.name === 'TAGS')?.value ?? '', /^team=sandbox,env=staging,caa-cluster-uid=[0-9a-f-]{36}$/);

    const nodeCapacity = async () => (await c().get(Nodes, 'worker-0')).status?.capacity?.[PEER_POD_VM_RESOURCE];
    await waitFor(async () => (await nodeCapacity()) === '10', { message: 'capacity 10' });
    await patchCm({ PEERPODS_LIMIT_PER_NODE: '4' });
    await waitFor(async () => (await c().get(PeerPodConfigs, PEER_POD_CONFIG, NS)).spec.limit === '4', { message: 'limit 4' });
    await waitFor(async () => (await nodeCapacity()) === '4', { message: 'capacity 4' });
    // The administrator's patch wins until the ConfigMap's value changes again.
    await c().patch(PeerPodConfigs, PEER_POD_CONFIG, { spec: { limit: '6' } }, { namespace: NS });
    await waitFor(async () => (await nodeCapacity()) === '6', { message: 'capacity 6' });
    await patchCm({ TAGS: 'team=sandbox' });
    await waitFor(async () => (await dsHash()) !== h1);
    assert.equal((await c().get(PeerPodConfigs, PEER_POD_CONFIG, NS)).spec.limit, '6');
    const ppc = await c().get(PeerPodConfigs, PEER_POD_CONFIG, NS);
    await waitFor(async () => (await c().get(PeerPodConfigs, PEER_POD_CONFIG, NS)).status?.setupCompleted === true, {
      message: `PeerPodConfig status: ${JSON.stringify(ppc.status)}`,
    });
  });

  test('the pod VM image job: a failure is reported and not retried; deleting the job or editing the ConfigMap retries', async () => {
    const cloudError = 'UnauthorizedOperation: You are not authorized to perform: ec2:CreateImage';
    await patchCm({ PODVM_AMI_ID: '' }, { [FAIL_IMAGE_CREATION_ANNOTATION]: cloudError });
    const failed = await waitFor(
      async () => {
        const k = await kc();
        return cond(k, 'PodVMImageJobFailed')?.status === 'True' ? k : undefined;
      },
      { timeoutMs: 180_000, message: 'PodVMImageJobFailed' },
    );
    assert.equal(cond(failed, 'PodVMImageJobFailed')?.reason, 'ImageCreationFailed');
    assert.equal(
      cond(failed, 'PodVMImageJobFailed')?.message,
      'Job osc-podvm-image-creation failed (BackoffLimitExceeded: Job has reached the specified backoff limit); ' +
        'see oc logs -n openshift-sandboxed-containers-operator jobs/osc-podvm-image-creation and ' +
        'oc get events -n openshift-sandboxed-containers-operator --field-selector involvedObject.name=osc-podvm-image-creation; ' +
        'fix the cause, then edit peer-pods-cm or delete the job (oc delete job osc-podvm-image-creation -n openshift-sandboxed-containers-operator) to try again, or set PODVM_AMI_ID to an existing AMI',
    );
    assert.equal(cond(failed, 'PodVMImageJobRunning')?.status, 'False');
    assert.equal(cond(failed, 'PodVMImageJobCompleted')?.status, 'False');
    // The cloud's refusal is where `oc logs`/`oc describe` show it: the failed pods' termination message.
    const jobPods = (await c().list(Pods, { namespace: NS, labelSelector: `job-name=${PODVM_IMAGE_CREATION_JOB}` })).items;
    const terminated = jobPods.map(
      (p) => (p.status?.containerStatuses as { state?: { terminated?: { message?: string } } }[] | undefined)?.[0]?.state?.terminated,
    );
    assert.equal(jobPods.length, 2, 'one attempt and one retry (backoffLimit 1), by the Job controller');
    assert.ok(jobPods.every((p) => p.status?.phase === 'Failed'));
    assert.ok(
      terminated.every((t) => t?.message === cloudError),
      JSON.stringify(terminated),
    );
    await waitForEvents(
      c(),
      'default',
      (e) => e.regarding?.name === KC && e.reason === 'PodVMImageJobFailed' && e.type === 'Warning',
      'a Warning event PodVMImageJobFailed on the KataConfig',
    );
    const m = await metrics();
    assert.match(m, /^osc_podvm_image_job\{job="creation",state="failed"\} 1$/m);
    assert.match(m, /^osc_podvm_image_job_failures_total\{job="creation"\} 1$/m);

    // Not retried: other changes come and go (an annotation is not a configuration change), the job stays.
    const job = await c().get(Jobs, PODVM_IMAGE_CREATION_JOB, NS);
    await patchCm({}, { 'example.com/touched': 'yes' });
    await c().patch(Nodes, 'worker-0', { metadata: { labels: { 'example.com/touched': 'yes' } } });
    await new Promise((r) => setTimeout(r, 1500)); // a negative: give a retry loop the time to show itself
    assert.equal((await c().get(Jobs, PODVM_IMAGE_CREATION_JOB, NS)).metadata.uid, job.metadata.uid);
    assert.equal(cluster.dev.cloud.stats.failures, 2);

    // The administrator fixes the cause and deletes the job: a new one builds the image.
    await patchCm({}, { [FAIL_IMAGE_CREATION_ANNOTATION]: null });
    await c().delete(Jobs, PODVM_IMAGE_CREATION_JOB, { namespace: NS });
    const done = await waitFor(
      async () => {
        const k = await kc();
        return cond(k, 'PodVMImageJobCompleted')?.status === 'True' ? k : undefined;
      },
      { timeoutMs: 180_000, message: 'PodVMImageJobCompleted after the retry' },
    );
    assert.equal(cond(done, 'PodVMImageJobFailed')?.status, 'False');
    const ami = (await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID ?? '';
    assert.match(ami, /^ami-[0-9a-f]{17}$/);
    assert.match(cond(done, 'PodVMImageJobCompleted')?.message ?? '', new RegExp(`created the pod VM image ${ami}`));

    // Fails again; this time an edit of the ConfigMap's data retries.
    await patchCm({ PODVM_AMI_ID: '' }, { [FAIL_IMAGE_CREATION_ANNOTATION]: cloudError });
    await waitFor(async () => cond(await kc(), 'PodVMImageJobFailed')?.status === 'True', { timeoutMs: 180_000, message: 'failed again' });
    await patchCm({ ROOT_VOLUME_SIZE: '8' }, { [FAIL_IMAGE_CREATION_ANNOTATION]: null });
    await waitFor(async () => cond(await kc(), 'PodVMImageJobCompleted')?.status === 'True', {
      timeoutMs: 180_000,
      message: 'completed after the edit',
    });
    await waitFor(async () => !(await c().find(Jobs, PODVM_IMAGE_CREATION_JOB, NS)), { message: 'the finished job removed' });
  });

  test('enablePeerPods turned off on a live KataConfig: waits for kata-remote pods, then removes the peer-pod parts', async () => {
    await waitFor(async () => (await c().find(Nodes, 'worker-0'))?.metadata.labels?.['node-role.kubernetes.io/kata-oc'] === '', {
      message: 'worker-0 is a kata node',
    });
    await waitFor(() => c().find(RuntimeClasses, 'kata-remote'), { timeoutMs: 120_000, message: 'kata-remote installed' });
    await c().create(Namespaces, { metadata: { name: 'apps' } });
    await waitForDefaultServiceAccount(c(), 'apps');
    await c().create(Pods, {
      metadata: { name: 'remote', namespace: 'apps' },
      spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
    });
    const ami = (await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID ?? '';
    await c().patch(KataConfigs, KC, { spec: { enablePeerPods: false } });
    await waitForEvents(c(), 'default', (e) => e.reason === 'PeerPodsRemovalBlocked', 'blocked by the kata-remote pod');
    assert.ok(await c().find(DaemonSets, CAA_DAEMONSET, NS), 'nothing removed while a kata-remote pod runs');
    await c().delete(Pods, 'remote', { namespace: 'apps' });

    await waitFor(async () => !(await kc()).metadata.finalizers?.includes(PEERPODS_FINALIZER), { message: 'peer pods removed' });
    const k = await kc();
    assert.deepEqual(
      (k.status?.conditions ?? []).map((x) => x.type).filter((t) => t.startsWith('PeerPods') || t.startsWith('PodVMImage')),
      [],
      'the peer pods conditions are gone',
    );
    assert.equal(await c().find(DaemonSets, CAA_DAEMONSET, NS), undefined);
    assert.equal(await c().find(PeerPodConfigs, PEER_POD_CONFIG, NS), undefined);
    assert.equal((await c().get(Nodes, 'worker-0')).status?.capacity?.[PEER_POD_VM_RESOURCE], undefined);
    assert.equal((await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID, '', 'the image osc built was deleted');
    assert.equal(cluster.dev.cloud.images.has(ami), false);
    assert.deepEqual((await c().list(Jobs, { namespace: NS })).items, []);
    // kata-remote is no longer offered: its RuntimeClass goes (no pod uses it any more); kata stays.
    await waitFor(async () => !(await c().find(RuntimeClasses, 'kata-remote')), { message: 'RuntimeClass kata-remote retired' });
    assert.ok(await c().find(RuntimeClasses, 'kata'), 'the kata RuntimeClass stays');
    await waitFor(async () => JSON.stringify((await kc()).status?.runtimeClasses) === '["kata"]', {
      message: 'status.runtimeClasses is [kata]',
    });
    const m = await metrics();
    assert.match(m, /^osc_peerpods_enabled 0$/m);
    assert.match(m, /^osc_peerpods_pods 0$/m);

    // On again, and the KataConfig deleted while the new image is still being built: the build is not cut
    // short (it could leave an image nobody knows of); it finishes, and the image it made is deleted.
    const builds = cluster.dev.cloud.stats.builds;
    const imagesBefore = new Set(cluster.dev.cloud.images.keys());
    await c().patch(KataConfigs, KC, { spec: { enablePeerPods: true } });
    await waitFor(() => c().find(Jobs, PODVM_IMAGE_CREATION_JOB, NS), { message: 'building again' });
    await c().delete(KataConfigs, KC);
    await waitFor(async () => !(await c().find(KataConfigs, KC)), { timeoutMs: 120_000, message: 'KataConfig gone' });
    assert.equal(cluster.dev.cloud.stats.builds, builds + 1, 'the build in flight finished');
    assert.equal((await c().get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID, '');
    const left = [...cluster.dev.cloud.images.keys()].filter((id) => !imagesBefore.has(id));
    assert.deepEqual(left, [], 'the image it built is deleted with the KataConfig');
    assert.equal(await c().find(DaemonSets, CAA_DAEMONSET, NS), undefined);
  });
});
