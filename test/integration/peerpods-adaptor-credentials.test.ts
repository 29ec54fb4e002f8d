/**
 * The cloud-api-adaptor's own calls on the dev cluster's AWS account, with the credentials its pod was
 * started with: a key AWS does not know makes the adaptor exit at start-up (CrashLoopBackOff, the AWS error
 * as its last exit) and a peer pod then finds no adaptor on its node; a key that may not run instances
 * leaves the peer pod in ContainerCreating with a FailedCreatePodSandBox event carrying AWS's refusal; the
 * right key runs it. A termination the cloud refuses leaves the pod VM behind, as the real adaptor does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  OPERATOR_NAMESPACE,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../src/api/names.ts';
import type { SimulatedPodVMs } from '../../src/devcluster/podvms.ts';
import { ConfigMaps, DaemonSets, Events, Namespaces, Nodes, type Pod, Pods, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import { peerPodsStatementEntries } from '../../src/peerpods/credentials.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const APP = 'adaptor-creds';
const LONG = { timeoutMs: 180_000 };

interface ContainerStatus {
  ready?: boolean;
  state?: { waiting?: { reason?: string; message?: string }; running?: unknown };
  lastState?: { terminated?: { message?: string } };
}
const statusOf = (p: Pod | undefined) => (p?.status?.containerStatuses as ContainerStatus[] | undefined)?.[0];

describe('the adaptor calls AWS with the credentials its pod holds', () => {
  const cluster = useDevCluster({ workers: 1, platform: 'AWS', rebootMs: 300 });
  let running: RunningOperator;
  const c = () => cluster.dev.client;
  const vms = (): SimulatedPodVMs => {
    const v = cluster.dev.podVMs;
    if (!v) throw new Error('the dev cluster has no pod VMs');
    return v;
  };
  const adaptorPods = async () => (await c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` })).items;
  const sandboxEvents = async (name: string) =>
    (await c().list(Events, { namespace: APP })).items.filter((e) => e.reason === 'FailedCreatePodSandBox' && e.regarding?.name === name);
  const setKey = (key: { accessKeyId: string; secretAccessKey: string }) =>
    c().patch(
      Secrets,
      PEER_PODS_SECRET,
      { stringData: { AWS_ACCESS_KEY_ID: key.accessKeyId, AWS_SECRET_ACCESS_KEY: key.secretAccessKey } },
      { namespace: NS },
    );

  before(async () => {
    running = await startOperator(cluster.dev);
    // A key AWS has never issued.
    await c().create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: PEER_PODS_SECRET, namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: 'AKIAOSCUNKNOWNKEY001', AWS_SECRET_ACCESS_KEY: 'osc/NotAKeyAwsIssued+0123456789abcdefgh' },
    });
    await c().create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: PEER_PODS_CM, namespace: NS },
      data: {
        CLOUD_PROVIDER: 'aws',
        PODVM_AMI_ID: 'ami-0123456789abcdef0',
        AWS_REGION: 'us-east-2',
        AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
        AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
        AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
      },
    });
    await c().create(KataConfigs, {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig' },
      spec: { enablePeerPods: true },
    } as KataConfig);
    await waitFor(async () => (await c().find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS)) !== undefined, {
      ...LONG,
      message: 'kata-remote installed',
    });
    await waitFor(async () => (await c().list(Nodes)).items.some((n) => n.status?.allocatable?.[PEER_POD_VM_RESOURCE]), {
      ...LONG,
      message: 'the worker advertises kata.peerpods.io/vm',
    });
    await c().create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP } });
    await waitForDefaultServiceAccount(c(), APP);
  });
  after(() => running?.stop());

  test('an unknown key: the adaptor exits at start-up with AWS error, and a peer pod gets no sandbox', async () => {
    const crashed = await waitFor(
      async () => {
        const [p] = await adaptorPods();
        const s = statusOf(p);
        return s?.state?.waiting?.reason === 'CrashLoopBackOff' ? s : undefined;
      },
      { ...LONG, message: 'the adaptor in CrashLoopBackOff' },
    );
    assert.equal(crashed.ready, false);
    assert.match(
      crashed.lastState?.terminated?.message ?? '',
      /^cloud-api-adaptor: operation error EC2: DescribeImages, https response error StatusCode: 401, RequestID: [0-9a-f-]{36}, api error AuthFailure: AWS was not able to validate the provided access credentials$/,
    );
    assert.equal((await c().get(DaemonSets, CAA_DAEMONSET, NS)).status?.numberReady ?? 0, 0);

    await c().create(Pods, pod('hello'));
    const [event] = await waitFor(
      async () => {
        const ev = await sandboxEvents('hello');
        return ev.length ? ev : undefined;
      },
      { ...LONG, message: 'FailedCreatePodSandBox' },
    );
    assert.equal(event?.type, 'Warning');
    assert.equal(event?.reportingController, 'kubelet');
    assert.match(
      event?.note ?? '',
      /^Failed to create pod sandbox: rpc error: code = Unknown desc = CreateContainer failed: remote hypervisor call failed: dial unix \/run\/peerpod\/hypervisor.sock: connect: no such file or directory$/,
    );
    const p = await c().get(Pods, 'hello', APP);
    assert.equal(p.status?.phase, 'Pending');
    assert.equal(statusOf(p)?.state?.waiting?.reason, 'ContainerCreating');
    assert.equal(vms().recorded(p.metadata.uid ?? ''), undefined, 'no VM');
  });

  test('a key that may not run instances: the pod stays in ContainerCreating with the refusal; granted, it runs', async () => {
    // The administrator's IAM user has the policy osc asks for, less ec2:RunInstances.
    const policy = peerPodsStatementEntries().map((e) => ({ ...e, action: e.action.filter((a) => a !== 'ec2:RunInstances') }));
    const key = cluster.dev.awsAccount.createUser('no-run', policy);
    await setKey(key);
    // osc rolls the adaptor for the new Secret; the new one starts (it may describe images and types).
    await waitFor(
      async () => {
        const pods = await adaptorPods();
        return pods.length === 1 && pods[0] && statusOf(pods[0])?.ready === true && vms().adaptorCredentials(pods[0]);
      },
      { ...LONG, message: 'the adaptor running with the new key' },
    );
    const refused = await waitFor(async () => (await sandboxEvents('hello')).find((e) => /UnauthorizedOperation/.test(e.note ?? '')), {
      ...LONG,
      message: "FailedCreatePodSandBox with AWS's refusal",
    });
    const p = await c().get(Pods, 'hello', APP);
    assert.match(
      refused.note ?? '',
      /^Failed to create pod sandbox: rpc error: code = Unknown desc = CreateContainer failed: remote hypervisor call failed: rpc error: code = Unknown desc = creating an instance : creating instance podvm-hello-[0-9a-f]{8} \(<nil>\): operation error EC2: RunInstances, https response error StatusCode: 403, RequestID: [0-9a-f-]{36}, api error UnauthorizedOperation: You are not authorized to perform this operation\. User: arn:aws:iam::123456789012:user\/no-run is not authorized to perform: ec2:RunInstances/,
    );
    assert.equal(p.status?.phase, 'Pending', 'not running without a VM');
    assert.equal(statusOf(p)?.state?.waiting?.reason, 'ContainerCreating');
    assert.ok(vms().stats.refusedCreations >= 1);

    // Granted the action: the kubelet's next try gets a VM, and the pod runs.
    cluster.dev.awsAccount.putUserPolicy('no-run', peerPodsStatementEntries());
    const ran = await waitFor(
      async () => {
        const x = await c().get(Pods, 'hello', APP);
        return x.status?.phase === 'Running' ? x : undefined;
      },
      { ...LONG, message: 'the pod Running once allowed' },
    );
    const vm = vms().recorded(ran.metadata.uid ?? '');
    // Named for its pod as the adaptor names it (no tag names the pod), and made for this one.
    assert.ok(vm && vms().podOf(vm) === ran.metadata.uid, 'its VM was made for the pod');
    assert.match(vms().vms.get(vm)?.name ?? '', /^podvm-hello-[0-9a-f]{8}$/);
  });

  test('a termination the cloud refuses leaves the VM behind; allowed, the adaptor deletes the next one', async () => {
    const kept = await c().get(Pods, 'hello', APP);
    const vm = vms().recorded(kept.metadata.uid ?? '') ?? '';
    cluster.dev.awsAccount.putUserPolicy(
      'no-run',
      peerPodsStatementEntries().map((e) => ({ ...e, action: e.action.filter((a) => a !== 'ec2:TerminateInstances') })),
    );
    const before = vms().stats.refusedTerminations;
    await c().delete(Pods, 'hello', { namespace: APP, gracePeriodSeconds: 0 });
    await waitFor(async () => !(await c().find(Pods, 'hello', APP)), { ...LONG, message: 'the pod gone' });
    await waitFor(() => vms().stats.refusedTerminations === before + 1, { ...LONG, message: 'the termination refused' });
    assert.ok(vms().vms.has(vm), 'the VM is left running');

    cluster.dev.awsAccount.putUserPolicy('no-run', peerPodsStatementEntries());
    await c().create(Pods, pod('again'));
    const again = await waitFor(
      async () => {
        const x = await c().get(Pods, 'again', APP);
        return x.status?.phase === 'Running' ? x : undefined;
      },
      { ...LONG, message: 'the second pod Running' },
    );
    const second = vms().recorded(again.metadata.uid ?? '') ?? '';
    await c().delete(Pods, 'again', { namespace: APP, gracePeriodSeconds: 0 });
    await waitFor(() => !vms().vms.has(second), { ...LONG, message: 'its VM terminated by the adaptor' });
  });
});

function pod(name: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: APP },
    spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
  };
}
