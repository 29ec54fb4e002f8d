import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { confidentialTexts, RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../src/api/confidential.ts';
import { confidentialOutlook, gateProblemTexts, renderConfidential, summarizeConfidential } from '../../src/api/confidential-summary.ts';
import { DEFAULT_FEATURE_GATES, type DeploymentMode, featureGateTexts, parseFeatureGates } from '../../src/api/featuregates.ts';
import type { ClusterVersion } from '../../src/api/openshift.ts';
import { checkVersion, detectTee } from '../../src/api/tee.ts';
import { releaseChanged, releaseOf } from '../../src/controllers/kataconfig/confidential.ts';
import { activePodsUsing } from '../../src/controllers/kataconfig/runtimeclass-cleanup.ts';
import { type ExtraClassesInput, extraHandlers, extraRuntimeClasses } from '../../src/controllers/kataconfig/runtimeclasses.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import { modeMatches, platformForMode } from '../../src/platform/index.ts';
import { configId, installerConfig, installerEnv } from '../../src/platform/kubernetes/katadeploy.ts';

const NS = 'openshift-sandboxed-containers-operator';
const TDX = 'intel.feature.node.kubernetes.io/tdx';
const SNP = 'amd.feature.node.kubernetes.io/snp';
const KATA = { 'node-role.kubernetes.io/kata-oc': '' };
const GPU = {
  'nvidia.com/gpu.present': 'true',
  'nvidia.com/gpu.deploy.vfio-manager': 'true',
  'nvidia.com/gpu.deploy.kata-sandbox-device-plugin': 'true',
  'nvidia.com/cc.mode.state': 'off',
  'nvidia.com/cc.ready.state': 'false',
};
const CC_GPU = { ...GPU, 'nvidia.com/cc.mode.state': 'on', 'nvidia.com/cc.ready.state': 'true' };

const node = (name: string, labels: Record<string, string> = {}, allocatable: Record<string, string> = {}): Node => ({
  metadata: { name, labels },
  status: { allocatable, capacity: allocatable },
});
const pod = (name: string, rc: string, nodeName: string, phase = 'Running'): Pod => ({
  metadata: { name, namespace: 'app' },
  spec: { runtimeClassName: rc, nodeName, containers: [] },
  status: { phase },
});

describe('feature gates (osc-feature-gates)', () => {
  const cases: {
    name: string;
    data?: Record<string, string>;
    gates?: Partial<typeof DEFAULT_FEATURE_GATES>;
    bad?: string[];
    unknown?: string[];
  }[] = [
    { name: 'no ConfigMap: every default', data: undefined, gates: {} },
    { name: 'empty ConfigMap: every default', data: {}, gates: {} },
    { name: 'confidential on', data: { confidential: 'true' }, gates: { confidential: true } },
    { name: 'confidential off', data: { confidential: 'false' }, gates: { confidential: false } },
    {
      name: 'every key valid',
      data: { confidential: 'true', deploymentMode: 'DaemonSet', caaUpdateStrategy: 'OnDelete' },
      gates: { confidential: true, deploymentMode: 'DaemonSet', caaUpdateStrategy: 'OnDelete' },
    },
    { name: 'MachineConfig mode', data: { deploymentMode: 'MachineConfig' }, gates: { deploymentMode: 'MachineConfig' } },
    { name: 'yes is not a boolean', data: { confidential: 'yes' }, bad: ['confidential'] },
    { name: 'True is not true (values are read as written)', data: { confidential: 'True' }, bad: ['confidential'] },
    { name: 'a space around the value', data: { confidential: ' true' }, bad: ['confidential'] },
    { name: 'an empty value', data: { confidential: '' }, bad: ['confidential'] },
    { name: 'a mode in the wrong case', data: { deploymentMode: 'daemonset' }, bad: ['deploymentMode'] },
    { name: 'an unknown strategy', data: { caaUpdateStrategy: 'Recreate' }, bad: ['caaUpdateStrategy'] },
    {
      name: 'two bad values, reported in key order',
      data: { caaUpdateStrategy: 'x', confidential: '1' },
      bad: ['confidential', 'caaUpdateStrategy'],
    },
    {
      name: 'an unknown key is reported, not fatal',
      data: { Confidential: 'true', timeTravel: 'false' },
      gates: {},
      unknown: ['Confidential', 'timeTravel'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const parsed = parseFeatureGates(c.data);
      assert.deepEqual(
        parsed.problems.map((p) => p.key),
        c.bad ?? [],
      );
      if (c.gates) assert.deepEqual(parsed.gates, { ...DEFAULT_FEATURE_GATES, ...c.gates });
      assert.deepEqual(parsed.unknown, c.unknown ?? []);
    });
  }

  test('a gate under binaryData is not read as a value: a problem saying to move it, never its default silently', () => {
    const parsed = parseFeatureGates({}, { confidential: Buffer.from('true').toString('base64'), other: 'eA==' });
    assert.deepEqual(
      parsed.problems.map((p) => [p.key, p.binary]),
      [['confidential', true]],
    );
    assert.deepEqual(parsed.unknown, ['other']);
    assert.equal(parsed.gates.confidential, false);
    const [p] = parsed.problems;
    assert.ok(p);
    assert.match(
      featureGateTexts.invalid(NS, p),
      /feature gate "confidential" in ConfigMap .*osc-feature-gates is under binaryData, where it is not read: move it under data as one of true, false/,
    );
  });

  test('a bad value never becomes the default silently: the gate keeps its default and the problem names key, value and choices', () => {
    const parsed = parseFeatureGates({ deploymentMode: 'Daemonset' });
    const [p] = parsed.problems;
    assert.ok(p);
    const text = featureGateTexts.invalid(NS, p);
    assert.match(text, /feature gate "deploymentMode"/);
    assert.match(text, /"Daemonset"/);
    assert.match(text, /MachineConfig, DaemonSet, DaemonSetFallback/);
    assert.match(text, /osc-feature-gates/);
  });
});

describe('TEE detection', () => {
  const all = (...names: string[]) => new Set(names);
  test('no TEE label: none', () => {
    assert.deepEqual(detectTee([node('w1', KATA)], all('w1')), { kind: 'none' });
  });
  test('only the selected nodes count', () => {
    assert.deepEqual(detectTee([node('w1', { [TDX]: 'true' })], all()), { kind: 'none' });
  });
  test('a label set to false is no TEE', () => {
    assert.deepEqual(detectTee([node('w1', { [TDX]: 'false' })], all('w1')), { kind: 'none' });
  });
  test('TDX nodes, their key slots and the slots in use', () => {
    const nodes = [node('w2', { [TDX]: 'true' }, { 'tdx.intel.com/keys': '4' }), node('w1', { [TDX]: 'true' }, {}), node('w3')];
    const pods = [pod('a', 'kata-cc', 'w2'), pod('b', 'kata-cc', 'w2', 'Succeeded'), pod('c', 'kata', 'w2')];
    const d = detectTee(nodes, all('w1', 'w2', 'w3'), pods, new Set(['kata-cc']));
    assert.equal(d.kind, 'one');
    if (d.kind !== 'one') return;
    assert.equal(d.tee.kind, 'tdx');
    assert.deepEqual(d.nodes, ['w1', 'w2']);
    assert.deepEqual(d.slots, [
      { node: 'w1', allocatable: 0, used: 0 },
      { node: 'w2', allocatable: 4, used: 1 },
    ]);
    assert.deepEqual(d.withoutSlots, ['w1']);
  });
  test('two TEE kinds are refused, naming both and their nodes', () => {
    const d = detectTee([node('w1', { [TDX]: 'true' }), node('w2', { [SNP]: 'true' })], all('w1', 'w2'));
    assert.equal(d.kind, 'multiple');
    if (d.kind !== 'multiple') return;
    const text = confidentialTexts.multipleTees(d.found);
    assert.match(text, /^multiple TEE platforms detected; only one per cluster supported/);
    assert.match(text, /Intel TDX on w1/);
    assert.match(text, /AMD SEV-SNP on w2/);
  });
});

describe('OpenShift release check', () => {
  for (const [version, ok] of [
    ['4.18.38', true],
    ['4.18.37', false],
    ['4.18.100', true],
    ['4.19.0', true],
    ['4.17.99', false],
    ['5.0.0', true],
    ['3.11.400', false],
    ['4.18.38-rc.1', true],
  ] as const) {
    test(`${version} ${ok ? 'is' : 'is not'} at least 4.18.38`, () => assert.equal(checkVersion(version, '4.18.38').ok, ok));
  }
  test('only a change of the release wakes a pass, not the version operator rewriting its status', () => {
    const cv = (version: string, conditions: { type: string; status: string }[] = []) =>
      ({ metadata: { name: 'version' }, status: { desired: { version }, conditions } }) as unknown as ClusterVersion;
    assert.equal(releaseOf(cv('4.18.38')), '4.18.38');
    assert.equal(releaseChanged(cv('4.18.38'), cv('4.18.38', [{ type: 'RetrievedUpdates', status: 'True' }])), false);
    assert.equal(releaseChanged(cv('4.18.38'), cv('4.19.2')), true);
  });
  test('an unreadable or missing version is not assumed good', () => {
    assert.deepEqual(checkVersion('4.18', '4.18.38'), { ok: false, reason: 'unreadable' });
    assert.deepEqual(checkVersion(undefined, '4.18.38'), { ok: false, reason: 'unknown' });
  });
});

describe('the RuntimeClasses beyond kata', () => {
  const input = (over: Partial<ExtraClassesInput> & { nodes: Node[] }): ExtraClassesInput => {
    const selected = new Set(over.nodes.map((n) => n.metadata.name ?? ''));
    return {
      gates: { ...DEFAULT_FEATURE_GATES, confidential: true },
      problems: [],
      namespace: NS,
      tee: detectTee(over.nodes, selected),
      platform: 'openshift',
      kataNodeSelector: KATA,
      selected,
      peerPods: false,
      clusterVersion: { version: '4.21.9' },
      ...over,
    };
  };
  const tdxNodes = [node('w1', { ...KATA, [TDX]: 'true' }, { 'tdx.intel.com/keys': '2' })];

  test('TDX: kata-cc with handler kata-tdx, 250m/350Mi and one key slot, on the TDX kata nodes', () => {
    const out = extraRuntimeClasses(input({ nodes: tdxNodes }));
    assert.equal(out.refusal, undefined);
    assert.deepEqual(out.classes, [
      {
        name: 'kata-cc',
        handler: 'kata-tdx',
        overhead: { cpu: '250m', memory: '350Mi', 'tdx.intel.com/keys': '1' },
        nodeSelector: { ...KATA, [TDX]: 'true' },
      },
    ]);
  });
  const teeTable = [
    { tee: 'snp', label: SNP, platform: 'openshift', handler: 'kata-snp', slot: 'sev-snp.amd.com/esids' },
    { tee: 'snp', label: SNP, platform: 'kubernetes', handler: 'kata-qemu-snp', slot: 'sev-snp.amd.com/esids' },
    { tee: 'tdx', label: TDX, platform: 'kubernetes', handler: 'kata-qemu-tdx', slot: 'tdx.intel.com/keys' },
    { tee: 'se', label: 'ibm.feature.node.kubernetes.io/se', platform: 'openshift', handler: 'kata-se', slot: undefined },
  ];
  for (const t of teeTable) {
    test(`${t.tee} on ${t.platform}: handler ${t.handler}`, () => {
      const out = extraRuntimeClasses(input({ nodes: [node('w1', { ...KATA, [t.label]: 'true' })], platform: t.platform }));
      const [cc] = out.classes;
      assert.equal(cc?.handler, t.handler);
      assert.deepEqual(cc?.overhead, { cpu: '250m', memory: '350Mi', ...(t.slot ? { [t.slot]: '1' } : {}) });
    });
  }
  test('gate off: no kata-cc', () => {
    const out = extraRuntimeClasses(input({ nodes: tdxNodes, gates: DEFAULT_FEATURE_GATES }));
    assert.deepEqual(out.classes, []);
    assert.equal(out.refusal, undefined);
  });
  test('no TEE node: Failed, saying so', () => {
    const out = extraRuntimeClasses(input({ nodes: [node('w1', KATA)] }));
    assert.deepEqual(out.refusal, { status: 'True', reason: 'Failed', message: confidentialTexts.noTee() });
    assert.deepEqual(out.classes, []);
  });
  test('no TEE node with peer pods: only a warning', () => {
    const out = extraRuntimeClasses(input({ nodes: [node('w1', KATA)], peerPods: true }));
    assert.equal(out.refusal, undefined);
    assert.deepEqual(out.warnings, [confidentialTexts.noTeePeerPods()]);
  });
  test('two TEE kinds: refused', () => {
    const out = extraRuntimeClasses(input({ nodes: [node('w1', { [TDX]: 'true' }), node('w2', { [SNP]: 'true' })] }));
    assert.equal(out.refusal?.reason, 'Failed');
    assert.match(out.refusal?.message ?? '', /multiple TEE platforms detected; only one per cluster supported/);
    assert.deepEqual(out.classes, []);
    assert.deepEqual(out.frozen, ['kata-cc', 'kata-cc-nvidia-gpu'], 'an existing kata-cc is neither made nor removed');
  });
  test('OpenShift below 4.18.38: UnsupportedOCPVersion, no kata-cc', () => {
    const out = extraRuntimeClasses(input({ nodes: tdxNodes, clusterVersion: { version: '4.16.2' } }));
    assert.deepEqual(out.refusal, {
      status: 'False',
      reason: 'UnsupportedOCPVersion',
      message: 'OpenShift version 4.16.2 does not support confidential containers on bare metal (minimum required: 4.18.38 or higher)',
    });
    assert.deepEqual(out.classes, []);
  });
  test('no release to check (plain Kubernetes): kata-cc', () => {
    const { clusterVersion: _, ...rest } = input({ nodes: tdxNodes });
    assert.equal(extraRuntimeClasses(rest).classes.length, 1);
  });
  test('a bad confidential value: Failed naming the key, kata-cc neither made nor removed', () => {
    const parsed = parseFeatureGates({ confidential: 'on' });
    const out = extraRuntimeClasses(input({ nodes: tdxNodes, gates: parsed.gates, problems: parsed.problems }));
    assert.equal(out.refusal?.reason, 'Failed');
    assert.match(out.refusal?.message ?? '', /"confidential".*"on".*true, false/);
    assert.deepEqual(out.classes, []);
    assert.deepEqual(out.frozen, ['kata-cc', 'kata-cc-nvidia-gpu']);
  });
  test('a bad caaUpdateStrategy: Failed, kata-cc still follows the confidential gate', () => {
    const parsed = parseFeatureGates({ confidential: 'true', caaUpdateStrategy: 'Always' });
    const out = extraRuntimeClasses(input({ nodes: tdxNodes, gates: parsed.gates, problems: parsed.problems }));
    assert.match(out.refusal?.message ?? '', /caaUpdateStrategy/);
    assert.deepEqual(
      out.classes.map((c) => c.name),
      ['kata-cc'],
    );
  });
  test('GPU nodes: kata-nvidia-gpu (1 CPU, 4096Mi) on the GPU operator labels, without any gate', () => {
    const out = extraRuntimeClasses(input({ nodes: [node('g1', { ...KATA, ...GPU })], gates: DEFAULT_FEATURE_GATES }));
    assert.deepEqual(out.classes, [
      { name: 'kata-nvidia-gpu', handler: 'kata-nvidia-gpu', overhead: { cpu: '1', memory: '4096Mi' }, nodeSelector: { ...KATA, ...GPU } },
    ]);
  });
  test('GPU nodes on OpenShift below 4.21.9: no GPU class, a warning naming the minimum', () => {
    const out = extraRuntimeClasses(
      input({ nodes: [node('g1', { ...KATA, ...GPU })], gates: DEFAULT_FEATURE_GATES, clusterVersion: { version: '4.20.18' } }),
    );
    assert.deepEqual(out.classes, []);
    assert.equal(out.refusal, undefined);
    assert.match(
      out.warnings[0] ?? '',
      /OpenShift version 4.20.18 does not support GPUs in kata VMs \(minimum required: 4.21.9 or higher\)/,
    );
  });
  test('no GPU node: no GPU class, and nothing to say', () => {
    const out = extraRuntimeClasses(input({ nodes: tdxNodes }));
    assert.ok(!out.classes.some((c) => c.name.includes('gpu')));
    assert.deepEqual(out.warnings, []);
  });
  test('a node asked for GPUs in VMs that the GPU operator has not prepared: no GPU class, a warning naming it and the labels', () => {
    const asking = node('g1', { ...KATA, 'nvidia.com/gpu.workload.config': 'vm-passthrough', 'nvidia.com/gpu.present': 'true' });
    const out = extraRuntimeClasses(input({ nodes: [asking], gates: DEFAULT_FEATURE_GATES }));
    assert.deepEqual(out.classes, []);
    assert.equal(out.refusal, undefined);
    assert.deepEqual(out.warnings, [confidentialTexts.noGpuNodes(['g1'])]);
    assert.match(
      out.warnings[0] ?? '',
      /^g1 is labelled nvidia.com\/gpu.workload.config=vm-passthrough but no selected node carries .*nvidia.com\/gpu.deploy.kata-sandbox-device-plugin=true/,
    );
    // Once the GPU operator prepared it: the class, no warning.
    const ready = extraRuntimeClasses(
      input({ nodes: [node('g1', { ...KATA, ...GPU, 'nvidia.com/gpu.workload.config': 'vm-passthrough' })], gates: DEFAULT_FEATURE_GATES }),
    );
    assert.deepEqual(
      ready.classes.map((c) => c.name),
      ['kata-nvidia-gpu'],
    );
    assert.deepEqual(ready.warnings, []);
  });
  test('a GPU class offered whose nodes lost the GPU operator labels: no longer wanted, and said so (not for a gate turned off)', () => {
    const out = extraRuntimeClasses(input({ nodes: tdxNodes, offered: ['kata', 'kata-nvidia-gpu', 'kata-cc', 'kata-cc-nvidia-gpu'] }));
    assert.deepEqual(out.warnings, [
      confidentialTexts.gpuClassWithdrawn('kata-nvidia-gpu'),
      confidentialTexts.gpuClassWithdrawn('kata-cc-nvidia-gpu'),
    ]);
    const gateOff = extraRuntimeClasses(
      input({
        nodes: [node('g1', { ...KATA, ...GPU })],
        gates: DEFAULT_FEATURE_GATES,
        offered: ['kata', 'kata-nvidia-gpu', 'kata-cc-nvidia-gpu'],
      }),
    );
    assert.deepEqual(gateOff.warnings, [], 'the confidential GPU class goes with the gate: nothing about nodes');
  });
  test('confidential GPU nodes on TDX: kata-cc-nvidia-gpu with a key slot', () => {
    const out = extraRuntimeClasses(input({ nodes: [...tdxNodes, node('g1', { ...KATA, ...CC_GPU, [TDX]: 'true' })] }));
    const gpu = out.classes.find((c) => c.name === 'kata-cc-nvidia-gpu');
    assert.deepEqual(gpu, {
      name: 'kata-cc-nvidia-gpu',
      handler: 'kata-tdx-nvidia-gpu',
      overhead: { cpu: '250m', memory: '350Mi', 'tdx.intel.com/keys': '1' },
      nodeSelector: { ...KATA, ...CC_GPU, [TDX]: 'true' },
    });
  });
  test('a TEE node without key slots is a warning', () => {
    const out = extraRuntimeClasses(input({ nodes: [node('w1', { ...KATA, [TDX]: 'true' })] }));
    assert.equal(out.classes.length, 1);
    assert.match(out.warnings[0] ?? '', /w1 has the TEE label but no tdx.intel.com\/keys/);
  });
});

describe('the runtime-class-cleanup finalizer', () => {
  test("its name is the original operator's", () =>
    assert.equal(RUNTIME_CLASS_CLEANUP_FINALIZER, 'kataconfig.openshift.io/runtime-class-cleanup'));
  test('Running, Pending and Unknown pods keep a class; Succeeded and Failed ones do not', () => {
    const pods = [
      pod('r', 'kata-cc', 'w1', 'Running'),
      pod('p', 'kata-cc', 'w1', 'Pending'),
      pod('u', 'kata-cc', 'w1', 'Unknown'),
      pod('s', 'kata-cc', 'w1', 'Succeeded'),
      pod('f', 'kata-cc', 'w1', 'Failed'),
      pod('o', 'kata', 'w1', 'Running'),
    ];
    assert.deepEqual(activePodsUsing(pods, 'kata-cc'), ['app/p', 'app/r', 'app/u']);
  });
});

describe('the nodes keep the handlers of the extra classes', () => {
  const rc = (name: string, handler: string, owned = true) => ({
    metadata: { name, ...(owned ? { ownerReferences: [{ kind: 'KataConfig' }] } : {}) },
    handler,
  });
  test('wanted classes, and extra classes osc made that still exist (waiting for pods, or frozen)', () => {
    const wanted = [{ name: 'kata-nvidia-gpu', handler: 'kata-qemu-nvidia-gpu', overhead: {}, nodeSelector: {} }];
    assert.deepEqual(
      extraHandlers(wanted, [rc('kata-cc', 'kata-qemu-tdx'), rc('kata', 'kata-qemu'), rc('kata-cc-nvidia-gpu', 'x', false)]),
      ['kata-qemu-nvidia-gpu', 'kata-qemu-tdx'],
    );
  });
  test("kata-deploy's env lists the TEE shim beside the default one, on the architecture that has it", () => {
    const c = installerConfig('img', 'qemu', 'info', 'k8s', ['qemu-tdx', 'qemu-se']);
    const env = Object.fromEntries(installerEnv(c).map((e) => [e.name, e.value]));
    assert.equal(env.SHIMS_X86_64, 'qemu qemu-tdx');
    assert.equal(env.SHIMS_S390X, 'qemu qemu-se');
    assert.equal(env.DEFAULT_SHIM_X86_64, 'qemu');
  });
  test('a configuration without extra shims keeps the id it had before they existed (no rollout on upgrade)', () => {
    assert.equal(configId(installerConfig('img', 'qemu', 'info')), configId({ image: 'img', shim: 'qemu', debug: false }));
    assert.notEqual(
      configId(installerConfig('img', 'qemu', 'info', 'k8s', ['qemu-tdx'])),
      configId(installerConfig('img', 'qemu', 'info')),
    );
  });
});

describe('osc status: gates, TEE and key slots', () => {
  test('a TDX cluster: the gates, the TEE, each node used/free', () => {
    const text = renderConfidential({
      gates: { ...DEFAULT_FEATURE_GATES, confidential: true },
      gateProblems: [],
      tee: 'tdx',
      keySlots: [
        { node: 'worker-0', resource: 'tdx.intel.com/keys', allocatable: 2, used: 2 },
        { node: 'worker-10', resource: 'tdx.intel.com/keys', allocatable: 4, used: 1 },
      ],
    });
    assert.equal(
      text,
      [
        'Feature gates: confidential=true deploymentMode=DaemonSetFallback caaUpdateStrategy=RollingUpdate',
        'TEE: Intel TDX',
        'Key slots (used/free per node):',
        '  worker-0   2 used, 0 free of 2 tdx.intel.com/keys',
        '  worker-10  1 used, 3 free of 4 tdx.intel.com/keys',
        '',
      ].join('\n'),
    );
  });
  test('a bad gate and two TEE kinds are shown as such', () => {
    const parsed = parseFeatureGates({ confidential: 'yes' });
    const text = renderConfidential({
      gates: parsed.gates,
      gateProblems: gateProblemTexts(NS, parsed.problems),
      tee: 'multiple',
      teesFound: [
        { kind: 'tdx', nodes: ['w1'] },
        { kind: 'snp', nodes: ['w2'] },
      ],
      keySlots: [],
    });
    assert.match(text, /! feature gate "confidential" .* is "yes"/);
    assert.match(text, /TEE: several kinds \(Intel TDX on w1; AMD SEV-SNP on w2\): only one per cluster is supported/);
  });
});

describe("the console's create form: what a KataConfig created now would get", () => {
  const tdxWorker = node('worker-0', { [TDX]: 'true' }, { 'tdx.intel.com/keys': '3' });
  const outlook = (data: Record<string, string> | undefined, nodes: Node[]) =>
    confidentialOutlook(summarizeConfidential(data, nodes, [], NS), NS);
  test('gate off: a note saying where to turn it on', () => {
    assert.deepEqual(outlook(undefined, [tdxWorker]), {
      level: 'note',
      text: `confidential containers are off: kata-cc is offered once the confidential feature gate is "true" in ConfigMap ${NS}/osc-feature-gates`,
    });
  });
  test('gate on with TDX nodes: kata-cc on them', () => {
    const o = outlook({ confidential: 'true' }, [tdxWorker, node('worker-1')]);
    assert.equal(o.level, 'note');
    assert.match(o.text, /^kata-cc \(Intel TDX\) will be offered on worker-0, where kata is installed/);
  });
  test('gate on without a TEE, two TEE kinds, or a bad gate: the failure it would report', () => {
    assert.deepEqual(outlook({ confidential: 'true' }, [node('worker-1')]), {
      level: 'warning',
      text: `${confidentialTexts.noTee()}: the KataConfig will report Failed`,
    });
    assert.match(
      outlook({ confidential: 'true' }, [tdxWorker, node('worker-1', { [SNP]: 'true' })]).text,
      /^multiple TEE platforms detected/,
    );
    assert.equal(outlook({ confidential: 'yes' }, [tdxWorker]).level, 'warning');
  });
});

describe('deploymentMode chooses the platform at start', () => {
  const openshift = new Set(['machineconfiguration.openshift.io', 'apps']);
  const plain = new Set(['apps']);
  const cases: [DeploymentMode, Set<string>, string, boolean][] = [
    ['DaemonSetFallback', openshift, 'openshift', false],
    ['DaemonSetFallback', plain, 'kubernetes', false],
    ['DaemonSet', openshift, 'kubernetes', false],
    ['DaemonSet', plain, 'kubernetes', false],
    ['MachineConfig', openshift, 'openshift', false],
    ['MachineConfig', plain, 'kubernetes', true],
  ];
  for (const [mode, served, name, warns] of cases) {
    test(`${mode} on ${served === plain ? 'plain Kubernetes' : 'OpenShift'}: ${name}${warns ? ', with a warning' : ''}`, () => {
      const chosen = platformForMode(mode, served);
      assert.equal(chosen.name, name);
      assert.equal(!!chosen.warning, warns);
      if (warns)
        assert.match(chosen.warning ?? '', /deploymentMode is MachineConfig but this cluster does not serve the MachineConfig API/);
    });
  }
  test('a mode naming another platform than the running one is noticed', () => {
    assert.equal(modeMatches('DaemonSet', 'openshift'), false);
    assert.equal(modeMatches('MachineConfig', 'kubernetes'), false);
    assert.equal(modeMatches('DaemonSetFallback', 'kubernetes'), true);
    assert.equal(modeMatches('DaemonSet', 'kubernetes'), true);
  });
});
