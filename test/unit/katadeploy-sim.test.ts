/**
 * The simulated kata-deploy host side, pure parts: recognising the installer, its command line, the
 * labels of each stage (claim, install, release with other installs' markers) and one pod's process as
 * next steps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FAIL_NEXT_UPDATE_ANNOTATION,
  type InstallerObserved,
  installerStep,
  PERMISSION_DENIED,
  podStatusFor,
} from '../../src/devcluster/katadeploy/core.ts';
import {
  actionOf,
  claimLabels,
  imageRepository,
  installedLabels,
  installerConfig,
  installerContainer,
  releaseLabels,
  runtimeHandlersOf,
  withHandlers,
} from '../../src/devcluster/katadeploy/protocol.ts';
import type { Container, Node, Pod } from '../../src/kube/resources.ts';

const KR = 'katacontainers.io/kata-runtime';
const MARK = 'kata-deploy.katacontainers.io/default';
const REPOS = ['quay.io/kata-containers/kata-deploy'];
const timing = { installMs: 1000, cleanupMs: 200, restartBackoffMs: 500 };

const kc = (over: Partial<Container> = {}): Container => ({
  name: 'kube-kata',
  image: 'quay.io/kata-containers/kata-deploy:4.1.0',
  command: ['/usr/bin/kata-deploy', 'install'],
  terminationMessagePolicy: 'FallbackToLogsOnError',
  env: [{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
  ...over,
});
const pod = (c: Container = kc(), over: { deleting?: boolean; restartPolicy?: string } = {}): Pod => ({
  metadata: { name: 'kd', namespace: 'kube-system', uid: 'u1', ...(over.deleting ? { deletionTimestamp: '2026-11-22T22:00:00Z' } : {}) },
  spec: { nodeName: 'worker-0', restartPolicy: over.restartPolicy ?? 'Always', containers: [c] },
  status: { phase: 'Running' },
});
const node = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}): Node => ({
  metadata: { name: 'worker-0', labels, annotations },
});
const step = (obs: Partial<InstallerObserved> & { pod: Pod }) =>
  installerStep({ now: 10_000, node: node(), ...obs }, obs.pod.spec?.containers[0] as Container, timing);

describe('kata-deploy protocol', () => {
  test('recognises the installer by image repository, whatever the tag or digest', () => {
    assert.equal(imageRepository('quay.io/kata-containers/kata-deploy:4.1.0'), 'quay.io/kata-containers/kata-deploy');
    assert.equal(imageRepository('quay.io/kata-containers/kata-deploy@sha256:abc'), 'quay.io/kata-containers/kata-deploy');
    assert.equal(imageRepository('registry:5000/kata-deploy'), 'registry:5000/kata-deploy');
    assert.ok(installerContainer(pod(), REPOS));
    assert.equal(installerContainer(pod(kc({ image: 'quay.io/kata-containers/kata-deploy-job-dispatcher:4.1.0' })), REPOS), undefined);
    assert.ok(installerContainer(pod(kc({ image: 'mirror.example/kd:1' })), ['mirror.example/kd']), 'the repositories are configurable');
  });

  test('reads the action from command and args like the binary does', () => {
    assert.equal(actionOf(kc()).action, 'install');
    assert.equal(actionOf(kc({ command: ['/usr/bin/kata-deploy', '--log-level', 'debug', 'install'] })).action, 'install');
    assert.equal(actionOf(kc({ command: undefined, args: ['cleanup'] })).action, 'cleanup', 'the entrypoint is the binary');
    assert.equal(actionOf(kc({ command: undefined })).action, 'missing');
    assert.equal(actionOf(kc({ command: ['/usr/bin/kata-deploy', 'install-stage-cri'] })).action, 'staged');
  });

  test('the environment: NODE_NAME from the downward API, the instance marker from MULTI_INSTALL_SUFFIX', () => {
    assert.deepEqual(installerConfig(pod(), kc()), { nodeName: 'worker-0', instanceLabel: MARK, daemonSetName: 'kata-deploy' });
    const c = kc({
      env: [
        { name: 'NODE_NAME', value: 'n1' },
        { name: 'MULTI_INSTALL_SUFFIX', value: 'dev' },
        { name: 'DAEMONSET_NAME', value: 'kd-dev' },
      ],
    });
    assert.deepEqual(installerConfig(pod(c), c), {
      nodeName: 'n1',
      suffix: 'dev',
      instanceLabel: 'kata-deploy.katacontainers.io/dev',
      daemonSetName: 'kd-dev',
    });
  });

  test('claim only sets absent labels; install sets both true', () => {
    assert.deepEqual(claimLabels({}, MARK), { [KR]: 'false', [MARK]: 'false' });
    assert.deepEqual(claimLabels({ [KR]: 'true' }, MARK), { [MARK]: 'false' }, 'a working node is never withdrawn');
    assert.deepEqual(installedLabels({ [KR]: 'false', [MARK]: 'false' }, MARK), { [KR]: 'true', [MARK]: 'true' });
  });

  test('release: the shared label follows the other installs’ markers', () => {
    assert.deepEqual(releaseLabels({ [KR]: 'true', [MARK]: 'true' }, MARK), { [MARK]: null, [KR]: null });
    const other = 'kata-deploy.katacontainers.io/dev';
    assert.deepEqual(
      releaseLabels({ [KR]: 'true', [MARK]: 'true', [other]: 'true' }, MARK),
      { [MARK]: null },
      'another install serves Kata',
    );
    assert.deepEqual(releaseLabels({ [KR]: 'true', [MARK]: 'true', [other]: 'false' }, MARK), { [MARK]: null, [KR]: 'false' }, 'demoted');
    assert.deepEqual(releaseLabels({ [KR]: 'true', [MARK]: 'true' }, MARK, true), { [MARK]: null }, 'a legacy DaemonSet keeps it');
  });

  test('runtime handlers: kata-<shim> per shim, with the install suffix and the debug variants', () => {
    const env = (vars: Record<string, string>) => kc({ env: Object.entries(vars).map(([name, value]) => ({ name, value })) });
    const c1 = env({ SHIMS_X86_64: 'qemu clh' });
    assert.deepEqual(runtimeHandlersOf(pod(c1), c1, 'amd64'), ['kata-qemu', 'kata-clh']);
    const c2 = env({ SHIMS_X86_64: 'qemu', MULTI_INSTALL_SUFFIX: 'dev', DEBUG: 'true' });
    assert.deepEqual(runtimeHandlersOf(pod(c2), c2, 'amd64'), ['kata-qemu-dev', 'kata-qemu-dev-debug']);
    assert.equal(runtimeHandlersOf(pod(), kc(), 'amd64').length, 20, 'every x86_64 shim by default');
    assert.deepEqual(runtimeHandlersOf(pod(c1), c1, 'arm64'), ['kata-qemu'], 'only the node’s architecture variable is read');
    const base = [{ name: '' }, { name: 'runc' }];
    const added = withHandlers(base, ['kata-qemu', 'runc'], []);
    assert.deepEqual(
      added.map((h) => h.name),
      ['', 'runc', 'kata-qemu'],
    );
    assert.deepEqual(withHandlers(added, [], ['kata-qemu']), base);
  });
});

describe('an installer pod as next steps', () => {
  test('start: claim the node, then label it and turn Ready after installMs', () => {
    const s1 = step({ pod: pod() });
    assert.deepEqual(s1.labels, { [KR]: 'false', [MARK]: 'false' });
    assert.equal(s1.progress?.phase, 'installing');
    assert.equal(s1.report, undefined, 'kwok already reports it running, not Ready');
    assert.equal(s1.requeueAfterMs, 1000);
    const early = step({ pod: pod(), progress: s1.progress, now: 10_500 });
    assert.equal(early.labels, undefined);
    assert.equal(early.requeueAfterMs, 500);
    const done = step({ pod: pod(), progress: s1.progress, now: 11_000, node: node({ [KR]: 'false', [MARK]: 'false' }) });
    assert.deepEqual(done.labels, { [KR]: 'true', [MARK]: 'true' });
    assert.deepEqual(done.report, { kind: 'running', ready: true, restarts: 0, lastError: undefined });
  });

  test('a Ready installer the simulator has not seen end is taken as running; one an etcd restore brought back installs again', () => {
    const ready = {
      ...pod(),
      status: { phase: 'Running', containerStatuses: [{ name: 'kube-kata', ready: true, restartCount: 0 }] },
    } as Pod;
    // A simulator that restarted: the waiter is running, nothing to do.
    const running = step({ pod: ready, node: node({ [KR]: 'true', [MARK]: 'true' }) });
    assert.equal(running.progress?.phase, 'installed');
    assert.equal(running.labels, undefined);
    assert.equal(running.report, undefined);
    // Its object deleted, then restored with its old status: the kubelet starts it afresh (the node's labels
    // are as the restore left them, here without kata-deploy's).
    const again = step({ pod: ready, ended: true });
    assert.equal(again.progress?.phase, 'installing');
    assert.deepEqual(again.labels, { [KR]: 'false', [MARK]: 'false' }, 'it claims the node, as any install does');
    assert.deepEqual(again.report, { kind: 'running', ready: false, restarts: 0 }, 'its new container is not Ready yet');
  });

  test('failure injection: exit 1 with the reason, restarted after the back-off, node left claimed', () => {
    const failing = node({ [KR]: 'false', [MARK]: 'false' }, { [FAIL_NEXT_UPDATE_ANNOTATION]: 'disk full' });
    const s = step({ pod: pod(), node: failing, progress: { phase: 'installing', since: 9_000, restarts: 0 } });
    assert.equal(s.labels, undefined);
    assert.deepEqual(s.report, { kind: 'crashLoop', restarts: 1, error: 'Error: disk full' });
    assert.equal(s.requeueAfterMs, 500);
    const restart = step({ pod: pod(), node: failing, progress: s.progress, now: 10_500 });
    assert.equal(restart.progress?.phase, 'installing');
    assert.equal(restart.report?.kind, 'running');
    const never = step({
      pod: pod(kc(), { restartPolicy: 'Never' }),
      node: failing,
      progress: { phase: 'installing', since: 9_000, restarts: 0 },
    });
    assert.deepEqual(never.report, { kind: 'exited', exitCode: 1, error: 'Error: disk full', restarts: 0 });
    const empty = node({}, { [FAIL_NEXT_UPDATE_ANNOTATION]: '' });
    const d = step({ pod: pod(), node: empty, progress: { phase: 'installing', since: 9_000, restarts: 0 } });
    assert.match(d.report?.kind === 'crashLoop' ? d.report.error : '', /^Error: simulated failure/);
  });

  test('not root (an SCC gave the pod a user from the namespace range): the install cannot write /opt/kata and crash-loops', () => {
    const claimed = node({ [KR]: 'false', [MARK]: 'false' });
    const asUser = (uid: number, where: 'container' | 'pod') => {
      const p = pod(where === 'container' ? kc({ securityContext: { runAsUser: uid } }) : kc());
      if (where === 'pod') (p.spec as { securityContext?: unknown }).securityContext = { runAsUser: uid };
      return p;
    };
    for (const where of ['container', 'pod'] as const) {
      const s = step({ pod: asUser(1000700000, where), node: claimed, progress: { phase: 'installing', since: 9_000, restarts: 0 } });
      assert.equal(s.labels, undefined, `${where}: the node is not labelled`);
      assert.deepEqual(s.report, { kind: 'crashLoop', restarts: 1, error: `Error: ${PERMISSION_DENIED}` });
    }
    const root = step({ pod: asUser(0, 'container'), node: claimed, progress: { phase: 'installing', since: 9_000, restarts: 0 } });
    assert.equal(root.report?.kind, 'running', 'root installs');
  });

  test('termination: a running installer cleans up unless its DaemonSet still selects the node', () => {
    const installed = { phase: 'installed' as const, since: 0, restarts: 0 };
    const labelled = node({ [KR]: 'true', [MARK]: 'true' });
    const s1 = step({ pod: pod(kc(), { deleting: true }), node: labelled, progress: installed });
    assert.equal(s1.progress?.phase, 'cleaning');
    const s2 = step({ pod: pod(kc(), { deleting: true }), node: labelled, progress: s1.progress, now: 10_200 });
    assert.equal(s2.needsDaemonSets, true);
    const s3 = installerStep(
      {
        pod: pod(kc(), { deleting: true }),
        node: labelled,
        progress: s1.progress,
        now: 10_200,
        daemonSets: { ownSelectsNode: false, legacyOtherSelectsNode: false },
      },
      kc(),
      timing,
    );
    assert.deepEqual(s3.labels, { [MARK]: null, [KR]: null });
    assert.deepEqual(s3.report, { kind: 'exited', exitCode: 0, restarts: 0 });
    const restart = installerStep(
      {
        pod: pod(kc(), { deleting: true }),
        node: labelled,
        progress: s1.progress,
        now: 10_200,
        daemonSets: { ownSelectsNode: true, legacyOtherSelectsNode: false },
      },
      kc(),
      timing,
    );
    assert.equal(restart.labels, undefined, 'a rolling restart keeps Kata on the node');
  });

  test('handlers: a reinstall with another shim replaces the install’s own; cleanup removes what it configured', () => {
    const clh = kc({
      env: [
        { name: 'NODE_NAME', value: 'worker-0' },
        { name: 'SHIMS_X86_64', value: 'clh' },
      ],
    });
    const s = installerStep(
      {
        pod: pod(clh),
        node: node(),
        progress: { phase: 'installing', since: 0, restarts: 0 },
        configuredHandlers: ['kata-qemu'],
        now: 10_000,
      },
      clh,
      timing,
    );
    assert.deepEqual(s.handlers, { add: ['kata-clh'], remove: ['kata-qemu'] });
    const end = installerStep(
      {
        pod: pod(clh, { deleting: true }),
        node: node(),
        progress: { phase: 'cleaning', since: 0, restarts: 0 },
        configuredHandlers: ['kata-clh'],
        daemonSets: { ownSelectsNode: false, legacyOtherSelectsNode: false },
        now: 10_000,
      },
      clh,
      timing,
    );
    assert.deepEqual(end.handlers, { add: [], remove: ['kata-clh'] });
  });

  test('termination when the node is gone: cleanup cannot read it and the container still exits 0', () => {
    const s = step({ pod: pod(kc(), { deleting: true }), node: undefined, progress: { phase: 'cleaning', since: 0, restarts: 0 } });
    assert.equal(s.needsDaemonSets, undefined);
    assert.equal(s.labels, undefined);
    assert.deepEqual(s.report, { kind: 'exited', exitCode: 0, restarts: 0 });
  });

  test('termination of a crash-looping installer: no process, no cleanup', () => {
    const s = step({ pod: pod(kc(), { deleting: true }), progress: { phase: 'backoff', since: 0, restarts: 2, error: 'Error: x' } });
    assert.equal(s.labels, undefined);
    assert.deepEqual(s.report, { kind: 'exited', exitCode: 1, error: 'Error: x', restarts: 2 });
  });

  test('a bad command line or a missing NODE_NAME exits at once', () => {
    assert.equal(step({ pod: pod(kc({ command: undefined })) }).report?.kind, 'exited');
    const noNode = kc({ env: [] });
    assert.deepEqual(step({ pod: pod(noNode) }).report, {
      kind: 'exited',
      exitCode: 1,
      error: 'Error: NODE_NAME environment variable is required',
      restarts: 0,
    });
  });

  test('the reported status: the reason reaches the termination message only with FallbackToLogsOnError', () => {
    const report = { kind: 'crashLoop' as const, restarts: 1, error: 'Error: disk full' };
    const s = podStatusFor(pod(), kc(), report, 'now') as { containerStatuses: { lastState: { terminated: { message?: string } } }[] };
    assert.equal(s.containerStatuses[0]?.lastState.terminated.message, 'Error: disk full');
    const plain = kc({ terminationMessagePolicy: 'File' });
    const s2 = podStatusFor(pod(plain), plain, report, 'now') as typeof s;
    assert.equal(s2.containerStatuses[0]?.lastState.terminated.message, undefined);
    const ready = podStatusFor(pod(), kc(), { kind: 'running', ready: true, restarts: 0 }, 'now') as {
      conditions: { type: string; status: string }[];
    };
    assert.deepEqual(
      ready.conditions.map((c) => [c.type, c.status]),
      [
        ['Ready', 'True'],
        ['ContainersReady', 'True'],
      ],
    );
  });
});
