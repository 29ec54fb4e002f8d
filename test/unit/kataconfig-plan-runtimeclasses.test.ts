/**
 * The KataConfig plan's RuntimeClasses with the confidential pass: the extra classes made as planned writes
 * (their overhead, node selector and cleanup finalizer), the refusal state over a finished rollout (a node's
 * failure first), a class no longer wanted kept while pods use it, osc's classes adopted and guarded, and
 * the extra handlers given to the platform.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { confidentialTexts, KATA_CC_OVERHEAD, KATA_CC_RUNTIME_CLASS, RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../src/api/confidential.ts';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { KATACONFIG_FINALIZER } from '../../src/api/names.ts';
import type { ConfidentialPass } from '../../src/controllers/kataconfig/confidential.ts';
import { type KataConfigObserved, planInstall } from '../../src/controllers/kataconfig/plan.ts';
import type { DesiredRuntimeClass } from '../../src/controllers/kataconfig/runtimeclasses.ts';
import type { Node, Pod, RuntimeClass } from '../../src/kube/resources.ts';
import type { NodeRecord, Platform, PlatformInput, PlatformPlan } from '../../src/platform/platform.ts';
import type { PlannedWrite } from '../../src/runtime/applier.ts';

const NOW = new Date('2026-03-01T12:00:00Z');
const EARLIER = '2026-03-01T11:00:00Z';
const LABEL = 'example.com/kata';
const TEE_LABEL = 'example.com/tee';
const config = { id: 'config-a', description: 'with kata' };

const kataConfig = (status: KataConfig['status']): KataConfig =>
  ({ metadata: { name: 'example', uid: 'kc-uid', finalizers: [KATACONFIG_FINALIZER] }, spec: {}, status }) as KataConfig;

const installing = {
  conditions: [{ type: 'InProgress', status: 'True' as const, reason: 'Installing', message: 'x', lastTransitionTime: EARLIER }],
};

const worker = (name: string): Node => ({ metadata: { name, uid: `${name}-uid`, labels: { [TEE_LABEL]: 'true' } } });

const kataCc: DesiredRuntimeClass = {
  name: KATA_CC_RUNTIME_CLASS,
  handler: 'kata-tee',
  overhead: { ...KATA_CC_OVERHEAD, 'example.com/key-slots': '1' },
  nodeSelector: { [LABEL]: 'true', [TEE_LABEL]: 'true' },
};

const pass = (over: Partial<ConfidentialPass> = {}): ConfidentialPass =>
  ({ classes: [kataCc], frozen: [], warnings: [], parsed: {}, tee: { kind: 'none' }, ...over }) as ConfidentialPass;

/** A stand-in platform: every node Installed (or the records given); it keeps the inputs it was given. */
function platform(records: NodeRecord[] = [{ node: 'worker-0', phase: 'Installed', assigned: config, active: config, error: '' }]) {
  const inputs: PlatformInput<unknown>[] = [];
  const none = (input: PlatformInput<unknown>): PlatformPlan => {
    inputs.push(input);
    return { steps: [], pending: 0 };
  };
  const p: Platform<unknown> = {
    name: 'example',
    supportsPeerPods: true,
    watch: () => ({ caches: [], observe: () => ({}) }),
    select: (nodes) => ({ nodes: nodes.map((n) => n.metadata.name ?? '').sort(), noEligibleNodes: false }),
    records: () => records,
    rolloutComplete: () => true,
    installing: () => [],
    installPlan: none,
    uninstallPlan: none,
    uninstallComplete: () => false,
    cleanupPlan: none,
    leftoversPlan: none,
    runtimeClass: () => ({ handler: 'kata', nodeSelector: { [LABEL]: 'true' } }),
    kataNodeSelector: () => ({ [LABEL]: 'true' }),
    kataNodeTolerations: () => [],
  };
  return { p, inputs };
}

const observed = (kc: KataConfig, p: Platform<unknown>, over: Partial<KataConfigObserved> = {}): KataConfigObserved => ({
  kataConfig: kc,
  nodes: [worker('worker-0')],
  kataNodes: [],
  platform: p,
  platformObserved: {},
  pods: [],
  soakMs: 600_000,
  blockedRecheckMs: 15_000,
  eligibilityRecheckMs: 30_000,
  ...over,
});

const ownedClass = (name: string, over: Partial<RuntimeClass['metadata']> = {}, handler = 'kata-tee'): RuntimeClass => ({
  metadata: {
    name,
    uid: `${name}-uid`,
    resourceVersion: '7',
    ownerReferences: [{ apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig', name: 'example', uid: 'kc-uid' }],
    finalizers: [RUNTIME_CLASS_CLEANUP_FINALIZER],
    ...over,
  },
  handler,
  scheduling: { nodeSelector: kataCc.nodeSelector },
});

const pod = (name: string, runtimeClassName: string): Pod => ({
  metadata: { name, namespace: 'default' },
  spec: { runtimeClassName, containers: [] },
  status: { phase: 'Running' },
});

describe('KataConfig plan: RuntimeClasses with the confidential pass', () => {
  test('rollout done: kata and kata-cc made as planned creates, with overhead, node selector and the cleanup finalizer', () => {
    const { p, inputs } = platform();
    const plan = planInstall(
      observed(kataConfig(installing), p, { confidential: pass(), extraHandlers: ['kata-tee'], runtimeClasses: [] }),
      NOW,
    );
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata', KATA_CC_RUNTIME_CLASS]);
    assert.deepEqual(plan.status?.runtimeClasses, ['kata', KATA_CC_RUNTIME_CLASS]);
    const creates = plan.runtimeClassWrites.filter((w): w is Extract<PlannedWrite, { op: 'create' }> => w.op === 'create');
    assert.equal(creates.length, 2);
    const cc = creates.find((w) => w.object.metadata.name === KATA_CC_RUNTIME_CLASS)?.object as RuntimeClass;
    assert.equal(cc.handler, 'kata-tee');
    assert.deepEqual(cc.overhead, { podFixed: kataCc.overhead });
    assert.deepEqual(cc.scheduling, { nodeSelector: kataCc.nodeSelector });
    assert.deepEqual(cc.metadata.finalizers, [RUNTIME_CLASS_CLEANUP_FINALIZER]);
    assert.equal(cc.metadata.ownerReferences?.[0]?.uid, 'kc-uid');
    assert.deepEqual(inputs[0]?.extraHandlers, ['kata-tee'], 'the platform is given the extra handlers');
  });

  test('a confidential refusal is the status over a finished rollout; kata is still made', () => {
    const { p } = platform();
    const refusal = { status: 'True' as const, reason: 'Failed' as const, message: confidentialTexts.noTee() };
    const plan = planInstall(observed(kataConfig(installing), p, { confidential: pass({ classes: [], refusal }) }), NOW);
    assert.deepEqual(plan.status?.inProgress, refusal);
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata']);
  });

  test("a node's failure comes before the refusal", () => {
    const { p } = platform([{ node: 'worker-0', phase: 'FailedToInstall', assigned: config, error: 'the install failed' }]);
    const refusal = { status: 'False' as const, reason: 'UnsupportedOCPVersion' as const, message: 'too old' };
    const plan = planInstall(observed(kataConfig(installing), p, { confidential: pass({ classes: [], refusal }) }), NOW);
    assert.equal(plan.status?.inProgress.reason, 'Failed');
    assert.notEqual(plan.status?.inProgress.message, 'too old');
    assert.deepEqual(plan.ensureRuntimeClasses, []);
  });

  test('a class no longer wanted waits for its pods (an event, a recheck); once unused it is deleted', () => {
    const { p } = platform();
    const kc = kataConfig({ ...installing, runtimeClasses: ['kata', KATA_CC_RUNTIME_CLASS] });
    const rcs = [ownedClass('kata', {}, 'kata'), ownedClass(KATA_CC_RUNTIME_CLASS)];
    const used = planInstall(
      observed(kc, p, { confidential: pass({ classes: [] }), runtimeClasses: rcs, pods: [pod('app', KATA_CC_RUNTIME_CLASS)] }),
      NOW,
    );
    assert.deepEqual(used.deleteRuntimeClasses, []);
    assert.deepEqual(used.status?.runtimeClasses, ['kata', KATA_CC_RUNTIME_CLASS]);
    assert.deepEqual(used.events, [
      { type: 'Warning', reason: 'RuntimeClassInUse', note: confidentialTexts.removalBlocked(KATA_CC_RUNTIME_CLASS, ['default/app']) },
    ]);
    assert.equal(used.requeueAfterMs, 15_000);
    const unused = planInstall(observed(kc, p, { confidential: pass({ classes: [] }), runtimeClasses: rcs }), NOW);
    assert.deepEqual(unused.deleteRuntimeClasses, [KATA_CC_RUNTIME_CLASS]);
    assert.deepEqual(unused.status?.runtimeClasses, ['kata']);
    assert.deepEqual(unused.events, []);
  });

  test('kata-remote of ours that the status no longer names (etcd restored, a status written from a stale cache) is deleted once peer pods are off', () => {
    const { p } = platform();
    const kc = kataConfig({ ...installing, runtimeClasses: ['kata'] });
    const rcs = [ownedClass('kata', {}, 'kata'), ownedClass('kata-remote', {}, 'kata-remote')];
    const plan = planInstall(observed(kc, p, { confidential: pass({ classes: [] }), runtimeClasses: rcs }), NOW);
    assert.deepEqual(plan.deleteRuntimeClasses, ['kata-remote']);
    assert.deepEqual(plan.status?.runtimeClasses, ['kata']);
    // One someone else made is not ours; one already going is not deleted again.
    const others = [ownedClass('kata', {}, 'kata'), ownedClass('kata-remote', { ownerReferences: [] }, 'kata-remote')];
    assert.deepEqual(
      planInstall(observed(kc, p, { confidential: pass({ classes: [] }), runtimeClasses: others }), NOW).deleteRuntimeClasses,
      [],
    );
    const going = [ownedClass('kata', {}, 'kata'), ownedClass('kata-remote', { deletionTimestamp: EARLIER }, 'kata-remote')];
    assert.deepEqual(
      planInstall(observed(kc, p, { confidential: pass({ classes: [] }), runtimeClasses: going }), NOW).deleteRuntimeClasses,
      [],
    );
  });

  test('a frozen class (its gate unreadable) is neither made nor removed', () => {
    const { p } = platform();
    const kc = kataConfig({ ...installing, runtimeClasses: ['kata', KATA_CC_RUNTIME_CLASS] });
    const plan = planInstall(observed(kc, p, { confidential: pass({ classes: [], frozen: [KATA_CC_RUNTIME_CLASS] }) }), NOW);
    assert.deepEqual(plan.deleteRuntimeClasses, []);
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata']);
  });

  test('a class of ours with another handler is deleted first, to be made again once gone', () => {
    const { p } = platform();
    const kc = kataConfig({ ...installing, runtimeClasses: ['kata', KATA_CC_RUNTIME_CLASS] });
    const rcs = [ownedClass('kata', {}, 'kata'), ownedClass(KATA_CC_RUNTIME_CLASS, {}, 'kata-other-tee')];
    const plan = planInstall(observed(kc, p, { confidential: pass(), runtimeClasses: rcs }), NOW);
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata']);
    assert.deepEqual(plan.deleteRuntimeClasses, [KATA_CC_RUNTIME_CLASS]);
  });

  test('existing classes: ours gets the finalizer (pinned to its version) and the owner in effect; one of others is left', () => {
    const { p } = platform();
    const unguarded = ownedClass(KATA_CC_RUNTIME_CLASS, {
      finalizers: ['example.com/other'],
      ownerReferences: [{ apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig', name: 'old', uid: 'old-uid' }],
    });
    const foreign: RuntimeClass = { metadata: { name: 'kata', uid: 'x' }, handler: 'kata' };
    const plan = planInstall(observed(kataConfig(installing), p, { confidential: pass(), runtimeClasses: [foreign, unguarded] }), NOW);
    assert.deepEqual(plan.ensureRuntimeClasses, ['kata', KATA_CC_RUNTIME_CLASS]);
    assert.equal(plan.runtimeClassWrites.length, 1, 'nothing is written to a class osc did not make');
    const w = plan.runtimeClassWrites[0];
    assert.ok(w?.op === 'patch' && w.name === KATA_CC_RUNTIME_CLASS);
    const patch = w.patch as { metadata: { finalizers: string[]; resourceVersion: string; ownerReferences: { uid: string }[] } };
    assert.deepEqual(patch.metadata.finalizers, ['example.com/other', RUNTIME_CLASS_CLEANUP_FINALIZER]);
    assert.equal(patch.metadata.resourceVersion, '7');
    assert.deepEqual(
      patch.metadata.ownerReferences.map((r) => r.uid),
      ['kc-uid'],
    );
    // Once the cache shows it, nothing more is written.
    const guarded = ownedClass(KATA_CC_RUNTIME_CLASS);
    const settled = planInstall(observed(kataConfig(installing), p, { confidential: pass(), runtimeClasses: [foreign, guarded] }), NOW);
    assert.deepEqual(settled.runtimeClassWrites, []);
  });
});
