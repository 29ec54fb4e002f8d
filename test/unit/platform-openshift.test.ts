import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'smol-toml';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { MachineConfig, MachineConfigPool } from '../../src/api/openshift.ts';
import type { Node } from '../../src/kube/resources.ts';
import { createPlatform, discoverPlatform } from '../../src/platform/index.ts';
import { crioDropInPath, kataConfigPath } from '../../src/platform/openshift/confidential.ts';
import { desiredKataPool } from '../../src/platform/openshift/machineconfig.ts';
import { LABELS_PER_PASS, type OpenShiftObserved } from '../../src/platform/openshift/plan.ts';
import { openShiftPlatform } from '../../src/platform/openshift/platform.ts';
import type { PlatformInput, PlatformWrite } from '../../src/platform/platform.ts';

const KATA_TARGET = 'rendered-kata-oc-aaa';
const WORKER_TARGET = 'rendered-worker-bbb';

function node(
  name: string,
  opts: { roles?: string[]; labels?: Record<string, string>; state?: string; current?: string; desired?: string; reason?: string } = {},
): Node {
  const labels: Record<string, string> = { ...opts.labels };
  for (const r of opts.roles ?? ['worker']) labels[`node-role.kubernetes.io/${r}`] = '';
  const a: Record<string, string> = {};
  if (opts.state) a['machineconfiguration.openshift.io/state'] = opts.state;
  if (opts.current) a['machineconfiguration.openshift.io/currentConfig'] = opts.current;
  if (opts.desired ?? opts.current) a['machineconfiguration.openshift.io/desiredConfig'] = opts.desired ?? opts.current ?? '';
  if (opts.reason) a['machineconfiguration.openshift.io/reason'] = opts.reason;
  return { metadata: { name, labels, annotations: a } };
}

const pool = (name: string, target: string, sources: string[]): MachineConfigPool => ({
  metadata: { name, generation: 1, labels: { [`pools.operator.machineconfiguration.openshift.io/${name}`]: '' } },
  spec: { configuration: { name: target, source: sources.map((s) => ({ name: s })) } },
  status: {
    observedGeneration: 1,
    conditions: [
      { type: 'Updated', status: 'True' },
      { type: 'Updating', status: 'False' },
    ],
  },
});

const observed: OpenShiftObserved = {
  pools: [
    pool('kata-oc', KATA_TARGET, ['00-worker', '50-enable-sandboxed-containers-extension']),
    pool('worker', WORKER_TARGET, ['00-worker']),
  ],
};
const kc: KataConfig = { metadata: { name: 'example-kataconfig', uid: 'u1' }, spec: { logLevel: 'info' } };
const platform = openShiftPlatform();
const input = (
  nodes: Node[],
  selected: string[],
  over: Partial<PlatformInput<OpenShiftObserved>> = {},
): PlatformInput<OpenShiftObserved> => ({
  observed,
  nodes,
  kataConfig: kc,
  selected: new Set(selected),
  now: new Date(),
  soakMs: 600_000,
  ...over,
});
const describeWrite = (w: PlatformWrite) =>
  `${w.op} ${w.resource.kind}/${w.op === 'create' ? w.object.metadata.name : w.name}${w.op === 'patch' ? ` ${JSON.stringify(w.patch)}` : ''}`;

describe('OpenShift: the MCO view as per-node records', () => {
  test('assigned is the desiredConfig, active and lastKnownGood the currentConfig, described by pool and kata', () => {
    const [r] = platform.records(
      input([node('worker-0', { state: 'Working', current: WORKER_TARGET, desired: KATA_TARGET })], ['worker-0']),
    );
    assert.deepEqual(r, {
      node: 'worker-0',
      phase: 'Installing',
      assigned: { id: KATA_TARGET, description: 'rendered MachineConfig of pool kata-oc, with kata' },
      active: { id: WORKER_TARGET, description: 'rendered MachineConfig of pool worker, without kata' },
      // The MCO keeps a node whose update fails on its currentConfig: its own last known good.
      lastKnownGood: { id: WORKER_TARGET, description: 'rendered MachineConfig of pool worker, without kata' },
      error: '',
    });
  });

  test('a Degraded node: the MCO reason is the error, in the failed phase of its direction', () => {
    const degraded = node('worker-0', { state: 'Degraded', current: WORKER_TARGET, desired: KATA_TARGET, reason: 'disk full' });
    assert.deepEqual(
      platform.records(input([degraded], ['worker-0'])).map((r) => [r.phase, r.error]),
      [['FailedToInstall', 'disk full']],
    );
    const leaving = node('worker-0', { state: 'Degraded', current: KATA_TARGET, desired: WORKER_TARGET, reason: 'disk full' });
    assert.deepEqual(
      platform.records(input([leaving], [])).map((r) => [r.phase, r.error]),
      [['FailedToUninstall', 'disk full']],
    );
  });

  test('a node neither selected nor carrying kata has no record (its KataNode goes); nodes without MCO annotations have no configs', () => {
    assert.deepEqual(platform.records(input([node('worker-0', { state: 'Done', current: WORKER_TARGET })], [])), []);
    const [bare] = platform.records(input([node('worker-0')], ['worker-0']));
    assert.deepEqual(bare, { node: 'worker-0', phase: 'WaitingToInstall', lastKnownGood: null, error: '' });
  });

  test('rollout complete only once the kata pool target carries our MachineConfig (and CRI-O config when asked)', () => {
    assert.equal(platform.rolloutComplete(input([], ['worker-0'])), true);
    const debug = { ...kc, spec: { logLevel: 'debug' as const } };
    assert.equal(platform.rolloutComplete(input([], ['worker-0'], { kataConfig: debug })), false);
    assert.equal(platform.rolloutComplete(input([], [], { kataConfig: debug })), true, 'nothing selected: nothing to carry');
  });

  test('installing: the labelled nodes the MCO is updating, whatever the selection', () => {
    const nodes = [
      node('worker-0', { labels: { 'node-role.kubernetes.io/kata-oc': '' }, state: 'Working', current: WORKER_TARGET }),
      node('worker-1', { state: 'Working', current: 'rendered-worker-old' }),
    ];
    assert.deepEqual(platform.installing(input(nodes, [])), ['worker-0']);
  });
});

describe('OpenShift: write plans', () => {
  test('install: MachineConfig, then the pool, then no CRI-O config at info; the labels detached, after them', () => {
    const nodes = [node('worker-0'), node('worker-1', { labels: { 'node-role.kubernetes.io/kata-oc': '' } }), node('worker-2')];
    const fresh: OpenShiftObserved = { pools: observed.pools.filter((p) => p.metadata.name === 'worker') };
    const plan = platform.installPlan(input(nodes, ['worker-0', 'worker-1'], { observed: fresh }));
    assert.deepEqual(
      plan.steps.map((s) => s.map(describeWrite)),
      [['create MachineConfig/50-enable-sandboxed-containers-extension'], ['create MachineConfigPool/kata-oc']],
    );
    assert.deepEqual(plan.detached?.map(describeWrite), [
      'patch Node/worker-0 {"metadata":{"labels":{"node-role.kubernetes.io/kata-oc":""}}}',
    ]);
    assert.equal(plan.pending, 0);
    const mc = plan.steps[0]?.[0];
    assert.ok(mc?.op === 'create');
    assert.deepEqual(
      mc.object.metadata.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['KataConfig', 'example-kataconfig', 'u1']],
    );
  });

  test('install with everything in place writes nothing', () => {
    const desired = platform.installPlan(input([], [], { observed: { pools: [] } }));
    const mcWrite = desired.steps[0]?.[0];
    const poolWrite = desired.steps[1]?.[0];
    assert.ok(mcWrite?.op === 'create' && poolWrite?.op === 'create');
    const inPlace: OpenShiftObserved = {
      pools: [...observed.pools.filter((p) => p.metadata.name !== 'kata-oc'), poolWrite.object as MachineConfigPool],
      machineConfig: mcWrite.object as OpenShiftObserved['machineConfig'],
    };
    const labelled = node('worker-0', { labels: { 'node-role.kubernetes.io/kata-oc': '' } });
    assert.deepEqual(platform.installPlan(input([labelled], ['worker-0'], { observed: inPlace })), { steps: [], pending: 0 });
  });

  test('labels go in batches: the rest is pending, so that status is written in between', () => {
    const nodes = Array.from({ length: LABELS_PER_PASS + 6 }, (_, i) => node(`worker-${i}`));
    const plan = platform.installPlan(
      input(
        nodes,
        nodes.map((n) => n.metadata.name ?? ''),
      ),
    );
    assert.equal(plan.detached?.length, LABELS_PER_PASS);
    assert.equal(plan.pending, 6);
  });

  test('a log level other than info makes kata-crio-config; back at info it is deleted', () => {
    const debug = { ...kc, spec: { logLevel: 'debug' as const } };
    const plan = platform.installPlan(input([], [], { kataConfig: debug }));
    assert.deepEqual(plan.steps.at(-1)?.map(describeWrite), ['create ContainerRuntimeConfig/kata-crio-config']);
    const withCrio = { ...observed, crioConfig: { metadata: { name: 'kata-crio-config' }, spec: {} } } as OpenShiftObserved;
    assert.deepEqual(
      platform
        .installPlan(input([], [], { observed: withCrio }))
        .steps.at(-1)
        ?.map(describeWrite),
      ['delete ContainerRuntimeConfig/kata-crio-config'],
    );
  });

  test('uninstall: labels off and the CRI-O config gone; compact clusters delete the MachineConfig instead', () => {
    const withCrio = { ...observed, crioConfig: { metadata: { name: 'kata-crio-config' }, spec: {} } } as OpenShiftObserved;
    const labelled = node('worker-0', { labels: { 'node-role.kubernetes.io/kata-oc': '' } });
    assert.deepEqual(
      platform.uninstallPlan(input([labelled], [], { observed: withCrio })).steps.map((s) => s.map(describeWrite)),
      [
        ['patch Node/worker-0 {"metadata":{"labels":{"node-role.kubernetes.io/kata-oc":null}}}'],
        ['delete ContainerRuntimeConfig/kata-crio-config'],
      ],
    );
    const masters = [node('master-0', { roles: ['master', 'worker'] })];
    const withMc = {
      ...observed,
      machineConfig: { metadata: { name: '50-enable-sandboxed-containers-extension' }, spec: {} },
    } as OpenShiftObserved;
    assert.deepEqual(
      platform.uninstallPlan(input(masters, [], { observed: withMc })).steps.map((s) => s.map(describeWrite)),
      [['delete MachineConfig/50-enable-sandboxed-containers-extension']],
    );
  });

  test('leftovers: only what a KataConfig owned, and the pool osc made once no node runs its configuration', () => {
    const owned = {
      metadata: {
        name: '50-enable-sandboxed-containers-extension',
        ownerReferences: [{ kind: 'KataConfig', apiVersion: 'v1', name: 'x', uid: 'u' }],
      },
      spec: {},
    };
    const madeByOsc = (p: MachineConfigPool): MachineConfigPool =>
      p.metadata.name === 'kata-oc'
        ? { ...p, metadata: { ...p.metadata, annotations: { 'kataconfiguration.openshift.io/created-by-operator': 'true' } } }
        : p;
    const o = { pools: observed.pools.map(madeByOsc), machineConfig: owned } as OpenShiftObserved;
    const back = node('worker-0', { state: 'Done', current: WORKER_TARGET });
    assert.deepEqual(
      platform.leftoversPlan(input([back], [], { observed: o })).steps.map((s) => s.map(describeWrite)),
      [['delete MachineConfig/50-enable-sandboxed-containers-extension'], ['delete MachineConfigPool/kata-oc']],
    );
    const stillOnKata = node('worker-0', { state: 'Done', current: KATA_TARGET });
    assert.deepEqual(
      platform.leftoversPlan(input([stillOnKata], [], { observed: { pools: o.pools } })).steps,
      [],
      'the pool waits for the node',
    );
    assert.deepEqual(
      platform.leftoversPlan(input([back], [], { observed })).steps,
      [],
      'a pool an administrator made ahead (no created-by-operator annotation) stays',
    );
  });

  test('the pool osc creates says so, and an administrator-made pool is adopted as it is', () => {
    const none = { pools: observed.pools.filter((p) => p.metadata.name !== 'kata-oc') };
    const create = platform
      .installPlan(input([node('worker-0')], ['worker-0'], { observed: none }))
      .steps.flat()
      .find((w) => w.op === 'create' && w.resource.kind === 'MachineConfigPool');
    assert.equal(
      (create as { object: MachineConfigPool } | undefined)?.object.metadata.annotations?.[
        'kataconfiguration.openshift.io/created-by-operator'
      ],
      'true',
    );
    const made = desiredKataPool();
    const byAdmin: MachineConfigPool = {
      ...made,
      metadata: { name: 'kata-oc', labels: made.metadata.labels },
      spec: { ...made.spec, maxUnavailable: '10%' },
    };
    const pools = [...none.pools, byAdmin];
    const adopted = platform.installPlan(input([node('worker-0')], ['worker-0'], { observed: { pools } })).steps.flat();
    assert.equal(
      adopted.some((w) => w.resource.kind === 'MachineConfigPool'),
      false,
      'an existing pool with the right selectors is not written',
    );
  });

  test('uninstall complete: at once on a cluster with workers; on a compact one, once the master pool dropped kata and settled', () => {
    assert.equal(platform.uninstallComplete(input([node('worker-0')], [])), true);
    const masters = [node('master-0', { roles: ['master', 'worker'] })];
    const masterWithKata = pool('master', 'rendered-master-k', ['00-master', '50-enable-sandboxed-containers-extension']);
    const masterWithout = pool('master', 'rendered-master-n', ['00-master']);
    assert.equal(platform.uninstallComplete(input(masters, [], { observed: { pools: [masterWithKata] } })), false);
    assert.equal(platform.uninstallComplete(input(masters, [], { observed: { pools: [masterWithout] } })), true);
  });
});

describe('OpenShift: the confidential handlers MachineConfig', () => {
  const CONFIDENTIAL = '51-sandboxed-containers-confidential';
  const files = (mc: MachineConfig) =>
    Object.fromEntries(
      ((mc.spec.config as { storage: { files: { path: string; mode: number; contents: { source: string } }[] } }).storage.files ?? []).map(
        (f) => [f.path, { mode: f.mode, body: Buffer.from(f.contents.source.split(',')[1] ?? '', 'base64').toString() }],
      ),
    );
  const createdConfidential = (over: Partial<PlatformInput<OpenShiftObserved>>) =>
    platform
      .installPlan(input([node('worker-0')], ['worker-0'], over))
      .steps.flat()
      .find((w) => w.op === 'create' && w.object.metadata.name === CONFIDENTIAL);

  test("a class that needs kata-tdx: a CRI-O entry for the handler and kata's TDX configuration, on the kata pool, beside the extension", () => {
    const plan = platform.installPlan(input([node('worker-0')], ['worker-0'], { extraHandlers: ['kata-nvidia-gpu', 'kata-tdx'] }));
    // Beside the extension, before the pool: the pool's first rendering already has the handlers.
    assert.deepEqual(plan.steps[0]?.map(describeWrite), [
      'create MachineConfig/50-enable-sandboxed-containers-extension',
      `create MachineConfig/${CONFIDENTIAL}`,
    ]);
    const write = plan.steps[0]?.[1];
    assert.ok(write?.op === 'create');
    const mc = write.object as MachineConfig;
    assert.equal(mc.metadata.labels?.['machineconfiguration.openshift.io/role'], 'kata-oc');
    assert.deepEqual(
      mc.metadata.ownerReferences?.map((o) => o.kind),
      ['KataConfig'],
    );
    const f = files(mc);
    // Only the TEE handler: the GPU handler is not this MachineConfig's.
    assert.deepEqual(Object.keys(f).sort(), [crioDropInPath('kata-tdx'), kataConfigPath('kata-tdx')].sort());
    const crio = parse(f[crioDropInPath('kata-tdx')]?.body ?? '') as {
      crio: { runtime: { runtimes: Record<string, Record<string, unknown>> } };
    };
    const entry = crio.crio.runtime.runtimes['kata-tdx'];
    assert.equal(entry?.runtime_type, 'vm');
    assert.equal(entry?.runtime_config_path, '/etc/kata-containers/kata-tdx/configuration.toml');
    assert.deepEqual(entry?.allowed_annotations, ['io.katacontainers.*']);
    const kata = parse(f[kataConfigPath('kata-tdx')]?.body ?? '') as { hypervisor: { qemu: Record<string, unknown> } };
    assert.equal(kata.hypervisor.qemu.confidential_guest, true);
    assert.match(String(kata.hypervisor.qemu.firmware), /inteltdx/);
    assert.ok((kata.hypervisor.qemu.enable_annotations as string[]).includes('cc_init_data'), 'initdata may reach the guest');
    assert.equal(f[kataConfigPath('kata-tdx')]?.mode, 0o644);
  });

  test('SEV-SNP gets its own firmware and guest switch; on a compact cluster the MachineConfig goes to the master pool', () => {
    const snp = createdConfidential({ extraHandlers: ['kata-snp'] });
    assert.ok(snp?.op === 'create');
    const kata = parse(files(snp.object as MachineConfig)[kataConfigPath('kata-snp')]?.body ?? '') as {
      hypervisor: { qemu: Record<string, unknown> };
    };
    assert.equal(kata.hypervisor.qemu.sev_snp_guest, true);
    assert.match(String(kata.hypervisor.qemu.firmware), /amdsev/);
    const compact = platform
      .installPlan(input([node('master-0', { roles: ['master', 'worker'] })], ['master-0'], { extraHandlers: ['kata-snp'] }))
      .steps.flat()
      .find((w) => w.op === 'create' && w.object.metadata.name === CONFIDENTIAL);
    assert.equal(compact?.op === 'create' && compact.object.metadata.labels?.['machineconfiguration.openshift.io/role'], 'master');
  });

  test('no handler needed: none made, and one left behind deleted; in place, nothing written; another TEE rewrites it', () => {
    assert.equal(createdConfidential({}), undefined);
    assert.equal(createdConfidential({ extraHandlers: ['kata-nvidia-gpu'] }), undefined, 'a GPU class alone needs no TEE configuration');
    const made = createdConfidential({ extraHandlers: ['kata-tdx'] });
    assert.ok(made?.op === 'create');
    const present = { ...observed, confidentialMachineConfig: made.object as MachineConfig };
    const labelled = node('worker-0', { labels: { 'node-role.kubernetes.io/kata-oc': '' } });
    const ours = (extraHandlers: string[]) =>
      platform
        .installPlan(input([labelled], ['worker-0'], { observed: present, extraHandlers }))
        .steps.flat()
        .filter((w) => (w.op === 'create' ? w.object.metadata.name : w.name) === CONFIDENTIAL);
    assert.deepEqual(ours(['kata-tdx']), [], 'in place: not written');
    assert.deepEqual(ours([]).map(describeWrite), [`delete MachineConfig/${CONFIDENTIAL}`]);
    const rewritten = ours(['kata-snp']);
    assert.equal(rewritten.length, 1);
    assert.equal(rewritten[0]?.op, 'patch');
  });

  test('the rollout is complete only once the kata pool renders the handlers exactly while a class needs them', () => {
    const withTee = pool('kata-oc', 'rendered-kata-oc-ccc', ['00-worker', '50-enable-sandboxed-containers-extension', CONFIDENTIAL]);
    const workerPool = observed.pools.filter((p) => p.metadata.name === 'worker');
    const on = (p: MachineConfigPool, extraHandlers: string[]) =>
      platform.rolloutComplete(input([], ['worker-0'], { observed: { pools: [...workerPool, p] }, extraHandlers }));
    assert.equal(on(observed.pools[0] as MachineConfigPool, ['kata-tdx']), false, 'not rendered yet: the nodes are still to roll');
    assert.equal(on(withTee, ['kata-tdx']), true);
    assert.equal(on(withTee, []), false, 'no longer needed: the nodes roll back first');
    // A node on the pool's previous target is not done with the handlers.
    const w0 = node('worker-0', { labels: { 'node-role.kubernetes.io/kata-oc': '' }, state: 'Done', current: KATA_TARGET });
    const records = platform.records(
      input([w0], ['worker-0'], { observed: { pools: [...workerPool, withTee] }, extraHandlers: ['kata-tdx'] }),
    );
    assert.equal(records[0]?.phase, 'WaitingToInstall');
  });

  test('uninstall and cleanup: compact clusters drop the handlers with CRI-O, before the extension; cleanup and leftovers take it', () => {
    const owner = [{ kind: 'KataConfig', apiVersion: 'v1', name: 'x', uid: 'u' }];
    const mc = { metadata: { name: CONFIDENTIAL, ownerReferences: owner }, spec: {} } as MachineConfig;
    const ext = { metadata: { name: '50-enable-sandboxed-containers-extension', ownerReferences: owner }, spec: {} } as MachineConfig;
    const masters = [node('master-0', { roles: ['master', 'worker'] })];
    const o = { ...observed, machineConfig: ext, confidentialMachineConfig: mc };
    assert.deepEqual(
      platform.uninstallPlan(input(masters, [], { observed: o })).steps.map((s) => s.map(describeWrite)),
      [[`delete MachineConfig/${CONFIDENTIAL}`], ['delete MachineConfig/50-enable-sandboxed-containers-extension']],
    );
    assert.ok(
      platform
        .cleanupPlan(input([], [], { observed: o }))
        .steps.flat()
        .some((w) => w.op === 'delete' && w.name === CONFIDENTIAL),
    );
    assert.ok(
      platform
        .leftoversPlan(input([node('worker-0')], [], { observed: o }))
        .steps.flat()
        .some((w) => w.op === 'delete' && w.name === CONFIDENTIAL),
    );
    const masterWithTee = pool('master', 'rendered-master-t', ['00-master', CONFIDENTIAL]);
    assert.equal(
      platform.uninstallComplete(input(masters, [], { observed: { pools: [masterWithTee] } })),
      false,
      'the masters still render the handlers',
    );
  });
});

describe('OpenShift: RuntimeClass and where the kata nodes are', () => {
  const workers = [node('master-0', { roles: ['master'] }), node('worker-0')];
  const compact = [node('master-0', { roles: ['master', 'worker'] })];

  test('the kata-oc nodes, or the masters (tolerating their taint) on a compact cluster', () => {
    assert.deepEqual(platform.kataNodeSelector(workers), { 'node-role.kubernetes.io/kata-oc': '' });
    assert.deepEqual(platform.kataNodeTolerations(workers), []);
    assert.deepEqual(platform.kataNodeSelector(compact), { 'node-role.kubernetes.io/master': '' });
    assert.deepEqual(platform.kataNodeTolerations(compact), [
      { key: 'node-role.kubernetes.io/master', operator: 'Exists', effect: 'NoSchedule' },
    ]);
  });

  test("RuntimeClasses: handler named after the class, the kata nodes, OpenShift's overhead (overridable)", () => {
    assert.deepEqual(platform.runtimeClass('kata', workers), {
      handler: 'kata',
      nodeSelector: { 'node-role.kubernetes.io/kata-oc': '' },
      overhead: { memory: '350Mi', cpu: '250m' },
    });
    assert.deepEqual(platform.runtimeClass('kata-remote', compact).overhead, { memory: '120Mi', cpu: '250m' });
    assert.deepEqual(openShiftPlatform({ overhead: { kata: { memory: '1Gi', cpu: '1' } } }).runtimeClass('kata', workers).overhead, {
      memory: '1Gi',
      cpu: '1',
    });
  });
});

describe('choosing the platform', () => {
  test('discovery: OpenShift exactly when the MCO API group is served', () => {
    assert.equal(discoverPlatform(new Set(['apps', 'machineconfiguration.openshift.io'])), 'openshift');
    assert.equal(discoverPlatform(new Set(['apps', 'config.openshift.io'])), 'kubernetes');
  });

  test('by name: openshift is built in; a platform missing from the build is refused with the flag to use', async () => {
    assert.equal((await createPlatform('openshift')).name, 'openshift');
    const { platformNames } = await import('../../src/platform/index.ts');
    if (platformNames().includes('kubernetes')) return;
    await assert.rejects(createPlatform('kubernetes'), /the kubernetes platform is not available in this build of osc: .*--distribution/);
  });
});
