/**
 * The product documentation's peer pods procedure on AWS (docs/peerpods.md): configure, deploy a workload, update, uninstall, replayed with a real kubectl against the dev cluster
 * (platform AWS, two workers, the simulated cloud building and deleting pod VM images).
 *
 * One deviation from the text: the first KataConfig is given `enablePeerPods: true`, as the re-created one is;
 * the documentation's first example omits it although its text says it installs kata-remote.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type KataConfig, KataConfigs, messages } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  EXTENSION_MACHINE_CONFIG,
  KATA_NODE_ROLE_LABEL,
  KATA_POOL,
  OPERATOR_NAMESPACE,
  PEER_POD_CONFIG,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PODVM_IMAGE_CREATION_JOB,
  PODVM_IMAGE_DELETION_JOB,
} from '../../src/api/names.ts';
import { MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { PeerPodConfigs } from '../../src/api/peerpodconfig.ts';
import { VALIDATED_SCC_ANNOTATION, VALIDATED_SCC_SUBJECT_ANNOTATION } from '../../src/api/scc.ts';
import { IMAGE_ID_ANNOTATION, PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import { ConfigMaps, DaemonSets, Events, Jobs, type Node, Nodes, type Pod, Pods, RuntimeClasses } from '../../src/kube/resources.ts';
import { defaultPolicy, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';
import { inOrder, type StatusView, useDevCluster, useOperator } from '../support/operator.ts';
import { waitFor, waitForEvents } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const APP_NS = 'peerpods-demo';
const ACCESS_KEY = 'AKIAOSCTESTKEY000001';
const SECRET_KEY = 'osc/TestSecretAccessKey+DoNotLeak0123456';

/** The documented KataConfig for peer pods (config/samples/example-kataconfig-peer-pods.yaml). */
const kataConfigYaml = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: example-kataconfig
spec:
  enablePeerPods: true
  logLevel: info
#  kataConfigPoolSelector:
#    matchLabels:
#      <label_key>: '<label_value>'
`;

/** The documented peer-pods-cm.yaml, with the values the procedure looks up filled in and PODVM_AMI_ID left to the operator. */
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
  AWS_SG_IDS: "sg-0a1b2c3d4e5f67890,sg-0fedcba9876543210"
  TAGS: "key1=value1,key2=value2"
  PEERPODS_LIMIT_PER_NODE: "10"
  ROOT_VOLUME_SIZE: "6"
  DISABLECVM: "true"
`;

const podYaml = (name: string, opts: { annotations?: Record<string, string>; runtimeClass?: string | null; resources?: string } = {}) => {
  const ann = Object.entries(opts.annotations ?? {});
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    `  namespace: ${APP_NS}`,
    ...(ann.length ? ['  annotations:', ...ann.map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)] : []),
    'spec:',
    ...(opts.runtimeClass === null ? [] : [`  runtimeClassName: ${opts.runtimeClass ?? 'kata-remote'}`]),
    '  containers:',
    '  - name: example-container',
    '    image: registry.access.redhat.com/ubi9/ubi:9.3',
    '    command: ["sleep", "36000"]',
    ...(opts.resources ? [`    resources:\n${opts.resources}`] : []),
    '    securityContext:',
    '      privileged: false',
    '      seccompProfile:',
    '        type: RuntimeDefault',
    '',
  ].join('\n');
};

const eq = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const onePair = (a: string[] | undefined, b: string[] | undefined) =>
  a?.length === 1 && b?.length === 1 && eq([...a, ...b].sort(), ['worker-0', 'worker-1']);
const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);

describe('the documented peer pods procedure on AWS, with kubectl', () => {
  const cluster = useDevCluster({
    workers: 2,
    platform: 'AWS',
    rebootMs: 300,
    awsUsers: [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }],
  });
  const running = useOperator(cluster, KC);
  let firstAmi = '';

  const kubectl = async (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });
  const ok = async (args: string[], input?: string) => {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r;
  };
  const c = () => cluster.dev.client;
  const settled = (v: StatusView | undefined) => v?.inProgress?.status === 'False' && v.inProgress.reason === '';
  const capacity = (n: Node | undefined) => n?.status?.capacity?.[PEER_POD_VM_RESOURCE];
  const capacities = async () =>
    (await c().list(Nodes)).items.filter((n) => capacity(n) !== undefined).map((n) => [n.metadata.name, capacity(n)]);
  const amiId = async () => (await ok(['get', 'configmap', '-n', NS, PEER_PODS_CM, '-o', 'jsonpath={.data.PODVM_AMI_ID}'])).stdout;
  const nothingLeaks = async () => {
    const dump = [
      JSON.stringify(await c().list(KataConfigs)),
      JSON.stringify(await c().list(DaemonSets, { namespace: NS })),
      JSON.stringify(await c().list(Jobs, { namespace: NS })),
      JSON.stringify(await c().list(Events, { namespace: NS })),
      JSON.stringify(await c().list(Events, { namespace: 'default' })),
      JSON.stringify(await c().list(PeerPodConfigs, { namespace: NS })),
    ].join('\n');
    assert.ok(!dump.includes(SECRET_KEY) && !dump.includes(ACCESS_KEY), 'a secret value leaked into status, events or objects');
    assert.ok(!dump.includes(Buffer.from(SECRET_KEY).toString('base64')), 'a secret value leaked (base64)');
  };

  test('configure: the region from the cluster, peer-pods-secret and peer-pods-cm.yaml', async () => {
    const region = (await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.aws.region}'])).stdout;
    assert.equal(region, 'us-east-2');
    await ok([
      'create',
      'secret',
      'generic',
      'peer-pods-secret',
      '-n',
      NS,
      '--from-literal',
      `AWS_ACCESS_KEY_ID=${ACCESS_KEY}`,
      '--from-literal',
      `AWS_SECRET_ACCESS_KEY=${SECRET_KEY}`,
    ]);
    const created = await ok(['create', '-f', '-'], peerPodsCmYaml(region));
    assert.match(created.stdout, /configmap\/peer-pods-cm created/);
  });

  test('deploy: the KataConfig installs kata-remote: documented transitions, the DaemonSet, the runtime classes', async () => {
    const created = await ok(['create', '-f', '-'], kataConfigYaml);
    assert.match(created.stdout, /kataconfig.kataconfiguration.openshift.io\/example-kataconfig created/);
    await waitFor(() => settled(running.recorder.seen.at(-1)) && running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2, {
      timeoutMs: 120_000,
      message: 'kata-remote installed on both workers',
    });
    const documented: ((s: StatusView) => boolean)[] = [
      (s) =>
        eq(s.inProgress, { status: 'True', reason: 'Installing', message: messages.installing('kata-remote') }) &&
        eq(s.kataNodes, { nodeCount: 0, readyNodeCount: 0 }),
      (s) => eq(s.kataNodes, { nodeCount: 2, readyNodeCount: 0, waitingToInstall: ['worker-0', 'worker-1'] }),
      (s) => s.kataNodes?.readyNodeCount === 0 && onePair(s.kataNodes.installing, s.kataNodes.waitingToInstall),
      (s) => s.kataNodes?.readyNodeCount === 1 && onePair(s.kataNodes.installed, s.kataNodes.installing),
      (s) =>
        eq(s.inProgress, { status: 'False', reason: '', message: '' }) &&
        eq(s.kataNodes, { installed: ['worker-0', 'worker-1'], nodeCount: 2, readyNodeCount: 2 }) &&
        eq(s.runtimeClasses, ['kata', 'kata-remote']),
    ];
    const order = inOrder(running.recorder.seen, documented);
    assert.ok(order.ok, `step ${order.matched + 1} not seen; recorded:\n${running.recorder.seen.map((s) => JSON.stringify(s)).join('\n')}`);
    for (const s of running.recorder.seen) {
      if (s.inProgress?.message) assert.doesNotMatch(s.inProgress.message, /\bkata\b(?!-remote)/, 'messages say kata-remote');
    }

    // watch "oc describe kataconfig | sed -n /^Status:/,/^Events/p"
    const described = (await ok(['describe', 'kataconfig'])).stdout;
    const status = described.slice(described.indexOf('\nStatus:'), described.indexOf('\nEvents:'));
    assert.match(status, /Kata Nodes:\s+Installed:\s+worker-0\s+worker-1\s+Node Count:\s+2\s+Ready Node Count:\s+2/);
    assert.match(status, /Reason:\s*\n\s+Status:\s+False\s+Type:\s+InProgress/);
    assert.match(status, /Reason:\s+Valid\s+Status:\s+True\s+Type:\s+PeerPodsConfigValid/);
    // The documented example ConfigMap's default type is not in its own list: said, but not an error.
    assert.match(status, /PODVM_INSTANCE_TYPE t3.medium is not in PODVM_INSTANCE_TYPES/);

    // oc get -n openshift-sandboxed-containers-operator ds/osc-caa-ds
    await waitFor(async () => (await c().get(DaemonSets, CAA_DAEMONSET, NS)).status?.numberReady === 2, { message: 'the CAA on both' });
    const ds = await ok(['get', '-n', NS, `ds/${CAA_DAEMONSET}`]);
    const [header, row] = ds.stdout.trim().split('\n');
    assert.match(header ?? '', /^NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+NODE SELECTOR\s+AGE$/);
    assert.match(row ?? '', /^osc-caa-ds\s+2\s+2\s+2\s+2\s+2\s+node-role.kubernetes.io\/kata-oc=\s+\S+$/);
    // The DaemonSet controller made one pod per kata node, and they run there.
    const caaPods = (await c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` })).items;
    assert.deepEqual(caaPods.map((p) => `${p.spec?.nodeName} ${p.status?.phase}`).sort(), ['worker-0 Running', 'worker-1 Running']);

    // oc get runtimeclass
    const rcs = await ok(['get', 'runtimeclass']);
    // "You can also see the default kata runtime class in addition to kata-remote."
    assert.match(rcs.stdout, /^NAME\s+HANDLER\s+AGE\s*\nkata\s+kata\s+\S+\s*\nkata-remote\s+kata-remote\s+\S+/);
    const rc = await c().get(RuntimeClasses, 'kata-remote');
    assert.deepEqual(rc.overhead?.podFixed, { memory: '120Mi', cpu: '250m' });
    assert.deepEqual(rc.scheduling?.nodeSelector, { [KATA_NODE_ROLE_LABEL]: '' });

    // The adaptor's configuration comes from the ConfigMap and the Secret by reference, never by value.
    const dsObj = await c().get(DaemonSets, CAA_DAEMONSET, NS);
    const pod = dsObj.spec.template.spec as {
      nodeSelector?: Record<string, string>;
      containers: { envFrom?: unknown[]; image?: string }[];
    };
    assert.deepEqual(pod.nodeSelector, { [KATA_NODE_ROLE_LABEL]: '' });
    assert.deepEqual(pod.containers[0]?.envFrom, [{ secretRef: { name: 'peer-pods-secret' } }, { configMapRef: { name: 'peer-pods-cm' } }]);
    assert.match(pod.containers[0]?.image ?? '', /osc-cloud-api-adaptor-rhel9/);
    await nothingLeaks();
  });

  test('the peer pod VM limit per node, and the documented patch', async () => {
    const limit = await ok(['get', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '-o', 'jsonpath={.spec.limit}{"\\n"}']);
    assert.equal(limit.stdout, '10\n');
    await waitFor(
      async () =>
        eq(await capacities(), [
          ['worker-0', '10'],
          ['worker-1', '10'],
        ]),
      { message: 'kata.peerpods.io/vm = 10' },
    );
    const node = await ok(['get', 'node', 'worker-0', '-o', 'jsonpath={.status.capacity.kata\\.peerpods\\.io/vm}']);
    assert.equal(node.stdout, '10');

    const patched = await ok([
      'patch',
      'peerpodconfig',
      PEER_POD_CONFIG,
      '-n',
      NS,
      '--type',
      'merge',
      '--patch',
      '{"spec":{"limit":"15"}}',
    ]);
    assert.match(patched.stdout, /peerpodconfig.confidentialcontainers.org\/peerpodconfig-openshift patched/);
    await waitFor(
      async () =>
        eq(await capacities(), [
          ['worker-0', '15'],
          ['worker-1', '15'],
        ]),
      { message: 'kata.peerpods.io/vm = 15' },
    );
    const allocatable = (await c().get(Nodes, 'worker-1')).status?.allocatable?.[PEER_POD_VM_RESOURCE];
    assert.equal(allocatable, '15');

    const bad = await kubectl([
      'patch',
      'peerpodconfig',
      PEER_POD_CONFIG,
      '-n',
      NS,
      '--type',
      'merge',
      '--patch',
      '{"spec":{"limit":"many"}}',
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(
      bad.stderr,
      /spec\.limit: Invalid value: "object": limit is "many": it must be a whole number of peer pod VMs per node, 1 or more/,
    );
    // A number works as well as a string.
    await ok(['patch', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '--type', 'merge', '--patch', '{"spec":{"limit":12}}']);
    await waitFor(
      async () =>
        eq(await capacities(), [
          ['worker-0', '12'],
          ['worker-1', '12'],
        ]),
      { message: 'kata.peerpods.io/vm = 12' },
    );
    const metrics = await running.op.operator.manager.metrics.registry.metrics();
    assert.match(metrics, /^osc_peerpods_vm_limit 12$/m);
  });

  test('the pod VM image is built and PODVM_AMI_ID filled in', async () => {
    await waitFor(async () => /^ami-[0-9a-f]{17}$/.test(await amiId()), { message: 'PODVM_AMI_ID filled in' });
    const cm = await ok(['get', 'configmap', PEER_PODS_CM, '-n', NS, '-o', 'yaml']);
    const m = /PODVM_AMI_ID: (ami-[0-9a-f]{17})/.exec(cm.stdout);
    assert.ok(m, cm.stdout);
    firstAmi = m[1] as string;
    assert.ok(cluster.dev.cloud.images.has(firstAmi), 'the image exists in the cloud');
    await waitFor(() => cond(running.recorder.current, 'PodVMImageJobCompleted')?.status === 'True', { message: 'Completed condition' });
    const kc = running.recorder.current;
    assert.match(cond(kc, 'PodVMImageJobCompleted')?.message ?? '', new RegExp(firstAmi));
    assert.equal(cond(kc, 'PodVMImageJobRunning')?.status, 'False');
    assert.equal(cond(kc, 'PodVMImageJobFailed')?.status, 'False');

    // Troubleshooting: the job's events.
    const events = await ok(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${PODVM_IMAGE_CREATION_JOB}`]);
    // The Job controller ran a pod for it (osc removes the finished job, and its pod with it), which
    // completed once the cloud had done its work.
    assert.match(events.stdout, /SuccessfulCreate\s+job\/osc-podvm-image-creation\s+Created pod: osc-podvm-image-creation-\S+/);
    assert.match(events.stdout, /Completed\s+job\/osc-podvm-image-creation\s+Job completed/);
    await waitForEvents(c(), 'default', (e) => e.regarding?.name === KC && e.reason === 'PodVMImageCreated', 'an event on the KataConfig');
    // The adaptor was restarted with the image (its pod template follows the ConfigMap).
    await waitFor(async () => {
      const ds = await c().get(DaemonSets, CAA_DAEMONSET, NS);
      const cmObj = await c().get(ConfigMaps, PEER_PODS_CM, NS);
      return ds.metadata.generation !== undefined && ds.metadata.generation > 1 && cmObj.data?.PODVM_AMI_ID === firstAmi;
    });
  });

  test('workload pods are mutated at admission; bad pods are refused; others untouched', async () => {
    await ok(['create', 'namespace', APP_NS]);
    await ok(['wait', '--for=create', 'serviceaccount/default', '-n', APP_NS, '--timeout=60s']);
    // With resources: the pod VM is sized from them and takes one kata.peerpods.io/vm instead.
    const plain = await ok(
      ['create', '-f', '-'],
      podYaml('sized-pod', { resources: '      requests:\n        cpu: "1"\n        memory: 2Gi\n      limits:\n        memory: 2Gi' }),
    );
    assert.match(
      plain.stderr,
      /Warning: no Kata Agent policy \(io.katacontainers.config.agent.policy\): oc exec is allowed; deny ExecProcessRequest in production/,
    );
    const sized = await c().get(Pods, 'sized-pod', APP_NS);
    assert.equal(sized.metadata.annotations?.['io.katacontainers.config.hypervisor.default_vcpus'], '1');
    assert.equal(sized.metadata.annotations?.['io.katacontainers.config.hypervisor.default_memory'], '2048');
    assert.equal(sized.metadata.annotations?.['io.katacontainers.config.hypervisor.machine_type'], 't2.small');
    assert.deepEqual(sized.spec?.containers[0]?.resources, {
      limits: { [PEER_POD_VM_RESOURCE]: '1' },
      requests: { [PEER_POD_VM_RESOURCE]: '1' },
    });
    assert.deepEqual((sized.spec as { overhead?: unknown }).overhead, { cpu: '250m', memory: '120Mi' }, 'RuntimeClass overhead');

    // With the recommended policy there is no warning.
    const withPolicy = await ok(
      ['create', '-f', '-'],
      podYaml('my-pod', { annotations: { 'io.katacontainers.config.agent.policy': encodePolicy(hardenedPolicy()) } }),
    );
    assert.doesNotMatch(withPolicy.stderr, /Warning/);
    const permissive = await ok(
      ['create', '-f', '-'],
      podYaml('permissive-pod', {
        annotations: {
          'io.katacontainers.config.agent.policy': encodePolicy(defaultPolicy()),
        },
      }),
    );
    assert.match(permissive.stderr, /Warning: the Kata Agent policy allows oc exec \(ExecProcessRequest\); deny it in production/);

    // An instance type from the list; a custom image passes through.
    await ok(
      ['create', '-f', '-'],
      podYaml('typed-pod', {
        annotations: {
          'io.katacontainers.config.hypervisor.machine_type': 't3.large',
          'io.katacontainers.config.hypervisor.image': 'ami-0fedcba9876543210',
        },
      }),
    );
    const typed = await c().get(Pods, 'typed-pod', APP_NS);
    assert.equal(typed.metadata.annotations?.['io.katacontainers.config.hypervisor.machine_type'], 't3.large');
    assert.equal(typed.metadata.annotations?.['io.katacontainers.config.hypervisor.image'], 'ami-0fedcba9876543210');

    // Bad pods are refused, naming what is allowed.
    const bad: [string, string, RegExp][] = [
      [
        'unlisted-type',
        podYaml('unlisted-type', { annotations: { 'io.katacontainers.config.hypervisor.machine_type': 'm5.xlarge' } }),
        /instance type "m5.xlarge" \(annotation io.katacontainers.config.hypervisor.machine_type\) is not allowed: the allowed types are t2.small, t2.medium, t3.large, t3.medium/,
      ],
      [
        'too-big',
        podYaml('too-big', { resources: '      limits:\n        cpu: "16"\n        memory: 64Gi' }),
        /the pod needs 16 vCPUs and 65536 MiB of memory, more than any allowed instance type offers: t2.small \(1 vCPU, 2048 MiB\)/,
      ],
      [
        'plain-rego-policy',
        podYaml('plain-rego-policy', { annotations: { 'io.katacontainers.config.agent.policy': 'package agent_policy' } }),
        /the policy annotation holds plain Rego, not base64; set it to the output of base64 -w0 policy.rego/,
      ],
      [
        'no-sandbox-policy',
        podYaml('no-sandbox-policy', {
          annotations: {
            'io.katacontainers.config.agent.policy': encodePolicy('package agent_policy\n\ndefault ExecProcessRequest := true\n'),
          },
        }),
        /the Kata Agent cannot use this policy, so the pod would never start: CreateSandboxRequest is not defined and no rule allows it/,
      ],
      [
        'bad-vcpus',
        podYaml('bad-vcpus', { annotations: { 'io.katacontainers.config.hypervisor.default_vcpus': '500m' } }),
        /annotation io.katacontainers.config.hypervisor.default_vcpus is "500m": it must be a whole number of vCPUs, 1 or more \(write "1"\)/,
      ],
    ];
    for (const [name, yaml, message] of bad) {
      const r = await kubectl(['create', '-f', '-'], yaml);
      assert.notEqual(r.code, 0, `${name} should be refused`);
      assert.match(r.stderr, /admission webhook "mpod.peerpods.kataconfiguration.openshift.io" denied the request/);
      assert.match(r.stderr, message, name);
      assert.equal(await c().find(Pods, name, APP_NS), undefined);
    }

    // A pod without kata-remote never reaches the webhook and keeps its resources.
    await ok(['create', '-f', '-'], podYaml('runc-pod', { runtimeClass: null, resources: '      requests:\n        cpu: 100m' }));
    const runc = await c().get(Pods, 'runc-pod', APP_NS);
    assert.deepEqual(runc.spec?.containers[0]?.resources, { requests: { cpu: '100m' } });
    // Only OpenShift's SCC admission writes on it (which SCC admitted it), as on a real cluster.
    const sccAdmissionWrites = new Set([VALIDATED_SCC_ANNOTATION, VALIDATED_SCC_SUBJECT_ANNOTATION]);
    assert.deepEqual(
      Object.keys(runc.metadata.annotations ?? {}).filter((k) => !sccAdmissionWrites.has(k)),
      [],
    );

    await waitFor(async () => /^osc_peerpods_pods 4$/m.test(await running.op.operator.manager.metrics.registry.metrics()), {
      message: 'osc_peerpods_pods counts the four kata-remote pods',
    });
  });

  test('update: delete the KataConfig (blocked while kata-remote pods run), PODVM_AMI_ID ends empty, re-create', async () => {
    const mark = running.recorder.seen.length;
    const deletion = kubectl(['delete', 'kataconfig', KC, '--timeout=300s']);
    await waitFor(() => running.recorder.seen.at(-1)?.inProgress?.reason === 'BlockedByExistingKataPods', {
      message: 'blocked by the pods',
    });
    assert.deepEqual(running.recorder.seen.at(-1)?.inProgress, {
      status: 'False',
      reason: 'BlockedByExistingKataPods',
      message: messages.blocked(['kata-remote']),
    });
    // Nothing of peer pods goes while blocked.
    assert.ok(await c().find(DaemonSets, CAA_DAEMONSET, NS));
    assert.ok(await c().find(PeerPodConfigs, PEER_POD_CONFIG, NS));
    assert.equal(await amiId(), firstAmi);
    assert.equal((await capacities()).length, 2);

    // The prerequisite: delete the pods that use kata-remote (the documented search).
    const pods = JSON.parse((await ok(['get', 'pods', '-A', '-o', 'json'])).stdout) as { items: Pod[] };
    const remote = pods.items.filter((p) => p.spec?.runtimeClassName === 'kata-remote');
    assert.deepEqual(remote.map((p) => p.metadata.name).sort(), ['my-pod', 'permissive-pod', 'sized-pod', 'typed-pod']);
    for (const p of remote) await ok(['delete', 'pod', p.metadata.name ?? '', '-n', p.metadata.namespace ?? '']);

    const deleted = await deletion;
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /kataconfig.kataconfiguration.openshift.io "example-kataconfig" deleted/);
    const gone = await kubectl(['get', 'kataconfig', KC]);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /NotFound.*"example-kataconfig" not found/);

    const documented: ((s: StatusView) => boolean)[] = [
      (s) =>
        eq(s.inProgress, { status: 'True', reason: 'Uninstalling', message: messages.uninstalling('kata-remote') }) &&
        eq(s.kataNodes, { nodeCount: 0, readyNodeCount: 0, waitingToUninstall: ['worker-0', 'worker-1'] }),
      (s) => s.kataNodes?.nodeCount === 0 && onePair(s.kataNodes.uninstalling, s.kataNodes.waitingToUninstall),
      (s) => s.kataNodes?.nodeCount === 0 && s.kataNodes.uninstalling?.length === 1 && !s.kataNodes.waitingToUninstall,
    ];
    const order = inOrder(running.recorder.seen.slice(mark), documented);
    assert.ok(
      order.ok,
      `uninstall step ${order.matched + 1} not seen:\n${running.recorder.seen
        .slice(mark)
        .map((s) => JSON.stringify(s))
        .join('\n')}`,
    );

    // The image ID is empty, the image is gone from the cloud, and the deletion job said so.
    assert.equal(await amiId(), '');
    assert.equal(cluster.dev.cloud.images.has(firstAmi), false);
    const events = await ok(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${PODVM_IMAGE_DELETION_JOB}`]);
    assert.match(events.stdout, /Completed/);
    await assertNothingLeft();

    // Re-create; a new image is built.
    await ok(['create', '-f', '-'], kataConfigYaml);
    await waitFor(
      async () =>
        settled(running.recorder.seen.at(-1)) &&
        running.recorder.seen.at(-1)?.kataNodes?.readyNodeCount === 2 &&
        /^ami-/.test(await amiId()),
      {
        timeoutMs: 120_000,
        message: 're-installed with a new image',
      },
    );
    const second = await amiId();
    assert.notEqual(second, firstAmi);
    await ok(['get', '-n', NS, `ds/${CAA_DAEMONSET}`]);
    const rcs = await ok(['get', 'runtimeclass']);
    assert.match(rcs.stdout, /\nkata-remote\s+kata-remote\s+\S+/);
    await waitFor(
      async () =>
        eq(await capacities(), [
          ['worker-0', '10'],
          ['worker-1', '10'],
        ]),
      { message: 'the limit from the ConfigMap again' },
    );
  });

  test('uninstall: delete the workload pods, the KataConfig, then the CRD', async () => {
    await ok(['create', '-f', '-'], podYaml('leftover-pod'));
    // Search for the pods, delete each.
    const pods = JSON.parse((await ok(['get', 'pods', '-A', '-o', 'json'])).stdout) as { items: Pod[] };
    const remote = pods.items.filter((p) => p.spec?.runtimeClassName === 'kata-remote');
    assert.deepEqual(
      remote.map((p) => p.metadata.name),
      ['leftover-pod'],
    );
    for (const p of remote) await ok(['delete', 'pod', p.metadata.name ?? '', '-n', p.metadata.namespace ?? '']);
    // Delete the KataConfig.
    const mark = running.recorder.seen.length;
    const deleted = await ok(['delete', 'kataconfig', KC, '--timeout=300s']);
    assert.match(deleted.stdout, /"example-kataconfig" deleted/);
    assert.ok(running.recorder.seen.slice(mark).some((s) => s.inProgress?.message === messages.uninstalling('kata-remote')));
    assert.ok(running.recorder.seen.slice(mark).every((s) => s.inProgress?.reason !== 'BlockedByExistingKataPods'));
    assert.equal(await amiId(), '');
    assert.equal(cluster.dev.cloud.images.size, 0, 'no pod VM image left in the cloud');
    await assertNothingLeft();
    await nothingLeaks();

    // The CRD (after the operator is gone)
    await running.op.stop();
    await ok(['delete', 'crd', 'kataconfigs.kataconfiguration.openshift.io']);
    const crd = await kubectl(['get', 'crd', 'kataconfigs.kataconfiguration.openshift.io']);
    assert.notEqual(crd.code, 0);
    assert.match(crd.stderr, /NotFound/);
  });

  async function assertNothingLeft(): Promise<void> {
    const client = c();
    assert.equal(await client.find(DaemonSets, CAA_DAEMONSET, NS), undefined, 'DaemonSet osc-caa-ds deleted');
    assert.equal(await client.find(PeerPodConfigs, PEER_POD_CONFIG, NS), undefined, 'PeerPodConfig deleted');
    assert.deepEqual(
      (await client.list(Jobs, { namespace: NS })).items.map((j) => j.metadata.name),
      [],
      'image jobs deleted',
    );
    assert.equal(await client.find(RuntimeClasses, 'kata-remote'), undefined, 'RuntimeClass kata-remote deleted');
    assert.equal(await client.find(RuntimeClasses, 'kata'), undefined, 'RuntimeClass kata deleted');
    assert.equal(await client.find(MachineConfigPools, KATA_POOL), undefined);
    assert.equal(await client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG), undefined);
    assert.deepEqual(await capacities(), [], 'no node advertises kata.peerpods.io/vm');
    const cm = await client.get(ConfigMaps, PEER_PODS_CM, NS);
    assert.equal(cm.metadata.annotations?.[IMAGE_ID_ANNOTATION], undefined);
    assert.deepEqual((await client.list(KataConfigs)).items, []);
    const kc = running.recorder.current;
    assert.equal(kc, undefined, `KataConfig gone (finalizer ${PEERPODS_FINALIZER} released)`);
  }
});
