import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { desiredMonitor, pullPolicyFor } from '../../src/controllers/monitor/desired.ts';
import { cachedNode } from '../../src/controllers/nodecache.ts';
import type { Node } from '../../src/kube/resources.ts';
import { flavourOf, runtimeSocketOf } from '../../src/platform/kubernetes/flavour.ts';
import { configId, desiredInstallerDaemonSet, installerConfig } from '../../src/platform/kubernetes/katadeploy.ts';
import { KubernetesPlatform } from '../../src/platform/kubernetes/platform.ts';

const node = (kubeletVersion: string, containerRuntimeVersion: string, labels: Record<string, string> = {}): Node =>
  ({ metadata: { name: 'n', labels }, status: { nodeInfo: { kubeletVersion, containerRuntimeVersion, osImage: 'x' } } }) as Node;

type Container = { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string }[] };
const installerOf = (nodes: Node[]) => {
  const platform = new KubernetesPlatform({ namespace: 'osc' });
  const ds = desiredInstallerDaemonSet('osc', platform.config({}, nodes));
  const spec = ds.spec.template.spec as { containers: Container[]; volumes: { name: string; hostPath?: { path: string } }[] };
  return {
    env: Object.fromEntries((spec.containers[0]?.env ?? []).map((e) => [e.name, e.value])),
    containerdConf: spec.volumes.find((v) => v.name === 'containerd-conf')?.hostPath?.path,
  };
};

describe('flavours of Kubernetes: kata-deploy configured for where containerd lives', () => {
  test('k3s, rke2 and k0s from the kubelet version, microk8s from its label, anything else k8s', () => {
    assert.equal(flavourOf([node('v1.31.4+k3s1', 'containerd://1.7.23-k3s2')]), 'k3s');
    assert.equal(flavourOf([node('v1.31.4+rke2r1', 'containerd://1.7.23-k3s2')]), 'rke2');
    assert.equal(flavourOf([node('v1.31.4+k0s', 'containerd://1.7.24')]), 'k0s');
    assert.equal(flavourOf([node('v1.31.4', 'containerd://1.7.24', { 'microk8s.io/cluster': 'true' })]), 'microk8s');
    assert.equal(flavourOf([node('v1.34.4', 'containerd://2.1.4')]), 'k8s');
    assert.equal(flavourOf([]), 'k8s');
  });

  test('k3s and rke2: K8S_DISTRIBUTION and their containerd configuration directory; plain Kubernetes unchanged', () => {
    assert.deepEqual(installerOf([node('v1.31.4+k3s1', 'containerd://1.7.23-k3s2')]), {
      env: { ...installerOf([]).env, K8S_DISTRIBUTION: 'k3s' },
      containerdConf: '/var/lib/rancher/k3s/agent/etc/containerd/',
    });
    const rke2 = installerOf([node('v1.31.4+rke2r1', 'containerd://1.7.23-k3s2')]);
    assert.equal(rke2.env.K8S_DISTRIBUTION, 'rke2');
    assert.equal(rke2.containerdConf, '/var/lib/rancher/rke2/agent/etc/containerd/');
    const plain = installerOf([node('v1.34.4', 'containerd://2.1.4')]);
    assert.equal(plain.env.K8S_DISTRIBUTION, 'k8s');
    assert.equal(plain.containerdConf, '/etc/containerd/');
  });

  test('the configuration id of plain Kubernetes is what it was before flavours; another flavour is another configuration', () => {
    const plain = installerConfig('img', 'qemu', 'info');
    assert.deepEqual(plain, { image: 'img', shim: 'qemu', debug: false });
    assert.notEqual(configId(installerConfig('img', 'qemu', 'info', 'k3s')), configId(plain));
    assert.equal(configId(installerConfig('img', 'qemu', 'info', 'k8s')), configId(plain));
  });

  test("the node cache keeps the kubelet's and the runtime's versions, and no other node info", () => {
    const cached = cachedNode(node('v1.31.4+k3s1', 'containerd://1.7.23-k3s2'));
    assert.deepEqual(cached.status?.nodeInfo, { kubeletVersion: 'v1.31.4+k3s1', containerRuntimeVersion: 'containerd://1.7.23-k3s2' });
  });
});

describe('the kata monitor mounts the socket of the runtime the kata nodes run', () => {
  const monitorOf = (nodes: Node[]) => {
    const m = desiredMonitor({
      namespace: 'osc',
      image: 'example.com/kata-monitor@sha256:' + 'a'.repeat(64),
      kataConfig: {
        apiVersion: 'kataconfiguration.openshift.io/v1',
        kind: 'KataConfig',
        metadata: { name: 'k', uid: 'u' },
        status: { runtimeClasses: ['kata'] },
      } as never,
      kataNodeSelector: {},
      prometheusOperator: false,
      runtimeSocket: runtimeSocketOf(nodes),
    });
    const spec = m?.daemonSet.spec.template.spec as {
      containers: { command: string[]; volumeMounts: { mountPath: string }[] }[];
      volumes: { hostPath?: { path: string } }[];
    };
    return {
      endpoint: spec.containers[0]?.command.find((a) => a.startsWith('--runtime-endpoint=')),
      hostPaths: spec.volumes.map((v) => v.hostPath?.path),
    };
  };

  test("containerd's socket on containerd nodes, CRI-O's on CRI-O nodes, k3s's where k3s runs", () => {
    assert.deepEqual(monitorOf([node('v1.34.4', 'containerd://2.1.4')]), {
      endpoint: '--runtime-endpoint=/run/containerd/containerd.sock',
      hostPaths: ['/run/containerd/', '/run/vc/sbs/'],
    });
    assert.deepEqual(monitorOf([node('v1.34.4', 'cri-o://1.34.1')]), {
      endpoint: '--runtime-endpoint=/run/crio/crio.sock',
      hostPaths: ['/run/crio/', '/run/vc/sbs/'],
    });
    assert.equal(
      monitorOf([node('v1.31.4+k3s1', 'containerd://1.7.23-k3s2')]).endpoint,
      '--runtime-endpoint=/run/k3s/containerd/containerd.sock',
    );
  });

  test('pulled by digest: a cached copy is the same build; by tag: always pulled, so every node runs what the tag names', () => {
    assert.equal(pullPolicyFor(`quay.io/x/monitor@sha256:${'0'.repeat(64)}`), 'IfNotPresent');
    assert.equal(pullPolicyFor('quay.io/x/monitor:latest'), 'Always');
    assert.equal(pullPolicyFor('quay.io/x/monitor:1.2@sha256:abc'), 'Always', 'not a whole digest');
  });
});
