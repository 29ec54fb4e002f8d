import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { DaemonSet, Node, Pod } from '../../src/kube/resources.ts';
import {
  CONFIG_ANNOTATION,
  configId,
  debugFor,
  desiredInstallerDaemonSet,
  INSTALL_LABEL,
  INSTALLER_NAME,
  INSTALLER_RULES,
  installerConfig,
  KATA_RUNTIME_LABEL,
  ROLLOUT_ANNOTATION,
  recordedSettings,
} from '../../src/platform/kubernetes/katadeploy.ts';
import { installerMessage, observeNodes, podFailure } from '../../src/platform/kubernetes/observe.ts';
import { type KubernetesObserved, KubernetesPlatform, STOPPED_ANNOTATION } from '../../src/platform/kubernetes/platform.ts';
import type { PlatformInput } from '../../src/platform/platform.ts';

const IMAGE = 'quay.io/kata-containers/kata-deploy:4.1.0';
const platform = new KubernetesPlatform({ namespace: 'osc', image: IMAGE });
const target = installerConfig(IMAGE, 'qemu', 'info');
const T = configId(target);

const node = (name: string, labels: Record<string, string> = {}, taints: Node['spec'] = undefined): Node => ({
  metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
  ...(taints ? { spec: taints } : {}),
});

/** A node osc gave configuration `config`. */
const assignedNode = (name: string, config: string, labels: Record<string, string> = {}): Node => ({
  metadata: { name, labels: { [INSTALL_LABEL]: 'true', ...labels }, annotations: { [CONFIG_ANNOTATION]: config } },
});

function installerPod(name: string, nodeName: string, config: string, status: Pod['status'] = {}): Pod {
  return {
    metadata: {
      name,
      namespace: 'osc',
      labels: { name: INSTALLER_NAME },
      annotations: { [CONFIG_ANNOTATION]: config },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: INSTALLER_NAME, uid: 'ds' }],
    },
    spec: { nodeName, containers: [] },
    status,
  };
}

const kc: KataConfig = { metadata: { name: 'example-kataconfig', uid: 'kc-uid', generation: 1 }, spec: { logLevel: 'info' } };

function input(nodes: Node[], observed: Partial<KubernetesObserved>, over: Partial<PlatformInput<KubernetesObserved>> = {}) {
  return {
    observed: { pods: [], ...observed },
    nodes,
    kataConfig: kc,
    selected: new Set(nodes.map((n) => n.metadata.name ?? '')),
    now: new Date('2026-11-22T21:00:00Z'),
    soakMs: 600_000,
    ...over,
  };
}

const seen = (ds: DaemonSet): DaemonSet => ({ ...ds, metadata: { ...ds.metadata, generation: 1 }, status: { observedGeneration: 1 } });

describe('kata-deploy facts', () => {
  test('configuration id: stable, and logLevel maps to DEBUG (debug and trace only)', () => {
    assert.equal(configId(installerConfig(IMAGE, 'qemu', 'info')), configId({ shim: 'qemu', debug: false, image: IMAGE }));
    assert.notEqual(configId(installerConfig(IMAGE, 'qemu', 'debug')), T);
    assert.equal(configId(installerConfig(IMAGE, 'qemu', 'warn')), T);
    assert.deepEqual((['info', 'debug', 'trace', 'error'] as const).map(debugFor), [false, true, true, false]);
    assert.match(T, /^[0-9a-f]{12}$/);
  });

  test('the DaemonSet: OnDelete, on osc-labelled nodes only, kata-deploy install with its environment', () => {
    const ds = desiredInstallerDaemonSet('osc', installerConfig(IMAGE, 'qemu', 'debug'));
    // biome-ignore lint/suspicious/noExplicitAny: reading a deep, loosely typed pod spec
    const spec = ds.spec as unknown as { updateStrategy: unknown; template: { spec: Record<string, any> } };
    assert.deepEqual(spec.updateStrategy, { type: 'OnDelete' });
    const pod = spec.template.spec;
    assert.deepEqual(pod.nodeSelector, { [INSTALL_LABEL]: 'true' });
    const c = pod.containers[0];
    assert.equal(c.image, IMAGE);
    assert.deepEqual(c.command, ['/usr/bin/kata-deploy', '--log-level', 'debug', 'install']);
    const env = Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    assert.equal(env.DAEMONSET_NAME, INSTALLER_NAME);
    assert.equal(env.DEBUG, 'true');
    assert.equal(env.SHIMS_X86_64, 'qemu');
    assert.equal(env.DEFAULT_SHIM_X86_64, 'qemu');
    assert.equal(env.SHIMS_AARCH64, 'qemu');
    assert.deepEqual(c.env[0], { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } });
    assert.equal(c.startupProbe.httpGet.path, '/readyz');
    assert.equal(pod.terminationGracePeriodSeconds, 600);
    assert.equal(ds.spec.template.metadata?.annotations?.[CONFIG_ANNOTATION], configId(installerConfig(IMAGE, 'qemu', 'debug')));
  });

  test('the DaemonSet remembers the settings of the configurations before (for a rollback)', () => {
    const first = desiredInstallerDaemonSet('osc', target);
    const second = desiredInstallerDaemonSet('osc', installerConfig(IMAGE, 'qemu', 'debug'), undefined, recordedSettings(first));
    assert.deepEqual(recordedSettings(second).map(configId), [configId(installerConfig(IMAGE, 'qemu', 'debug')), T]);
    assert.deepEqual(recordedSettings({ ...first, metadata: { annotations: { x: 'y' } } }), []);
  });
});

describe('what osc reads from kata-deploy', () => {
  test('the Error: line of kata-deploy is the reason', () => {
    assert.equal(
      installerMessage('[INFO] x\nError: Runtime cri-o is not supported\n\nCaused by:\n  nope\n'),
      'Runtime cri-o is not supported',
    );
    assert.equal(installerMessage('just this'), 'just this');
    assert.equal(installerMessage(''), undefined);
  });

  test('a crash-looping installer fails, with its termination message', () => {
    const status = {
      phase: 'Running',
      containerStatuses: [
        {
          ready: false,
          restartCount: 2,
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s' } },
          lastState: { terminated: { exitCode: 1, message: 'Error: host-check failed' } },
        },
      ],
    };
    assert.equal(podFailure(installerPod('p', 'a', T, status)), 'host-check failed');
    assert.equal(
      podFailure(
        installerPod('p', 'a', T, {
          phase: 'Running',
          containerStatuses: [{ state: { waiting: { reason: 'ErrImagePull', message: 'not found' } } }],
        }),
      ),
      'ErrImagePull: not found',
    );
    assert.equal(podFailure(installerPod('p', 'a', T, { phase: 'Running', containerStatuses: [{ state: { running: {} } }] })), undefined);
    const retrying = { phase: 'Running', containerStatuses: [{ state: { running: {} }, lastState: { terminated: { exitCode: 1 } } }] };
    assert.equal(podFailure(installerPod('p', 'a', T, retrying)), undefined, 'running again: kata-deploy retries');
    assert.equal(podFailure(installerPod('p', 'a', T, { phase: 'Failed', message: 'evicted' })), 'evicted');
  });

  test('observations group our pods by node and ignore other pods', () => {
    const foreign: Pod = { metadata: { name: 'x', labels: { name: INSTALLER_NAME } }, spec: { nodeName: 'a', containers: [] } };
    const o = observeNodes(
      [assignedNode('a', T, { [KATA_RUNTIME_LABEL]: 'true' }), node('b')],
      [installerPod('p', 'a', T, { conditions: [{ type: 'Ready', status: 'True' }] }), foreign],
    );
    assert.deepEqual(o, [
      { name: 'a', installLabel: T, kataRuntime: 'true', pods: [{ name: 'p', config: T, terminating: false, ready: true }] },
      { name: 'b', pods: [] },
    ]);
  });
});

describe('the Kubernetes platform', () => {
  test('candidates are the nodes without a control-plane role', () => {
    const nodes = [node('cp', { 'node-role.kubernetes.io/control-plane': '' }), node('w1'), node('w0', { pool: 'x' })];
    assert.deepEqual(platform.select(nodes, {}).nodes, ['w0', 'w1']);
    assert.deepEqual(platform.select(nodes, { kataConfigPoolSelector: { matchLabels: { pool: 'x' } } }).nodes, ['w0']);
    // A cluster of control-plane nodes only: the untainted ones (as kata-deploy's DaemonSet would land).
    const single = [
      node('one', { 'node-role.kubernetes.io/control-plane': '' }),
      node(
        'two',
        { 'node-role.kubernetes.io/control-plane': '' },
        { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] },
      ),
    ];
    assert.deepEqual(platform.select(single, {}).nodes, ['one']);
  });

  test('RuntimeClass kata: kata-deploy handler and overhead for the shim, scheduled on kata-deploy-labelled nodes', () => {
    assert.deepEqual(platform.runtimeClass('kata', []), {
      handler: 'kata-qemu',
      nodeSelector: { 'katacontainers.io/kata-runtime': 'true' },
      overhead: { memory: '320Mi', cpu: '250m' },
    });
    assert.equal(new KubernetesPlatform({ shim: 'clh' }).runtimeClass('kata', []).handler, 'kata-clh');
    assert.deepEqual(platform.kataNodeSelector([]), { 'katacontainers.io/kata-runtime': 'true' });
    assert.equal(platform.supportsPeerPods, false);
  });

  test('first pass: the installer DaemonSet is created (its identity ships with the install); no node is labelled before the DaemonSet is seen', () => {
    const plan = platform.installPlan(input([node('w0'), node('w1')], {}));
    const kinds = plan.steps.map((s) => s.map((w) => `${w.op} ${w.resource.kind}`));
    assert.deepEqual(kinds, [['create DaemonSet']]);
  });

  test('then one node is labelled with the target configuration, and its record says Installing', () => {
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    const i = input([node('w0'), node('w1')], { daemonSet: ds });
    const plan = platform.installPlan(i);
    assert.deepEqual(plan.steps, [
      [
        {
          op: 'patch',
          resource: plan.steps[0]?.[0]?.resource,
          name: 'w0',
          // The rollout's memory of the node goes with the assignment, on the node itself.
          patch: {
            metadata: {
              labels: { [INSTALL_LABEL]: 'true' },
              annotations: { [CONFIG_ANNOTATION]: T, [ROLLOUT_ANNOTATION]: JSON.stringify({ since: i.now.toISOString() }) },
            },
          },
          expect: JSON.stringify({ labels: { [INSTALL_LABEL]: 'true' }, annotations: { [CONFIG_ANNOTATION]: T } }),
        },
      ],
    ]);
    const records = platform.records(i);
    assert.deepEqual(
      records.map((r) => [r.node, r.phase, r.assigned?.id]),
      [
        ['w0', 'Installing', T],
        ['w1', 'WaitingToInstall', undefined],
      ],
    );
    assert.match(
      records[0]?.assigned?.description ?? '',
      /kata-deploy quay\.io\/kata-containers\/kata-deploy:4\.1\.0, shim qemu, debug off/,
    );
    assert.equal(platform.rolloutComplete(i), true);
    // Not installing until the label is written: a KataConfig deleted now must not wait for an install that
    // its uninstall will never start (it waited for good).
    assert.deepEqual(platform.installing(i), []);
  });

  test('in flight means an installer there to finish: not a node assigned whose installer is gone (an etcd restore gave back the label of a node the uninstall had cleaned)', () => {
    const since = JSON.stringify({ since: '2026-11-22T20:59:00Z' });
    const w0 = assignedNode('w0', T);
    (w0.metadata.annotations as Record<string, string>)[ROLLOUT_ANNOTATION] = since;
    const w1 = assignedNode('w1', T);
    (w1.metadata.annotations as Record<string, string>)[ROLLOUT_ANNOTATION] = since;
    // w0's installer is at work; w1 has none, and no DaemonSet will make one (the uninstall deleted it).
    const i = input([w0, w1], { pods: [installerPod('p0', 'w0', T, { phase: 'Running' })] });
    assert.deepEqual(
      platform.records(i).map((r) => [r.node, r.phase]),
      [
        ['w0', 'Installing'],
        ['w1', 'Installing'],
      ],
    );
    assert.deepEqual(platform.installing(i), ['w0'], 'a KataConfig deleted now waits for w0 only');
    // An installer on its way out (deleted) finishes nothing.
    const leaving = installerPod('p0', 'w0', T, { phase: 'Running' });
    leaving.metadata.deletionTimestamp = '2026-11-22T20:59:30Z';
    assert.deepEqual(platform.installing(input([w0, w1], { pods: [leaving] })), []);
  });

  test('a failure stops the rollout with the stop mark on the DaemonSet, and records the error', () => {
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    const crash = {
      containerStatuses: [{ ready: false, state: { terminated: { exitCode: 1, message: 'Error: containerd restart failed' } } }],
    };
    const i = input([assignedNode('w0', T, { [KATA_RUNTIME_LABEL]: 'false' }), node('w1')], {
      daemonSet: ds,
      pods: [installerPod('p0', 'w0', T, crash)],
    });
    const plan = platform.installPlan(i);
    const writes = plan.steps.flat();
    const dsPatch = writes.find((w) => w.resource.kind === 'DaemonSet');
    assert.ok(dsPatch && dsPatch.op === 'patch');
    const mark = (dsPatch.patch as { metadata: { annotations: Record<string, string> } }).metadata.annotations[STOPPED_ANNOTATION];
    assert.deepEqual(JSON.parse(mark ?? ''), { generation: 1, failures: { w0: 'containerd restart failed' } });
    assert.ok(writes.some((w) => w.op === 'patch' && w.resource.kind === 'Node' && w.name === 'w0'));
    assert.ok(!writes.some((w) => w.op === 'patch' && w.resource.kind === 'Node' && w.name === 'w1'), 'w1 is not touched');
    const records = platform.records(i);
    assert.deepEqual(
      records.map((r) => [r.node, r.phase, r.error]),
      [
        ['w0', 'FailedToInstall', 'containerd restart failed'],
        ['w1', 'WaitingToInstall', ''],
      ],
    );
    assert.equal(platform.rolloutComplete(i), false);
  });

  test("one pass's view plans the rollout once and answers as the platform does", () => {
    let plans = 0;
    const counting = new (class extends KubernetesPlatform {
      override plan(i: PlatformInput<KubernetesObserved>) {
        plans++;
        return super.plan(i);
      }
    })({ namespace: 'osc', image: IMAGE });
    const i = input([node('w0'), node('w1')], { daemonSet: seen(desiredInstallerDaemonSet('osc', target)) });
    const view = counting.view(i);
    const answers = [view.records(), view.rolloutComplete(), view.installing(), view.installPlan(), view.uninstallComplete()];
    assert.equal(plans, 1);
    assert.deepEqual(answers, [
      platform.records(i),
      platform.rolloutComplete(i),
      platform.installing(i),
      platform.installPlan(i),
      platform.uninstallComplete(i),
    ]);
  });

  test('a node assigned by an osc that kept no memory on it: the deadline runs from its installer pod', () => {
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    const made = (at: string) => {
      const p = installerPod('p0', 'w0', T);
      return { ...p, metadata: { ...p.metadata, creationTimestamp: at } };
    };
    const late = input([assignedNode('w0', T)], { daemonSet: ds, pods: [made('2026-11-22T20:49:59Z')] });
    assert.equal(platform.records(late)[0]?.error, 'kata-deploy did not report the installation within 600s');
    const early = input([assignedNode('w0', T)], { daemonSet: ds, pods: [made('2026-11-22T20:55:00Z')] });
    assert.deepEqual([platform.records(early)[0]?.phase, platform.installPlan(early).recheckAfterMs], ['Installing', 300_000 + 1000]);
  });

  test("the rollout's memory is read from the nodes alone: a failed node goes back to the last known good written on it", () => {
    const debug = configId(installerConfig(IMAGE, 'qemu', 'debug'));
    const ds = seen(desiredInstallerDaemonSet('osc', installerConfig(IMAGE, 'qemu', 'debug'), undefined, [target]));
    const crash = {
      containerStatuses: [
        {
          ready: false,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, message: 'Error: disk full' } },
        },
      ],
    };
    const remembered = (n: Node, memory: object): Node => ({
      ...n,
      metadata: { ...n.metadata, annotations: { ...n.metadata.annotations, [ROLLOUT_ANNOTATION]: JSON.stringify(memory) } },
    });
    const w0 = remembered(assignedNode('w0', debug, { [KATA_RUNTIME_LABEL]: 'true' }), {
      since: '2026-11-22T20:59:00Z',
      active: T,
      lastKnownGood: T,
    });
    // A new operator (no memory in the process, no KataNode read) makes the same plan.
    const i = input([w0, assignedNode('w1', T, { [KATA_RUNTIME_LABEL]: 'true' })], {
      daemonSet: ds,
      pods: [installerPod('p0', 'w0', debug, crash), installerPod('p1', 'w1', T, { conditions: [{ type: 'Ready', status: 'True' }] })],
    });
    const back = platform
      .installPlan(i)
      .steps.flat()
      .find((w) => w.op === 'patch' && w.resource.kind === 'Node');
    assert.ok(back && back.op === 'patch' && back.name === 'w0');
    const annotations = (back.patch as { metadata: { annotations: Record<string, string> } }).metadata.annotations;
    assert.equal(annotations[CONFIG_ANNOTATION], T, 'back to the last known good written on the node');
    assert.deepEqual(JSON.parse(annotations[ROLLOUT_ANNOTATION] ?? ''), { since: i.now.toISOString(), active: T, lastKnownGood: T });
    const [r0] = platform.records(i);
    assert.deepEqual([r0?.phase, r0?.error, r0?.lastKnownGood?.id, r0?.active?.id], ['FailedToInstall', 'disk full', T, T]);
  });

  test('a node kata has left loses the memory too; a node Ready for the soak period has a last known good', () => {
    const gone = { metadata: { name: 'w0', annotations: { [ROLLOUT_ANNOTATION]: JSON.stringify({ since: '2026-11-22T20:00:00Z' }) } } };
    const plan = platform.uninstallPlan(input([gone], {}, { selected: new Set() }));
    assert.deepEqual(plan.steps.flat(), [
      {
        op: 'patch',
        resource: plan.steps[0]?.[0]?.resource,
        name: 'w0',
        patch: { metadata: { annotations: { [ROLLOUT_ANNOTATION]: null } } },
      },
    ]);
    assert.equal(platform.uninstallComplete(input([gone], {}, { selected: new Set() })), false, 'not complete while the memory stays');

    const ready = (since: string) => ({ conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: since }] });
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    const w0 = assignedNode('w0', T, { [KATA_RUNTIME_LABEL]: 'true' });
    const soaking = input([w0], { daemonSet: ds, pods: [installerPod('p0', 'w0', T, ready('2026-11-22T20:55:00Z'))] });
    assert.equal(platform.records(soaking)[0]?.lastKnownGood, null, 'Ready for 5 of the 10 minutes');
    assert.equal(platform.installPlan(soaking).recheckAfterMs, 300_000 + 1000, 'looks again when the soak ends');
    const soaked = input([w0], { daemonSet: ds, pods: [installerPod('p0', 'w0', T, ready('2026-11-22T20:50:00Z'))] });
    assert.equal(platform.records(soaked)[0]?.lastKnownGood?.id, T);
  });

  test('uninstall: complete once no node is labelled and no installer pod is left; cleanup deletes the DaemonSet, not the installed identity', () => {
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    assert.equal(platform.uninstallComplete(input([node('w0')], { daemonSet: ds }, { selected: new Set() })), true);
    assert.equal(platform.uninstallComplete(input([assignedNode('w0', T)], { daemonSet: ds }, { selected: new Set() })), false);
    // An uninstall pass creates nothing, even with the installer already cleaned up.
    const late = platform.uninstallPlan(input([node('w0')], {}, { selected: new Set() }));
    assert.deepEqual(late.steps, []);
    const steps = platform.cleanupPlan(input([], {})).steps.map((s) => s.map((w) => `${w.op} ${w.resource.kind}`));
    assert.deepEqual(steps, [['delete DaemonSet']]);
  });

  test('uninstall: a node with kata still to lose and no DaemonSet to run its cleanup gets the DaemonSet back (an etcd restore)', () => {
    const ops = (i: ReturnType<typeof input>) =>
      platform
        .uninstallPlan(i)
        .steps.flat()
        .map((w) => `${w.op} ${w.resource.kind}${'name' in w ? ` ${w.name}` : ''}`);
    const uninstall = { selected: new Set<string>() };
    // Assigned, kata on it, no installer pod and no DaemonSet: the DaemonSet comes back, for a pod to run
    // there and clean up once the node loses its assignment.
    const stranded = assignedNode('w0', T, { [KATA_RUNTIME_LABEL]: 'true' });
    assert.deepEqual(ops(input([stranded], {}, uninstall)), ['create DaemonSet']);
    // kata left on a node with no assignment and no installer: the same.
    assert.deepEqual(ops(input([node('w0', { [KATA_RUNTIME_LABEL]: 'true' })], {}, uninstall)), ['create DaemonSet']);
    // With the DaemonSet there, nothing is created: its pod comes and installs, then the node loses its
    // assignment (the pod's deletion runs the cleanup).
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    assert.deepEqual(ops(input([stranded], { daemonSet: ds }, uninstall)), []);
    const installed = installerPod('p0', 'w0', T, { conditions: [{ type: 'Ready', status: 'True' }] });
    assert.deepEqual(ops(input([stranded], { daemonSet: ds, pods: [installed] }, uninstall)), ['patch Node w0']);
  });

  test('uninstall: an installer pod still on a node that cleans up holds it; one left on a node that is gone does not', () => {
    // A node removed from the cluster keeps its pods until the pod garbage collector takes them, 40 s later:
    // nothing is cleaned up there, and the uninstall (and an uninstall without a KataConfig) need not wait.
    const ds = seen(desiredInstallerDaemonSet('osc', target));
    const cleaning = installerPod('osc-kata-deploy-a', 'w0', T);
    const orphan = installerPod('osc-kata-deploy-b', 'w9', T);
    assert.equal(platform.uninstallComplete(input([node('w0')], { daemonSet: ds, pods: [cleaning] }, { selected: new Set() })), false);
    assert.equal(platform.uninstallComplete(input([node('w0')], { daemonSet: ds, pods: [orphan] }, { selected: new Set() })), true);
    const ops = (i: ReturnType<typeof input>) =>
      platform
        .leftoversPlan(i)
        .steps.flat()
        .map((w) => `${w.op} ${w.resource.kind}`);
    const owned = {
      ...ds,
      metadata: { ...ds.metadata, labels: { ...ds.metadata.labels, 'app.kubernetes.io/managed-by': 'osc-operator' } },
    };
    assert.deepEqual(ops(input([node('w0')], { daemonSet: owned, pods: [cleaning] })), []);
    assert.deepEqual(ops(input([node('w0')], { daemonSet: owned, pods: [orphan] })), ['delete DaemonSet']);
  });
});

describe('osc install --distribution kubernetes: RBAC', () => {
  test('the operator neither reaches kubelets nor makes or binds RBAC; kata-deploy gets its identity from the install', async () => {
    const { clusterRules, namespaceRules } = await import('../../src/install/rbac.ts');
    const { manifests } = await import('../../src/install/manifests.ts');
    const rules = [...clusterRules('kubernetes'), ...namespaceRules('kubernetes')];
    assert.ok(!rules.some((r) => r.resources.includes('nodes/proxy')), 'no nodes/proxy for the operator');
    assert.ok(!rules.some((r) => r.apiGroups.includes('rbac.authorization.k8s.io')), 'no RBAC writes for the operator');
    assert.ok(!rules.some((r) => r.apiGroups.includes('machineconfiguration.openshift.io')), 'no Machine Config Operator rules');
    assert.ok(clusterRules('openshift').some((r) => r.apiGroups.includes('machineconfiguration.openshift.io')));
    const all = await manifests({ distribution: 'kubernetes' });
    const ours = (kind: string) => all.find((o) => o.kind === kind && o.metadata.name === INSTALLER_NAME);
    assert.equal(ours('ServiceAccount')?.metadata.namespace, 'openshift-sandboxed-containers-operator');
    const role = ours('ClusterRole') as unknown as { rules: { resources: string[]; verbs: string[] }[] };
    assert.deepEqual(role.rules, INSTALLER_RULES);
    assert.ok(!role.rules.some((r) => r.resources.includes('nodes/proxy')), 'no nodes/proxy for kata-deploy');
    assert.deepEqual((ours('ClusterRoleBinding') as unknown as { subjects: unknown[] }).subjects, [
      { kind: 'ServiceAccount', name: INSTALLER_NAME, namespace: 'openshift-sandboxed-containers-operator' },
    ]);
    // The OpenShift install ships the same identity, for deploymentMode DaemonSet.
    const openshift = await manifests();
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'])
      assert.deepEqual(
        openshift.find((o) => o.kind === kind && o.metadata.name === INSTALLER_NAME),
        ours(kind),
        `${kind} on OpenShift too`,
      );
  });

  test('it may delete installer pods, in its namespace only', async () => {
    const { namespaceRules, clusterRules } = await import('../../src/install/rbac.ts');
    assert.ok(namespaceRules('kubernetes').some((r) => r.resources.includes('pods') && r.verbs.includes('delete')));
    // On OpenShift too: deploymentMode DaemonSet runs this platform there.
    assert.ok(namespaceRules('openshift').some((r) => r.resources.includes('pods') && r.verbs.includes('delete')));
    assert.ok(!clusterRules('openshift').some((r) => r.resources.includes('pods') && r.verbs.includes('delete')));
    assert.ok(!clusterRules('kubernetes').some((r) => r.resources.includes('pods') && r.verbs.includes('delete')));
  });
});

describe('peer pods on plain Kubernetes', () => {
  test('the webhook refuses enablePeerPods up front, naming the field and the fix; OpenShift accepts it', async () => {
    const { validateKataConfig } = await import('../../src/webhooks/kataconfig.ts');
    const req = { uid: 'u', operation: 'CREATE', name: 'k', object: { metadata: { name: 'k' }, spec: { enablePeerPods: true } } };
    const refused = validateKataConfig(req as never, [], platform);
    assert.equal(refused.allowed, false);
    assert.match(
      refused.allowed ? '' : refused.message,
      /^enablePeerPods: peer pods are supported on OpenShift only, .*set enablePeerPods to false/,
    );
    assert.equal(validateKataConfig(req as never, []).allowed, true, 'the default platform, OpenShift, has peer pods');
    const plain = { ...req, object: { metadata: { name: 'k' }, spec: {} } };
    assert.equal(validateKataConfig(plain as never, [], platform).allowed, true);
  });
});
