import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Container, Pod } from '../../src/kube/resources.ts';
import {
  DEFAULT_MEMORY_ANNOTATION,
  DEFAULT_VCPUS_ANNOTATION,
  escapePointer,
  type JSONPatchOp,
  MACHINE_TYPE_ANNOTATION,
  type MutateSettings,
  mutatePeerPod,
  podAmount,
  settingsFromConfig,
} from '../../src/peerpods/mutate.ts';
import { AGENT_POLICY_ANNOTATION, defaultPolicy, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';

/** The documented ConfigMap's instance types (docs/peerpods.md). */
const SETTINGS: MutateSettings = { defaultType: 't3.medium', allowedTypes: ['t2.small', 't2.medium', 't3.large'] };
const HARDENED = encodePolicy(hardenedPolicy());
const NO_POLICY_WARNING = `no Kata Agent policy (${AGENT_POLICY_ANNOTATION}): oc exec is allowed; deny ExecProcessRequest in production`;
const VM = { requests: { 'kata.peerpods.io/vm': '1' }, limits: { 'kata.peerpods.io/vm': '1' } };

function pod(containers: Container[], annotations?: Record<string, string>, extra: Record<string, unknown> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'my-pod', namespace: 'default', ...(annotations ? { annotations } : {}) },
    spec: { runtimeClassName: 'kata-remote', containers, ...extra },
  };
}
const hardened = (containers: Container[], more: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  pod(containers, { [AGENT_POLICY_ANNOTATION]: HARDENED, ...more }, extra);

/** RFC 6902 add/replace/remove, strictly: the parent must exist, replace/remove need an existing target. */
function applyPatch<T>(doc: T, patch: JSONPatchOp[]): T {
  const out = structuredClone(doc) as unknown;
  for (const op of patch) {
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop();
    assert.ok(last !== undefined, `bad path ${op.path}`);
    let parent = out as Record<string, unknown>;
    for (const p of parts) {
      const next = parent[p];
      assert.ok(next !== null && typeof next === 'object', `${op.op} ${op.path}: ${p} does not exist`);
      parent = next as Record<string, unknown>;
    }
    if (op.op === 'add') parent[last] = structuredClone(op.value);
    else if (op.op === 'replace') {
      assert.ok(last in parent, `replace ${op.path}: target does not exist`);
      parent[last] = structuredClone(op.value);
    } else {
      assert.ok(last in parent, `remove ${op.path}: target does not exist`);
      delete parent[last];
    }
  }
  return out as T;
}

function mutated(p: Pod, settings = SETTINGS): { pod: Pod; patch: JSONPatchOp[]; warnings: string[] } {
  const r = mutatePeerPod(p, settings);
  assert.equal(r.allowed, true, r.allowed ? '' : r.message);
  if (!r.allowed) throw new Error('unreachable');
  return { pod: applyPatch(p, r.patch), patch: r.patch, warnings: r.warnings };
}

describe('mutatePeerPod: which pods', () => {
  for (const rc of [undefined, 'kata', 'runc', 'kata-remote-cc']) {
    test(`runtimeClassName ${rc ?? '(none)'}: untouched`, () => {
      const p = pod([{ name: 'app', resources: { limits: { cpu: '64', memory: '1Ti' } } }], { [MACHINE_TYPE_ANNOTATION]: 'x.y' });
      if (rc === undefined) delete p.spec?.runtimeClassName;
      else if (p.spec) p.spec.runtimeClassName = rc;
      assert.deepEqual(mutatePeerPod(p, SETTINGS), { allowed: true, patch: [], warnings: [] });
    });
  }
  test('another target runtime class can be configured', () => {
    const p = pod([{ name: 'app' }]);
    if (p.spec) p.spec.runtimeClassName = 'kata-remote-cc';
    const r = mutatePeerPod(p, { ...SETTINGS, runtimeClassName: 'kata-remote-cc' });
    assert.ok(r.allowed && r.patch.length > 0);
  });
});

describe('mutatePeerPod: the documented pods', () => {
  test('the documented pod (no resources, hardened policy): default type, one VM slot', () => {
    const p = hardened([
      {
        name: 'app',
        image: 'registry.access.redhat.com/ubi9/ubi:latest',
        command: ['sleep', '36000'],
        securityContext: { privileged: false, seccompProfile: { type: 'RuntimeDefault' } },
      },
    ]);
    const r = mutatePeerPod(p, SETTINGS);
    assert.deepEqual(r, {
      allowed: true,
      patch: [
        { op: 'add', path: '/metadata/annotations/io.katacontainers.config.hypervisor.machine_type', value: 't3.medium' },
        { op: 'add', path: '/spec/containers/0/resources', value: VM },
      ],
      warnings: [],
      summary: { vcpus: 0, memoryMiB: 0, instanceType: 't3.medium', instanceTypeReason: 'default' },
    });
  });

  test('a pod without annotations gets the whole map, and the policy warning', () => {
    const { pod: out, patch, warnings } = mutated(pod([{ name: 'app' }]));
    assert.deepEqual(patch[0], { op: 'add', path: '/metadata/annotations', value: { [MACHINE_TYPE_ANNOTATION]: 't3.medium' } });
    assert.deepEqual(out.metadata.annotations, { [MACHINE_TYPE_ANNOTATION]: 't3.medium' });
    assert.deepEqual(warnings, [NO_POLICY_WARNING]);
  });

  test('documented explicit machine_type in the list: kept as is', () => {
    const r = mutatePeerPod(hardened([{ name: 'app' }], { [MACHINE_TYPE_ANNOTATION]: 't3.large' }), SETTINGS);
    assert.deepEqual(r, {
      allowed: true,
      patch: [{ op: 'add', path: '/spec/containers/0/resources', value: VM }],
      warnings: [],
      summary: { vcpus: 0, memoryMiB: 0, instanceType: 't3.large', instanceTypeReason: 'requested' },
    });
  });

  test('documented automatic type from hand-set default_vcpus/default_memory', () => {
    const { pod: out, warnings } = mutated(
      hardened([{ name: 'app' }], { [DEFAULT_VCPUS_ANNOTATION]: '2', [DEFAULT_MEMORY_ANNOTATION]: '6144' }),
    );
    assert.equal(out.metadata.annotations?.[MACHINE_TYPE_ANNOTATION], 't3.large');
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '2');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], '6144');
    assert.deepEqual(warnings, []);
  });
});

describe('mutatePeerPod: resources', () => {
  test('limits win over requests; containers add up; sizes rounded up; other resources kept', () => {
    const p = hardened([
      { name: 'a', resources: { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '1', memory: '1Gi' } } },
      { name: 'b', resources: { requests: { cpu: '250m', memory: '256Mi', 'ephemeral-storage': '1Gi' } } },
      { name: 'c' },
    ]);
    const r = mutatePeerPod(p, SETTINGS);
    assert.ok(r.allowed);
    assert.deepEqual(r.patch, [
      { op: 'add', path: '/metadata/annotations/io.katacontainers.config.hypervisor.default_vcpus', value: '2' },
      { op: 'add', path: '/metadata/annotations/io.katacontainers.config.hypervisor.default_memory', value: '1280' },
      { op: 'add', path: '/metadata/annotations/io.katacontainers.config.hypervisor.machine_type', value: 't2.medium' },
      { op: 'replace', path: '/spec/containers/0/resources', value: VM },
      { op: 'replace', path: '/spec/containers/1/resources', value: { requests: { 'ephemeral-storage': '1Gi' } } },
    ]);
    assert.deepEqual(r.summary, { vcpus: 2, memoryMiB: 1280, instanceType: 't2.medium', instanceTypeReason: 'best-fit' });
    const out = applyPatch(p, r.patch);
    assert.deepEqual(
      out.spec?.containers.map((c) => c.resources),
      [VM, { requests: { 'ephemeral-storage': '1Gi' } }, undefined],
    );
  });

  test('decimal memory is rounded up to MiB, fractional CPU to whole vCPUs', () => {
    const { pod: out } = mutated(hardened([{ name: 'a', resources: { limits: { cpu: '100m', memory: '1G' } } }]));
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '1');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], '954');
    assert.equal(out.metadata.annotations?.[MACHINE_TYPE_ANNOTATION], 't2.small');
  });

  test('only CPU known: annotated, but the default type (both are needed for best fit)', () => {
    const { pod: out } = mutated(hardened([{ name: 'a', resources: { limits: { cpu: '2' } } }]));
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '2');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], undefined);
    assert.equal(out.metadata.annotations?.[MACHINE_TYPE_ANNOTATION], 't3.medium');
  });

  test('init containers: the larger of the containers sum and the largest init container', () => {
    const p = hardened(
      [{ name: 'app', resources: { limits: { cpu: '1', memory: '1Gi' } } }],
      {},
      {
        initContainers: [
          { name: 'setup', resources: { limits: { cpu: '2', memory: '512Mi' } } },
          { name: 'small', resources: { requests: { cpu: '100m' } } },
        ],
      },
    );
    assert.equal(podAmount(p, 'cpu'), 2_000_000_000n);
    assert.equal(podAmount(p, 'memory'), 1024n ** 3n * 1_000_000_000n);
    const { pod: out, patch } = mutated(p);
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '2');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], '1024');
    assert.deepEqual(
      (out.spec?.initContainers ?? []).map((c) => c.resources),
      [{}, {}],
    );
    assert.ok(patch.some((op) => op.path === '/spec/initContainers/0/resources' && op.op === 'replace'));
  });

  test('sidecars (restartPolicy Always) add to everything after them', () => {
    const p = hardened(
      [{ name: 'app', resources: { limits: { cpu: '1' } } }],
      {},
      {
        initContainers: [
          { name: 'proxy', restartPolicy: 'Always', resources: { limits: { cpu: '1' } } },
          { name: 'migrate', resources: { limits: { cpu: '2' } } },
        ],
      },
    );
    // max(app 1 + proxy 1, proxy 1 + migrate 2) = 3
    assert.equal(podAmount(p, 'cpu'), 3_000_000_000n);
  });

  test('pod-level resources win and lose their cpu/memory', () => {
    const p = hardened(
      [{ name: 'app', resources: { limits: { cpu: '1', memory: '1Gi' } } }],
      {},
      {
        resources: { limits: { cpu: '4', memory: '8Gi' } },
      },
    );
    const r = mutatePeerPod(p, SETTINGS);
    assert.ok(r.allowed === false);
    assert.match(r.message, /^the pod needs 4 vCPUs and 8192 MiB of memory/);
    const q = hardened([{ name: 'app' }], {}, { resources: { requests: { memory: '2Gi' }, limits: { cpu: '2', 'example.com/x': '1' } } });
    const { pod: out } = mutated(q);
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '2');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], '2048');
    assert.deepEqual(out.spec?.resources, { limits: { 'example.com/x': '1' } });
    const { pod: out2 } = mutated(hardened([{ name: 'app' }], {}, { resources: { limits: { cpu: '2' } } }));
    assert.equal(out2.spec?.resources, undefined);
  });

  test('a user-set kata.peerpods.io/vm elsewhere is dropped: one slot per pod', () => {
    const { pod: out } = mutated(
      hardened([
        { name: 'a' },
        { name: 'b', resources: { requests: { 'kata.peerpods.io/vm': '3' }, limits: { 'kata.peerpods.io/vm': '3' } } },
      ]),
    );
    assert.deepEqual(
      out.spec?.containers.map((c) => c.resources),
      [VM, {}],
    );
  });

  test('hand-set sizes win over the containers, with a warning when smaller', () => {
    const { pod: out, warnings } = mutated(
      hardened([{ name: 'a', resources: { limits: { cpu: '2', memory: '4Gi' } } }], {
        [DEFAULT_VCPUS_ANNOTATION]: '1',
        [DEFAULT_MEMORY_ANNOTATION]: '1024',
      }),
    );
    assert.equal(out.metadata.annotations?.[DEFAULT_VCPUS_ANNOTATION], '1');
    assert.equal(out.metadata.annotations?.[DEFAULT_MEMORY_ANNOTATION], '1024');
    assert.equal(out.metadata.annotations?.[MACHINE_TYPE_ANNOTATION], 't2.small');
    assert.deepEqual(warnings, [
      `annotation ${DEFAULT_VCPUS_ANNOTATION} is 1, but the containers ask for 2 vCPUs`,
      `annotation ${DEFAULT_MEMORY_ANNOTATION} is 1024, but the containers ask for 4096 MiB`,
    ]);
  });

  test('mutating a mutated pod changes nothing', () => {
    const cases = [
      hardened([{ name: 'a', resources: { requests: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '1Gi' } } }, { name: 'b' }]),
      pod([{ name: 'a' }]),
      hardened([{ name: 'a' }], {}, { initContainers: [{ name: 'i', resources: { limits: { cpu: '1' } } }] }),
    ];
    for (const p of cases) {
      const once = mutated(p).pod;
      const again = mutatePeerPod(once, SETTINGS);
      assert.ok(again.allowed);
      assert.deepEqual(again.patch, [], JSON.stringify(once));
    }
  });

  test('the input pod is not modified', () => {
    const p = hardened([{ name: 'a', resources: { limits: { cpu: '1', memory: '1Gi' } } }]);
    const before = structuredClone(p);
    mutatePeerPod(p, SETTINGS);
    assert.deepEqual(p, before);
  });

  test('instance sizes unknown to osc: the choice is left to the cloud-api-adaptor', () => {
    const r = mutatePeerPod(hardened([{ name: 'a', resources: { limits: { cpu: '8', memory: '8Gi' } } }]), {
      defaultType: 't3.medium',
      allowedTypes: ['zz.large'],
    });
    assert.ok(r.allowed);
    assert.ok(!r.patch.some((op) => op.path.endsWith('machine_type')));
    assert.deepEqual(r.warnings, [
      'no allowed instance type of known size has 8 vCPUs and 8192 MiB of memory; the cloud-api-adaptor will choose among zz.large',
    ]);
    // An extra table makes it known.
    const r2 = mutatePeerPod(hardened([{ name: 'a', resources: { limits: { cpu: '8', memory: '8Gi' } } }]), {
      defaultType: 't3.medium',
      allowedTypes: ['zz.large'],
      table: { 'zz.large': { vcpus: 8, memoryMiB: 16384 } },
    });
    assert.ok(r2.allowed && r2.summary?.instanceType === 'zz.large');
  });

  test('settingsFromConfig', () => {
    assert.deepEqual(settingsFromConfig({ instanceType: 't3.medium', instanceTypes: ['t3.large'] }), {
      defaultType: 't3.medium',
      allowedTypes: ['t3.large'],
    });
  });

  test('escapePointer (RFC 6901)', () => {
    assert.equal(escapePointer('kata.peerpods.io/vm'), 'kata.peerpods.io~1vm');
    assert.equal(escapePointer('a~b/c'), 'a~0b~1c');
  });
});

describe('mutatePeerPod: the agent policy', () => {
  test('requests without a rule: warned (the agent denies them)', () => {
    const text =
      'package agent_policy\ndefault ExecProcessRequest := false\ndefault CreateSandboxRequest := true\ndefault CreateContainerRequest := true\ndefault StartContainerRequest := true\n';
    const { warnings } = mutated(pod([{ name: 'a' }], { [AGENT_POLICY_ANNOTATION]: encodePolicy(text) }));
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /^agent policy: no rule for AddARPNeighborsRequest, .*CopyFileRequest, .*: the agent denies them/);
  });
  test('one rule: a policy that denies CreateSandboxRequest is refused, as one without a package line is', () => {
    const denies = hardenedPolicy().replace('default CreateSandboxRequest := true', 'default CreateSandboxRequest := false');
    const r = mutatePeerPod(pod([{ name: 'a' }], { [AGENT_POLICY_ANNOTATION]: encodePolicy(denies) }), SETTINGS);
    assert.equal(r.allowed, false);
    assert.match(
      r.allowed ? '' : r.message,
      /^annotation io\.katacontainers\.config\.agent\.policy: the Kata Agent cannot use this policy, so the pod would never start: line \d+: CreateSandboxRequest is false and no rule allows it/,
    );
    const noPackage = mutatePeerPod(
      pod([{ name: 'a' }], { [AGENT_POLICY_ANNOTATION]: encodePolicy('default ExecProcessRequest := false\n') }),
      SETTINGS,
    );
    assert.equal(noPackage.allowed, false);
  });
  test('no policy: warned', () => {
    assert.deepEqual(mutated(pod([{ name: 'a' }], {})).warnings, [NO_POLICY_WARNING]);
  });
  test('the permissive default policy: warned', () => {
    assert.deepEqual(mutated(pod([{ name: 'a' }], { [AGENT_POLICY_ANNOTATION]: encodePolicy(defaultPolicy()) })).warnings, [
      'the Kata Agent policy allows oc exec (ExecProcessRequest); deny it in production',
    ]);
  });
  test('the hardened policy: no warning', () => {
    assert.deepEqual(mutated(hardened([{ name: 'a' }])).warnings, []);
  });
  test('a misspelt request in the policy: warned, not rejected', () => {
    const text = hardenedPolicy().replace('default ExecProcessRequest := false', 'default ExecProccessRequest := false');
    assert.deepEqual(mutated(pod([{ name: 'a' }], { [AGENT_POLICY_ANNOTATION]: encodePolicy(text) })).warnings, [
      'agent policy line 36: ExecProccessRequest is not a Kata Agent request, so the agent never consults it; did you mean ExecProcessRequest?',
    ]);
  });
});

/** Bad pods, each with the message it is rejected with. */
const badPods: { name: string; pod: Pod; message: string }[] = [
  {
    name: 'instance type outside the list',
    pod: hardened([{ name: 'app' }], { [MACHINE_TYPE_ANNOTATION]: 'm5.4xlarge' }),
    message:
      'instance type "m5.4xlarge" (annotation io.katacontainers.config.hypervisor.machine_type) is not allowed: the allowed types are ' +
      't2.small, t2.medium, t3.large, t3.medium; use one of them, or ask the administrator to add it to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm',
  },
  {
    name: 'more than any allowed type offers',
    pod: hardened([{ name: 'app', resources: { limits: { cpu: '8', memory: '32Gi' } } }]),
    message:
      'the pod needs 8 vCPUs and 32768 MiB of memory, more than any allowed instance type offers: t2.small (1 vCPU, 2048 MiB), ' +
      't2.medium (2 vCPUs, 4096 MiB), t3.large (2 vCPUs, 8192 MiB), t3.medium (2 vCPUs, 4096 MiB); ' +
      "lower the containers' CPU/memory limits, or ask the administrator to add a larger type to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm",
  },
  {
    name: 'more than any type, summed over containers',
    pod: hardened([
      { name: 'a', resources: { limits: { cpu: '2', memory: '4Gi' } } },
      { name: 'b', resources: { limits: { cpu: '1', memory: '1Gi' } } },
    ]),
    message:
      'the pod needs 3 vCPUs and 5120 MiB of memory, more than any allowed instance type offers: t2.small (1 vCPU, 2048 MiB), ' +
      't2.medium (2 vCPUs, 4096 MiB), t3.large (2 vCPUs, 8192 MiB), t3.medium (2 vCPUs, 4096 MiB); ' +
      "lower the containers' CPU/memory limits, or ask the administrator to add a larger type to PODVM_INSTANCE_TYPES in ConfigMap peer-pods-cm",
  },
  {
    name: 'default_vcpus not a number',
    pod: hardened([{ name: 'app' }], { [DEFAULT_VCPUS_ANNOTATION]: 'two' }),
    message:
      'annotation io.katacontainers.config.hypervisor.default_vcpus is "two": it must be a whole number of vCPUs, 1 or more (like "2")',
  },
  {
    name: 'default_vcpus fractional',
    pod: hardened([{ name: 'app' }], { [DEFAULT_VCPUS_ANNOTATION]: '1.5' }),
    message:
      'annotation io.katacontainers.config.hypervisor.default_vcpus is "1.5": it must be a whole number of vCPUs, 1 or more (write "2")',
  },
  {
    name: 'default_vcpus zero',
    pod: hardened([{ name: 'app' }], { [DEFAULT_VCPUS_ANNOTATION]: '0' }),
    message:
      'annotation io.katacontainers.config.hypervisor.default_vcpus is "0": it must be a whole number of vCPUs, 1 or more (like "2")',
  },
  {
    name: 'default_memory with a unit',
    pod: hardened([{ name: 'app' }], { [DEFAULT_MEMORY_ANNOTATION]: '2Gi' }),
    message:
      'annotation io.katacontainers.config.hypervisor.default_memory is "2Gi": it must be a whole number of MiB, 1 or more (write "2048")',
  },
  {
    name: 'default_memory not a number',
    pod: hardened([{ name: 'app' }], { [DEFAULT_MEMORY_ANNOTATION]: 'lots' }),
    message:
      'annotation io.katacontainers.config.hypervisor.default_memory is "lots": it must be a whole number of MiB, 1 or more (like "2048")',
  },
  {
    name: 'an invalid CPU quantity',
    pod: hardened([{ name: 'app', resources: { limits: { cpu: '1 core' } } }]),
    message:
      'container "app" resources.limits.cpu is invalid: "1 core" has an unknown unit " core" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)',
  },
  {
    name: 'an invalid memory quantity in an init container',
    pod: hardened([{ name: 'app' }], {}, { initContainers: [{ name: 'init', resources: { requests: { memory: '1GB' } } }] }),
    message:
      'init container "init" resources.requests.memory is invalid: "1GB" has an unknown unit "GB" (use one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei)',
  },
  {
    name: 'a negative quantity',
    pod: hardened([{ name: 'app', resources: { requests: { memory: '-1Gi' } } }]),
    message: 'container "app" resources.requests.memory is "-1Gi": it must not be negative',
  },
  {
    name: 'no containers',
    pod: hardened([]),
    message: 'the pod has no containers',
  },
  {
    name: 'a policy that is not base64',
    pod: pod([{ name: 'app' }], { [AGENT_POLICY_ANNOTATION]: 'not base64!' }),
    message:
      'annotation io.katacontainers.config.agent.policy: the policy annotation is not valid base64; set it to the output of base64 -w0 policy.rego',
  },
  {
    name: 'a policy in plain text',
    pod: pod([{ name: 'app' }], { [AGENT_POLICY_ANNOTATION]: hardenedPolicy() }),
    message:
      'annotation io.katacontainers.config.agent.policy: the policy annotation holds plain Rego, not base64; set it to the output of base64 -w0 policy.rego',
  },
  {
    name: 'a policy in another package',
    pod: pod([{ name: 'app' }], {
      [AGENT_POLICY_ANNOTATION]: encodePolicy(hardenedPolicy().replace('package agent_policy', 'package mine')),
    }),
    message:
      'annotation io.katacontainers.config.agent.policy: the Kata Agent cannot use this policy, so the pod would never start: ' +
      'line 1: package is "mine": the Kata Agent reads only package agent_policy; write "package agent_policy"',
  },
  {
    name: 'a policy with two defaults for one request',
    pod: pod([{ name: 'app' }], {
      [AGENT_POLICY_ANNOTATION]: encodePolicy(`${hardenedPolicy({ allowedExecCommands: [] })}default ExecProcessRequest := true\n`),
    }),
    message:
      'annotation io.katacontainers.config.agent.policy: the Kata Agent cannot use this policy, so the pod would never start: ' +
      'line 39: second default for ExecProcessRequest (the first is on line 36); a name has at most one default, remove one',
  },
];

describe('mutatePeerPod: bad pods', () => {
  for (const bad of badPods) {
    test(bad.name, () => {
      assert.deepEqual(mutatePeerPod(bad.pod, SETTINGS), { allowed: false, message: bad.message });
    });
  }
});
