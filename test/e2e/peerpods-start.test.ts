/**
 * End to end, as a user does it: `osc start --cloud AWS` in its own process, then only kubectl (with the
 * kubeconfig it writes) for the documented peer pods procedure (docs/peerpods.md): the ConfigMap (no Secret: the
 * Cloud Credential Operator mints the credentials, docs/cloud-credentials.md), a KataConfig with
 * enablePeerPods, kata-remote and the pod VM image, a mutated pod, deletion with PODVM_AMI_ID left empty.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { controlPlaneBinaries, runKubectl } from '../../src/devcluster/controlplane.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const NS = 'openshift-sandboxed-containers-operator';

describe('e2e: osc start --cloud AWS, then the peer pods walkthrough with kubectl', () => {
  let home = '';
  let proc: ChildProcess | undefined;
  let output = '';
  let kubectlPath = '';

  before(async () => {
    home = await mkdtemp(join(tmpdir(), 'osc-e2e-peerpods-'));
    kubectlPath = (await controlPlaneBinaries()).kubectl;
    proc = spawn(
      process.execPath,
      [
        join(root, 'bin', 'osc.js'),
        'start',
        '--cloud',
        'AWS',
        '--workers',
        '1',
        '--reboot-ms',
        '300',
        '--home',
        home,
        '--quiet',
        '--metrics-bind-address',
        '127.0.0.1:0',
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_lifecycle_event: '' } },
    );
    proc.stdout?.on('data', (d) => {
      output += String(d);
    });
    proc.stderr?.on('data', (d) => {
      output += String(d);
    });
    await waitFor(() => output.includes('The dev cluster is up') || proc?.exitCode !== null, { timeoutMs: 180_000, message: 'osc start' });
    assert.ok(output.includes('The dev cluster is up'), output);
  });

  after(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc?.once('exit', r));
      proc.kill('SIGINT');
      await exited;
    }
    if (home) await rm(home, { recursive: true, force: true });
  });

  const kubectl = (args: string[], input?: string) => runKubectl(kubectlPath, join(home, 'kubeconfig'), args, input);
  const ok = async (args: string[], input?: string) => {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const amiId = () => ok(['get', 'configmap', '-n', NS, 'peer-pods-cm', '-o', 'jsonpath={.data.PODVM_AMI_ID}']);

  test('install with peer pods, a mutated workload pod, and uninstall', async () => {
    assert.ok(existsSync(join(home, 'kubeconfig')));
    // No step creates a Secret: osc asks the cluster's Cloud Credential Operator (docs/cloud-credentials.md).
    const region = await ok(['get', 'infrastructure/cluster', '-o', 'jsonpath={.status.platformStatus.aws.region}']);
    await ok(
      ['create', '-f', '-'],
      `apiVersion: v1
kind: ConfigMap
metadata:
  name: peer-pods-cm
  namespace: ${NS}
data:
  CLOUD_PROVIDER: "aws"
  VXLAN_PORT: "9000"
  PODVM_INSTANCE_TYPE: "t3.medium"
  PODVM_INSTANCE_TYPES: "t3.small,t3.medium,t3.large"
  PODVM_AMI_ID: ""
  AWS_REGION: "${region}"
  AWS_SUBNET_ID: "subnet-0a1b2c3d4e5f67890"
  AWS_VPC_ID: "vpc-0a1b2c3d4e5f67890"
  AWS_SG_IDS: "sg-0a1b2c3d4e5f67890"
`,
    );
    await ok(
      ['create', '-f', '-'],
      'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: example-kataconfig\nspec:\n  enablePeerPods: true\n  logLevel: info\n',
    );
    await waitFor(
      async () => (await kubectl(['get', 'runtimeclass', 'kata-remote'])).code === 0 && /^ami-[0-9a-f]{17}$/.test(await amiId()),
      {
        timeoutMs: 120_000,
        message: 'kata-remote installed and the pod VM image built',
      },
    );
    // The image can be built before the adaptor pod is ready (a loaded node starts it late), so the
    // DaemonSet is waited on as an administrator would, then read.
    await ok(['rollout', 'status', '-n', NS, 'ds/osc-caa-ds', '--timeout=120s']);
    const ds = await ok(['get', '-n', NS, 'ds/osc-caa-ds']);
    assert.match(ds, /osc-caa-ds\s+1\s+1\s+1\s+1\s+1\s+node-role.kubernetes.io\/kata-oc=/);
    // The DaemonSet controller's pod runs on the kata node; the image Job's pod ran and the Job completed
    // (osc removes the finished job; its events stay).
    assert.match(
      await ok(['get', 'pods', '-n', NS, '-l', 'app=osc-caa-ds', '-o', 'wide', '--no-headers']),
      /^osc-caa-ds-\S+\s+1\/1\s+Running\s+.*\sworker-0\s/,
    );
    const jobEvents = await ok(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=osc-podvm-image-creation']);
    assert.match(jobEvents, /SuccessfulCreate\s+job\/osc-podvm-image-creation\s+Created pod: osc-podvm-image-creation-/);
    assert.match(jobEvents, /Completed\s+job\/osc-podvm-image-creation\s+Job completed/);

    await ok(['create', 'namespace', 'demo']);
    // Pods are admitted once the namespace has its default ServiceAccount (the controller-manager makes it).
    await ok(['wait', '--for=create', 'serviceaccount/default', '-n', 'demo', '--timeout=60s']);
    const created = await kubectl(
      ['create', '-f', '-'],
      'apiVersion: v1\nkind: Pod\nmetadata:\n  name: hello\n  namespace: demo\nspec:\n  runtimeClassName: kata-remote\n  containers:\n  - name: c\n    image: registry.access.redhat.com/ubi9/ubi:9.3\n    resources:\n      limits:\n        cpu: "2"\n        memory: 6Gi\n',
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, /Warning: no Kata Agent policy/);
    const type = await ok([
      'get',
      'pod',
      'hello',
      '-n',
      'demo',
      '-o',
      'jsonpath={.metadata.annotations.io\\.katacontainers\\.config\\.hypervisor\\.machine_type}',
    ]);
    assert.equal(type, 't3.large');
    // Scheduled by the RuntimeClass's node selector onto the kata node, where kwok runs it.
    await waitFor(
      async () => /\s1\/1\s+Running\s.*\sworker-0\s/.test(await ok(['get', 'pod', 'hello', '-n', 'demo', '-o', 'wide', '--no-headers'])),
      {
        message: 'the kata-remote pod Running on the kata node',
      },
    );
    await ok(['delete', 'pod', 'hello', '-n', 'demo']);

    const deleted = await ok(['delete', 'kataconfig', 'example-kataconfig', '--timeout=180s']);
    assert.match(deleted, /deleted/);
    assert.equal(await amiId(), '');
    const left = await kubectl(['get', '-n', NS, 'ds/osc-caa-ds']);
    assert.notEqual(left.code, 0);
    // Nothing osc made is left, whichever component removed it (osc itself, the garbage collector, kwok).
    await waitFor(async () => (await ok(['get', 'pods,jobs,daemonsets,peerpodconfigs', '-n', NS, '-o', 'name'])) === '', {
      message: 'no pod, job, DaemonSet or PeerPodConfig left in the operator namespace',
    });
    for (const what of [['runtimeclass'], ['mcp', 'kata-oc'], ['mc', '50-enable-sandboxed-containers-extension']]) {
      const r = await kubectl(['get', ...what, '-o', 'name']);
      assert.ok(r.code !== 0 || r.stdout === '', `${what.join(' ')} left: ${r.stdout}`);
    }
  });
});
