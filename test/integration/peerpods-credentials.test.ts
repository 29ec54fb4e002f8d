/**
 * Peer pods' credentials from the cluster (docs/cloud-credentials.md), on the dev cluster's Cloud Credential
 * Operator and AWS account: the product documentation's AWS procedure (its Configure chapter) followed literally,
 * with no step that creates a Secret; the minted key followed through rotation and loss; a request the CCO
 * cannot satisfy; removal leaving nothing minted behind. Then a Manual-mode cluster: the condition that
 * says what to do, the documented ccoctl steps (a role and a projected token) ending in working peer pods,
 * and an administrator's peer-pods-secret (first in the order) lacking one action: refused as AWS does.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AWS_ROOT_SECRET,
  awsStsCredentialsFile,
  CCO_NAMESPACE,
  type CredentialsRequest,
  CredentialsRequests,
} from '../../src/api/cloudcredential.ts';
import { PEER_PODS_CCO_SECRET, PEER_PODS_CREDENTIALS_REQUEST } from '../../src/api/credentials-text.ts';
import { CONFIG_VALID, type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import { Infrastructures } from '../../src/api/openshift.ts';
import { SimulatedAws } from '../../src/devcluster/clouds/aws.ts';
import { type AwsCredentials, AwsError } from '../../src/devcluster/clouds/aws-account.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { SimulatedPodVMs } from '../../src/devcluster/podvms.ts';
import { ConfigMaps, DaemonSets, Events, Jobs, type Pod, Pods, RuntimeClasses, type Secret, Secrets } from '../../src/kube/resources.ts';
import { peerPodsAwsActions, peerPodsStatementEntries } from '../../src/peerpods/credentials.ts';
import { useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const LONG = { timeoutMs: 180_000 };

/** The documented peer-pods-cm.yaml (docs/peerpods.md) with the looked-up values and PODVM_AMI_ID left to the operator. */
const peerPodsCmYaml = (region: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: openshift-sandboxed-containers-operator
data:
  CLOUD_PROVIDER: "aws"
  VXLAN_PORT: "9000"
  PROXY_TIMEOUT: "5m"
  PODVM_INSTANCE_TYPE: "t3.medium"
  PODVM_INSTANCE_TYPES: "t2.small,t2.medium,t3.large"
  PODVM_AMI_ID: ""
  AWS_REGION: "${region}"
  AWS_SUBNET_ID: "subnet-0a1b2c3d4e5f67890"
  AWS_VPC_ID: "vpc-0a1b2c3d4e5f67890"
  AWS_SG_IDS: "sg-0a1b2c3d4e5f67890"
  TAGS: "key1=value1,key2=value2"
  PEERPODS_LIMIT_PER_NODE: "10"
  ROOT_VOLUME_SIZE: "6"
  DISABLECVM: "true"
`;

/** The documented KataConfig for peer pods (config/samples/example-kataconfig-peer-pods.yaml). */
const kataConfigYaml = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: example-kataconfig
spec:
  enablePeerPods: true
  logLevel: info
`;

const decode = (s: Secret | undefined, key: string) => Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');

function helpers(cluster: { readonly dev: DevCluster }) {
  const c = () => cluster.dev.client;
  const ok = async (args: string[], input?: string) => {
    const r = await cluster.dev.controlPlane.kubectl(args, { input });
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const kataConfig = () => c().find(KataConfigs, KC) as Promise<KataConfig | undefined>;
  const configValid = async () => (await kataConfig())?.status?.conditions?.find((x) => x.type === CONFIG_VALID);
  const request = () =>
    c().find(CredentialsRequests, PEER_PODS_CREDENTIALS_REQUEST, CCO_NAMESPACE) as Promise<CredentialsRequest | undefined>;
  const ccoSecret = () => c().find(Secrets, PEER_PODS_CCO_SECRET, NS);
  const amiId = async () => (await c().find(ConfigMaps, PEER_PODS_CM, NS))?.data?.PODVM_AMI_ID ?? '';
  let probes = 0;
  /**
   * A peer pod on worker-0, as a user runs one: answers its VM's id once the adaptor made it with its
   * credentials and the pod runs, then deletes the pod (and the adaptor its VM).
   */
  const podVmRuns = async () => {
    const name = `vm-probe-${++probes}`;
    await waitFor(() => c().find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS), { ...LONG, message: 'kata-remote offered' });
    await c().create(Pods, probePod(name));
    const vm = await waitFor(
      async () => {
        const p = await c().get(Pods, name, 'default');
        return p.status?.phase === 'Running' ? podVMs(cluster.dev).recorded(p.metadata.uid ?? '') : undefined;
      },
      { ...LONG, message: `the adaptor on worker-0 runs a pod VM for ${name} with its credentials` },
    );
    await c().delete(Pods, name, { namespace: 'default', gracePeriodSeconds: 0 });
    await waitFor(() => !podVMs(cluster.dev).vms.has(vm), { ...LONG, message: `the VM of ${name} terminated` });
    return vm;
  };
  /** A peer pod the cloud refuses a VM: answers the FailedCreatePodSandBox event's message, leaving the pod. */
  const podVmRefused = async (name: string) => {
    await c().create(Pods, probePod(name));
    return waitFor(
      async () =>
        (await c().list(Events, { namespace: 'default' })).items.find(
          (e) => e.reason === 'FailedCreatePodSandBox' && e.regarding?.name === name && /creating an instance/.test(e.note ?? ''),
        )?.note,
      { ...LONG, message: `FailedCreatePodSandBox for ${name}` },
    );
  };
  const configure = async () => {
    const region = await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.aws.region}']);
    await ok(['create', '-f', '-'], peerPodsCmYaml(region));
    await ok(['create', '-f', '-'], kataConfigYaml);
  };
  return { c, ok, configValid, request, ccoSecret, amiId, podVmRuns, podVmRefused, configure };
}

const probePod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: {
    runtimeClassName: KATA_REMOTE_RUNTIME_CLASS,

    containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }],
  },
});

function podVMs(dev: DevCluster): SimulatedPodVMs {
  assert.ok(dev.podVMs, 'an OpenShift dev cluster');
  return dev.podVMs;
}

/** The dev cluster's cloud on AWS, the one whose account these tests exercise. */
function awsCloud(dev: DevCluster): SimulatedAws {
  const cloud = dev.cloud;
  assert.ok(cloud instanceof SimulatedAws, 'an AWS dev cluster');
  return cloud;
}

describe('peer pods credentials minted by the Cloud Credential Operator (default mode)', () => {
  // Image jobs that take a while, so that the root credentials can be rotated while one runs.
  const cluster = useDevCluster({ workers: 1, platform: 'AWS', rebootMs: 300, podvmImageJobMs: 5000 });
  // osc lists the cluster's pod VMs over EC2's API with the minted key, every second (ec2:DescribeInstances is osc's).
  useOperator(cluster, KC, (dev) => ({ leakedVMs: { endpoint: dev.cloudAPI, intervalMs: 1000 } }));
  const h = helpers(cluster);

  test('the documented AWS configuration followed literally (no Secret created; root rotated, then the minted key revoked, mid-rollout) ends with working peer pods', async () => {
    assert.equal(await h.c().find(Secrets, 'peer-pods-secret', NS), undefined);
    await h.configure();
    // osc asks for credentials: its request, where the CCO reads them, naming the Secret in osc's namespace.
    const requested = await waitFor(h.request, { ...LONG, message: "osc's CredentialsRequest" });
    assert.deepEqual(requested.spec.secretRef, { name: PEER_PODS_CCO_SECRET, namespace: NS });
    const first = await waitFor(async () => decode(await h.ccoSecret(), 'aws_access_key_id'), { ...LONG, message: 'the minted Secret' });
    // The rollout is under way with the minted key: the image job's pod and the adaptor run with it.
    const keyOf = (creds: AwsCredentials | undefined) => (creds && 'accessKeyId' in creds ? creds.accessKeyId : undefined);
    await waitFor(
      async () => {
        const [job] = (await h.c().list(Pods, { namespace: NS, labelSelector: 'job-name=osc-podvm-image-creation' })).items.filter(
          (p) => p.status?.phase === 'Running',
        );
        return job && keyOf(await awsCloud(cluster.dev).credentialsOf(job)) === first;
      },
      { ...LONG, message: 'the image creation job running with the minted key' },
    );
    await waitFor(
      async () =>
        (await h.c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` })).items.some(
          (p) => keyOf(podVMs(cluster.dev).adaptorCredentials(p)) === first,
        ),
      { ...LONG, message: 'the adaptor started with the minted key' },
    );
    // Now the root credentials are rotated. The CCO syncs the request again but rotates nothing it
    // minted: the minted user keeps its key (as the real one does in Mint mode).
    const user = (await waitFor(async () => (await h.request())?.status?.providerStatus?.user, LONG)) ?? '';
    await cluster.dev.cco.rotateRootCredentials();
    const rootVersion = (await h.c().get(Secrets, AWS_ROOT_SECRET.name, AWS_ROOT_SECRET.namespace)).metadata.resourceVersion;
    await waitFor(async () => (await h.request())?.status?.lastSyncCloudCredsSecretResourceVersion === rootVersion, {
      ...LONG,
      message: 'the CCO synced the request with the rotated root credentials',
    });
    assert.equal(decode(await h.ccoSecret(), 'aws_access_key_id'), first, 'a root rotation rotates no minted key');
    assert.deepEqual(cluster.dev.awsAccount.keyIds(user), [first]);
    // The administrator revokes the minted key the documented way, still mid-rollout: deleting its Secret.
    // The CCO deletes the user's keys and mints a new one; the image job and the adaptor follow.
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const second = await waitFor(
      async () => {
        const k = decode(await h.ccoSecret(), 'aws_access_key_id');
        return k && k !== first ? k : undefined;
      },
      { ...LONG, message: 'a new minted key' },
    );

    const valid = await waitFor(async () => ((await h.configValid())?.status === 'True' ? await h.configValid() : undefined), {
      ...LONG,
      message: 'PeerPodsConfigValid True',
    });
    assert.match(valid?.message ?? '', /is valid/);
    await waitFor(async () => /^ami-[0-9a-f]{17}$/.test(await h.amiId()), {
      ...LONG,
      message: 'the pod VM image built with the minted key',
    });
    assert.match(await h.podVmRuns(), /^i-[0-9a-f]{17}$/);
    // Converged on the new key: every adaptor holds it, and the account keeps one minted user with one key.
    await waitFor(
      async () => {
        const pods = (await h.c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` })).items;
        return pods.length === 1 && pods.every((p) => keyOf(podVMs(cluster.dev).adaptorCredentials(p)) === second);
      },
      { ...LONG, message: 'the adaptor on the rotated key' },
    );

    // The request as the CCO answered it.
    const provisioned = await waitFor(async () => ((await h.request())?.status?.provisioned ? await h.request() : undefined), LONG);
    // The IAM user: the cluster's infrastructure name, the request's name (truncated) and a random suffix.
    const infraName = (await cluster.dev.client.get(Infrastructures, 'cluster')).status?.infrastructureName ?? '';
    assert.ok(infraName);
    assert.match(
      provisioned?.status?.providerStatus?.user ?? '',
      new RegExp(`^${infraName}-openshift-sandboxed-containers-a\\w*-[0-9a-f]{5}$`),
    );
    assert.ok(provisioned?.metadata.finalizers?.includes('cloudcredential.openshift.io/deprovision'));
    const minted = await h.ccoSecret();
    assert.equal(
      minted?.metadata.annotations?.['cloudcredential.openshift.io/credentials-request'],
      `${CCO_NAMESPACE}/${PEER_PODS_CREDENTIALS_REQUEST}`,
    );
    assert.match(decode(minted, 'credentials'), /^\[default\]\naws_access_key_id = AKIA/);
    assert.equal(provisioned?.status?.providerStatus?.user, user);
    const account = cluster.dev.awsAccount;
    assert.deepEqual(
      account.userNames().filter((u) => u.startsWith(`${infraName}-`)),
      [user],
      'one minted IAM user, none left over',
    );
    assert.deepEqual(account.keyIds(user), [second], 'the user has the rotated key only');
    // The adaptor reads the minted keys under its own names, straight from the Secret.
    const ds = await h.c().get(DaemonSets, CAA_DAEMONSET, NS);
    const env = JSON.stringify(ds.spec?.template.spec);
    assert.match(env, /"name":"AWS_ACCESS_KEY_ID","valueFrom":\{"secretKeyRef":\{"name":"cco-secret","key":"aws_access_key_id"\}\}/);
    assert.doesNotMatch(env, /peer-pods-secret/);

    // The rotated-away key is refused; the minted one may do exactly what peer pods need.
    assert.throws(
      () => account.authorize({ accessKeyId: first, secretAccessKey: 'any' }, 'ec2:RunInstances'),
      (e: unknown) => e instanceof AwsError && e.code === 'AuthFailure',
    );
    const keys = { accessKeyId: decode(minted, 'aws_access_key_id'), secretAccessKey: decode(minted, 'aws_secret_access_key') };
    account.authorize(keys, 'ec2:RunInstances');
    assert.throws(
      () => account.authorize(keys, 'ec2:DeleteVpc'),
      (e: unknown) => e instanceof AwsError && e.code === 'UnauthorizedOperation',
    );
    assert.throws(
      () => account.authorize(keys, 'iam:CreateUser'),
      (e: unknown) => e instanceof AwsError && e.code === 'AccessDenied',
    );
  });

  test('the minted Secret deleted by hand: minted again, the adaptor follows with no administrator step', async () => {
    const before = decode(await h.ccoSecret(), 'aws_access_key_id');
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const after = await waitFor(
      async () => {
        const k = decode(await h.ccoSecret(), 'aws_access_key_id');
        return k && k !== before ? k : undefined;
      },
      { ...LONG, message: 'a new minted key' },
    );
    assert.notEqual(after, before);
    await waitFor(async () => (await h.configValid())?.status === 'True', LONG);
    // The adaptor pod runs with the new key: until it is replaced, the old one is refused.
    await h.podVmRuns();
    const pods = await h.c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` });
    const pod = pods.items[0];
    assert.ok(pod);
    const creds = podVMs(cluster.dev).adaptorCredentials(pod);
    assert.equal(creds && 'accessKeyId' in creds ? creds.accessKeyId : '', after);
  });

  test('a request the CCO cannot satisfy (root credentials missing): a clear condition, then convergence', async () => {
    await h.c().delete(Secrets, AWS_ROOT_SECRET.name, { namespace: AWS_ROOT_SECRET.namespace });
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const failed = await waitFor(
      async () => {
        const v = await h.configValid();
        return v?.status === 'False' && /cannot provision/.test(v.message ?? '') ? v : undefined;
      },
      { ...LONG, message: 'PeerPodsConfigValid False naming the CCO failure' },
    );
    assert.match(
      failed.message ?? '',
      /CredentialsProvisionFailure: failed to grant creds: unable to fetch root cloud cred secret: secrets "aws-creds" not found; fix the cluster's root credentials \(Secret kube-system\/aws-creds\) or create peer-pods-secret/,
    );
    const r = await h.request();
    assert.equal(r?.status?.conditions?.find((x) => x.type === 'CredentialsProvisionFailure')?.status, 'True');
    // The administrator restores the root credentials: the CCO mints again, osc converges.
    await cluster.dev.cco.seedRootCredentials();
    await waitFor(async () => (await h.configValid())?.status === 'True', { ...LONG, message: 'PeerPodsConfigValid True again' });
    await h.podVmRuns();
    assert.equal((await h.request())?.status?.conditions?.find((x) => x.type === 'CredentialsProvisionFailure')?.status, 'False');
  });

  test('removing peer pods removes the request and everything minted for it', async () => {
    const user = (await h.request())?.status?.providerStatus?.user ?? '';
    assert.ok(cluster.dev.awsAccount.hasUser(user));
    await h.c().delete(KataConfigs, KC);
    await waitFor(async () => !(await h.request()) && !(await h.ccoSecret()), {
      ...LONG,
      message: 'the request and the minted Secret gone',
    });
    assert.equal(cluster.dev.awsAccount.hasUser(user), false, 'the minted IAM user deleted');
    await waitFor(async () => !(await h.c().find(KataConfigs, KC)), { ...LONG, message: 'the KataConfig gone' });
    // The whole life of peer pods (image built and deleted, the adaptor started, pod VMs run and
    // terminated, osc listing its VMs) used every action of the request, and the policy allows no other.
    assert.deepEqual([...(cluster.dev.awsAccount.allowed.get(user) ?? [])].sort(), peerPodsAwsActions());
  });
});

describe('peer pods credentials on a Manual-mode (STS) cluster', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'AWS', rebootMs: 300, credentialsMode: 'Manual' });
  useOperator(cluster, KC);
  const h = helpers(cluster);

  test('no Secret: the condition says run ccoctl or create peer-pods-secret; the CCO mints nothing', async () => {
    await h.configure();
    const v = await waitFor(
      async () => {
        const x = await h.configValid();
        return x?.status === 'False' && /Manual mode/.test(x.message ?? '') ? x : undefined;
      },
      { ...LONG, message: 'PeerPodsConfigValid False for Manual mode' },
    );
    assert.match(
      v.message ?? '',
      /run ccoctl aws create-iam-roles .* or create peer-pods-secret \(oc create secret generic peer-pods-secret/,
    );
    const r = await waitFor(h.request, LONG);
    assert.equal(r.status, undefined, 'the CCO leaves requests alone in Manual mode');
    assert.equal(await h.ccoSecret(), undefined);
    assert.equal(await h.c().find(DaemonSets, CAA_DAEMONSET, NS), undefined, 'no adaptor without credentials');
  });

  test('the documented ccoctl steps (a role trusting the pods, its Secret) end with working peer pods', async () => {
    // ccoctl aws create-iam-roles --credentials-requests-dir <the request> ...: a role with the request's
    // policy trusting its ServiceAccounts, and the Secret in the credentials file form, applied by the administrator.
    const r = await waitFor(h.request, LONG);
    const account = cluster.dev.awsAccount;
    const arn = account.createRole(
      'osc-dev-openshift-sandboxed-containers-aws',
      r.spec.providerSpec.statementEntries,
      (r.spec.serviceAccountNames ?? []).map((sa) => `system:serviceaccount:${NS}:${sa}`),
    );
    await h.ok(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Secret
metadata:
  name: ${PEER_PODS_CCO_SECRET}
  namespace: ${NS}
stringData:
  credentials: |
${awsStsCredentialsFile(arn)
  .trimEnd()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`,
    );
    await waitFor(async () => (await h.configValid())?.status === 'True', { ...LONG, message: 'PeerPodsConfigValid True with the role' });
    await waitFor(async () => /^ami-[0-9a-f]{17}$/.test(await h.amiId()), { ...LONG, message: 'the image built with the role' });
    assert.match(await h.podVmRuns(), /^i-/);
    const spec = JSON.stringify((await h.c().get(DaemonSets, CAA_DAEMONSET, NS)).spec?.template.spec);
    assert.match(spec, /"name":"AWS_ROLE_ARN","value":"arn:aws:iam::123456789012:role\/osc-dev-openshift-sandboxed-containers-aws"/);
    assert.match(spec, /"serviceAccountToken":\{"audience":"openshift"/);
    // A role that does not trust the pods' ServiceAccount is refused: the simulator checks the token's subject.
    account.deleteRole(arn);
    assert.match(
      await h.podVmRefused('untrusted'),
      /creating an instance : .*operation error STS: AssumeRoleWithWebIdentity, https response error StatusCode: 403, .*api error AccessDenied: Not authorized to perform sts:AssumeRoleWithWebIdentity$/,
    );
    // ccoctl run again: the same role, so that the removal's image deletion can run.
    account.createRole(
      'osc-dev-openshift-sandboxed-containers-aws',
      r.spec.providerSpec.statementEntries,
      (r.spec.serviceAccountNames ?? []).map((sa) => `system:serviceaccount:${NS}:${sa}`),
    );
    // Trusted again, the kubelet's next try runs the refused pod.
    await waitFor(async () => (await h.c().get(Pods, 'untrusted', 'default')).status?.phase === 'Running', {
      ...LONG,
      message: 'the refused pod runs once the role trusts the adaptor again',
    });
    await h.c().delete(Pods, 'untrusted', { namespace: 'default', gracePeriodSeconds: 0 });
  });

  test('removal deletes the request but keeps the Secret the administrator applied', async () => {
    await h.c().delete(KataConfigs, KC);
    await waitFor(async () => !(await h.request()), { ...LONG, message: 'the request gone' });
    assert.ok(await h.ccoSecret(), "the administrator's ccoctl Secret stays");
    await waitFor(async () => !(await h.c().find(KataConfigs, KC)), { ...LONG, message: 'the KataConfig gone' });
    assert.equal(await h.amiId(), '', 'the image osc built deleted with the role');
  });

  test("an administrator's peer-pods-secret comes first; an action it lacks is refused as AWS refuses it", async () => {
    // The administrator drops the ccoctl Secret and supplies an IAM user's keys instead: a user with the
    // policy osc asks for, less one action peer pods need.
    await h.c().delete(Secrets, PEER_PODS_CCO_SECRET, { namespace: NS });
    const policy = peerPodsStatementEntries().map((e) => ({ ...e, action: e.action.filter((a) => a !== 'ec2:RegisterImage') }));
    const key = cluster.dev.awsAccount.createUser('narrow', policy);
    await h.c().create(Secrets, {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: key.accessKeyId, AWS_SECRET_ACCESS_KEY: key.secretAccessKey },
    });
    await h.ok(['create', '-f', '-'], kataConfigYaml);
    const failed = await waitFor(
      async () => {
        const k = await h.c().find(KataConfigs, KC);
        const f = k?.status?.conditions?.find((x) => x.type === 'PodVMImageJobFailed');
        return f?.status === 'True' ? f : undefined;
      },
      { ...LONG, message: 'PodVMImageJobFailed' },
    );
    assert.equal(failed.reason, 'ImageCreationFailed');
    assert.equal(await h.request(), undefined, 'no request: the administrator supplied the credentials');
    const pods = (await h.c().list(Pods, { namespace: NS, labelSelector: 'job-name=osc-podvm-image-creation' })).items;
    const messages = pods.map(
      (p) =>
        (p.status?.containerStatuses as { state?: { terminated?: { message?: string } } }[] | undefined)?.[0]?.state?.terminated?.message,
    );
    assert.ok(messages.length > 0);
    for (const m of messages)
      assert.match(
        m ?? '',
        /^An error occurred \(UnauthorizedOperation\) when calling the RegisterImage operation: You are not authorized to perform this operation\. User: arn:aws:iam::123456789012:user\/narrow is not authorized to perform: ec2:RegisterImage/,
      );
    // Granted the action, the administrator retries (the documented job deletion): the image is built.
    cluster.dev.awsAccount.putUserPolicy('narrow', peerPodsStatementEntries());
    await h.c().delete(Jobs, 'osc-podvm-image-creation', { namespace: NS, propagationPolicy: 'Background' });
    await waitFor(async () => /^ami-[0-9a-f]{17}$/.test(await h.amiId()), { ...LONG, message: 'the image built once allowed' });
  });
});
