/**
 * Bad input against a live cluster: one dev cluster (AWS platform, two workers) and one operator for the
 * whole table, with kata and peer pods installed. Each row does one wrong thing an administrator or a user
 * can do (an invalid KataConfig or pod, an object osc owns edited or deleted by hand, status written by
 * hand, a broken peer-pods ConfigMap or Secret) and expects either a refusal whose message names the field
 * and the fix, or the object healed. After every row the operator must still be running and healthy, and
 * the KataConfig must be back to what it was: installed on both workers, both runtime classes offered,
 * the peer-pods configuration valid. The rows that need no cluster are in test/unit/bad-input.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  CRIO_CONFIG,
  EXTENSION_MACHINE_CONFIG,
  KATA_NODE_ROLE_LABEL,
  KATA_POOL,
  KATA_REMOTE_RUNTIME_CLASS,
  KATA_RUNTIME_CLASS,
  KATACONFIG_FINALIZER,
  OPERATOR_NAMESPACE,
  PEER_POD_CONFIG,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../src/api/names.ts';
import { ContainerRuntimeConfigs, MachineConfigPools, MachineConfigs } from '../../src/api/openshift.ts';
import { PeerPodConfigs } from '../../src/api/peerpodconfig.ts';
import { ConfigMaps, DaemonSets, Nodes, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import { createOperator, type Operator } from '../../src/operator.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { testLogger } from '../support/controlplane.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const KC = 'example-kataconfig';
const ACCESS_KEY = 'AKIAIOSFODNN7BADINPUT';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYBADINPUTKEY';
const CM_DATA: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
  PODVM_AMI_ID: 'ami-0123456789abcdef0',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
};

/** What the shared cluster offers each row. */
interface Ctx {
  kubectl(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }>;
  client: ReturnType<typeof useDevCluster>['dev']['client'];
  kc(): Promise<KataConfig>;
}

type Outcome =
  /** The API server (schema, CEL, or osc's webhooks) refuses, and stderr matches every pattern. */
  | { refused: RegExp[] }
  /** Accepted with a warning that names the field (the API server drops it), and the spec is unchanged. */
  | { warned: RegExp[] }
  /** The wrong state is put right by osc: `healed` holds, then the KataConfig is as before. */
  | { healed: string; check: (c: Ctx) => Promise<boolean>; undo?: (c: Ctx) => Promise<unknown> }
  /** An administrator's choice osc leaves alone: it stays, nothing is lost, and `undo` ends it. */
  | { kept: string; check: (c: Ctx) => Promise<boolean>; undo: (c: Ctx) => Promise<unknown> }
  /** The wrong state is reported in the KataConfig status; `fix` puts it right, and the report clears. */
  | { reported: string; check: (c: Ctx) => Promise<boolean>; fix: (c: Ctx) => Promise<unknown> };

interface Row {
  name: string;
  area:
    | 'KataConfig spec'
    | 'KataConfig status'
    | 'finalizer'
    | 'pool'
    | 'MachineConfig'
    | 'RuntimeClass'
    | 'node labels'
    | 'peer pods'
    | 'pod admission';
  act: (c: Ctx) => Promise<{ code: number | null; stdout: string; stderr: string } | unknown>;
  expect: Outcome;
}

const kcYaml = (name: string, spec: string) =>
  `apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: ${name}\nspec:\n${spec}`;
const cond = (kc: KataConfig | undefined, type: string) => kc?.status?.conditions?.find((c) => c.type === type);
const remotePod = (name: string, annotations: Record<string, string>, resources = '') =>
  [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${name}`,
    '  namespace: default',
    '  annotations:',
    ...Object.entries(annotations).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`),
    'spec:',
    `  runtimeClassName: ${KATA_REMOTE_RUNTIME_CLASS}`,
    '  containers:',
    '  - name: app',
    '    image: quay.io/openshift/origin-hello-openshift',
    resources,
    '',
  ].join('\n');
/** The adaptor DaemonSet's pod template before a row that edits peer-pods-cm badly: it must not change. */
let adaptorTemplate: string | undefined;
const DENIED = /admission webhook "mpod\.peerpods\.kataconfiguration\.openshift\.io" denied the request: /;
const configValid = (k: KataConfig | undefined) => cond(k, 'PeerPodsConfigValid');
/** Installed on both workers, kata and kata-remote offered, the peer-pods configuration valid. */
const intactNow = (k: KataConfig) => {
  const ip = cond(k, 'InProgress');
  return (
    ip?.status === 'False' &&
    ip.reason === '' &&
    k.status?.kataNodes?.nodeCount === 2 &&
    k.status.kataNodes.readyNodeCount === 2 &&
    JSON.stringify([...(k.status.runtimeClasses ?? [])].sort()) === JSON.stringify([KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS]) &&
    configValid(k)?.status === 'True'
  );
};
/** The UIDs of the RuntimeClasses a row deleted, to tell the class osc makes again from the one deleted. */
const deletedUids = new Map<string, string | undefined>();
/**
 * Deletes a RuntimeClass osc makes again at once. Without --wait=false, kubectl can wait for good: its wait
 * reads the class (still there, held by the cleanup finalizer), then lists by name, and when osc has made the
 * class again in between it sees a class of that name and waits for a deletion event that never comes.
 */
async function deleteRecreated(c: Ctx, name: string) {
  deletedUids.set(name, (await c.client.get(RuntimeClasses, name)).metadata.uid);
  return c.kubectl(['delete', 'runtimeclass', name, '--wait=false']);
}
/** The class is there again, and it is a new one, not the deleted one still held by its finalizer. */
async function recreated(c: Ctx, name: string): Promise<boolean> {
  const rc = await c.client.find(RuntimeClasses, name);
  return !!rc && !rc.metadata.deletionTimestamp && rc.metadata.uid !== deletedUids.get(name);
}
const patchJson = (kind: string, name: string, ops: unknown[], ns?: string) => [
  'patch',
  kind,
  name,
  ...(ns ? ['-n', ns] : []),
  '--type=json',
  '-p',
  JSON.stringify(ops),
];

const rows: Row[] = [
  // --- the KataConfig spec, refused by the API server --------------------------------------------
  {
    name: 'logLevel as a number',
    area: 'KataConfig spec',
    act: (c) => c.kubectl(['create', '-f', '-'], kcYaml('bad', '  logLevel: 5\n')),
    expect: { refused: [/spec\.logLevel: Invalid value: "integer": spec\.logLevel in body must be of type string/] },
  },
  {
    name: 'spec as a string',
    area: 'KataConfig spec',
    act: (c) =>
      c.kubectl(
        ['create', '-f', '-'],
        'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: bad\nspec: "on"\n',
      ),
    expect: { refused: [/spec: Invalid value: "string": spec in body must be of type object/] },
  },
  {
    name: 'a second KataConfig while one exists',
    area: 'KataConfig spec',
    act: (c) => c.kubectl(['create', '-f', '-'], kcYaml('second', '  logLevel: info\n')),
    expect: { refused: [/A KataConfig instance already exists, refusing to create a duplicate/] },
  },
  {
    name: 'the live KataConfig patched to enablePeerPods "yes"',
    area: 'KataConfig spec',
    act: (c) => c.kubectl(['patch', 'kataconfig', KC, '--type=merge', '-p', '{"spec":{"enablePeerPods":"yes"}}']),
    expect: { refused: [/spec\.enablePeerPods: Invalid value: "string": spec\.enablePeerPods in body must be of type boolean/] },
  },
  {
    name: 'the live KataConfig patched to a selector operator that does not exist',
    area: 'KataConfig spec',
    act: (c) =>
      c.kubectl([
        'patch',
        'kataconfig',
        KC,
        '--type=merge',
        '-p',
        '{"spec":{"kataConfigPoolSelector":{"matchExpressions":[{"key":"zone","operator":"Equal","values":["a"]}]}}}',
      ]),
    expect: {
      refused: [/spec\.kataConfigPoolSelector\.matchExpressions\[0\]\.operator: Unsupported value: "Equal": supported values: "In"/],
    },
  },
  {
    name: 'the live KataConfig patched with a misspelt field',
    area: 'KataConfig spec',
    act: (c) => c.kubectl(['patch', 'kataconfig', KC, '--type=merge', '-p', '{"spec":{"enablePeerpods":false}}']),
    expect: { warned: [/unknown field "spec\.enablePeerpods"/] },
  },
  // --- status and finalizer written by hand ---------------------------------------------------------
  {
    name: 'status conditions and node counts overwritten by hand',
    area: 'KataConfig status',
    act: (c) =>
      c.kubectl(
        patchJson('kataconfig', KC, [
          { op: 'replace', path: '/status/kataNodes/readyNodeCount', value: 99 },
          { op: 'replace', path: '/status/runtimeClasses', value: ['made-up'] },
        ]).concat('--subresource=status'),
      ),
    expect: {
      healed: 'the status written back from the cluster',
      check: async (c) => (await c.kc()).status?.kataNodes?.readyNodeCount === 2,
    },
  },
  {
    name: 'status removed by hand',
    area: 'KataConfig status',
    act: (c) => c.kubectl(patchJson('kataconfig', KC, [{ op: 'remove', path: '/status' }]).concat('--subresource=status')),
    expect: { healed: 'the status written back', check: async (c) => (await c.kc()).status?.kataNodes?.nodeCount === 2 },
  },
  {
    name: 'the finalizer removed from a live KataConfig',
    area: 'finalizer',
    act: (c) => c.kubectl(['patch', 'kataconfig', KC, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']),
    expect: {
      healed: 'the finalizer put back',
      check: async (c) => (await c.kc()).metadata.finalizers?.includes(KATACONFIG_FINALIZER) === true,
    },
  },
  // --- the pool, the MachineConfigs, the RuntimeClasses and the node labels --------------------------
  {
    name: 'the kata-oc pool deleted',
    area: 'pool',
    act: (c) => c.kubectl(['delete', 'mcp', KATA_POOL, '--wait=false']),
    expect: {
      healed: 'the pool recreated',
      check: async (c) =>
        (await c.client.find(MachineConfigPools, KATA_POOL))?.metadata.deletionTimestamp === undefined &&
        !!(await c.client.find(MachineConfigPools, KATA_POOL)),
    },
  },
  {
    name: 'the kata-oc pool machineConfigSelector pointed elsewhere',
    area: 'pool',
    act: (c) =>
      c.kubectl(
        patchJson('mcp', KATA_POOL, [
          { op: 'replace', path: '/spec/machineConfigSelector', value: { matchLabels: { 'example.com/mine': 'yes' } } },
        ]),
      ),
    expect: {
      healed: 'the machineConfigSelector restored',
      check: async (c) =>
        !JSON.stringify((await c.client.get(MachineConfigPools, KATA_POOL)).spec.machineConfigSelector).includes('example.com'),
    },
  },
  {
    name: 'the kata-oc pool paused by hand',
    area: 'pool',
    act: (c) => c.kubectl(['patch', 'mcp', KATA_POOL, '--type=merge', '-p', '{"spec":{"paused":true}}']),
    expect: {
      kept: "left paused: pausing a pool is the administrator's call, and nothing is lost",
      check: async (c) => (await c.client.get(MachineConfigPools, KATA_POOL)).spec.paused === true,
      undo: (c) => c.kubectl(['patch', 'mcp', KATA_POOL, '--type=merge', '-p', '{"spec":{"paused":false}}']),
    },
  },
  {
    name: 'the extension MachineConfig deleted',
    area: 'MachineConfig',
    act: (c) => c.kubectl(['delete', 'mc', EXTENSION_MACHINE_CONFIG]),
    expect: {
      healed: 'the MachineConfig recreated',
      check: async (c) => !!(await c.client.find(MachineConfigs, EXTENSION_MACHINE_CONFIG)),
    },
  },
  {
    name: 'the extension MachineConfig emptied of its extension',
    area: 'MachineConfig',
    act: (c) => c.kubectl(patchJson('mc', EXTENSION_MACHINE_CONFIG, [{ op: 'replace', path: '/spec/extensions', value: [] }])),
    expect: {
      healed: 'the extension put back',
      check: async (c) =>
        JSON.stringify((await c.client.get(MachineConfigs, EXTENSION_MACHINE_CONFIG)).spec.extensions) === '["sandboxed-containers"]',
    },
  },
  {
    name: 'the MachineConfig role label removed (the pool would drop it)',
    area: 'MachineConfig',
    act: (c) => c.kubectl(['label', 'mc', EXTENSION_MACHINE_CONFIG, 'machineconfiguration.openshift.io/role-']),
    expect: {
      healed: 'the role label put back',
      check: async (c) =>
        (await c.client.get(MachineConfigs, EXTENSION_MACHINE_CONFIG)).metadata.labels?.['machineconfiguration.openshift.io/role'] ===
        KATA_POOL,
    },
  },
  {
    name: 'the kata RuntimeClass deleted',
    area: 'RuntimeClass',
    act: (c) => deleteRecreated(c, KATA_RUNTIME_CLASS),
    expect: { healed: 'RuntimeClass kata recreated', check: (c) => recreated(c, KATA_RUNTIME_CLASS) },
  },
  {
    name: 'the kata RuntimeClass node selector replaced by one no kata node matches',
    area: 'RuntimeClass',
    act: (c) =>
      c.kubectl(
        patchJson('runtimeclass', KATA_RUNTIME_CLASS, [
          { op: 'replace', path: '/scheduling/nodeSelector', value: { 'example.com/none': 'x' } },
        ]),
      ),
    expect: {
      healed: "the kata-oc node selector put back (the administrator's added key kept)",
      check: async (c) => (await c.client.get(RuntimeClasses, KATA_RUNTIME_CLASS)).scheduling?.nodeSelector?.[KATA_NODE_ROLE_LABEL] === '',
      undo: (c) =>
        c.kubectl([
          'patch',
          'runtimeclass',
          KATA_RUNTIME_CLASS,
          '--type=merge',
          '-p',
          '{"scheduling":{"nodeSelector":{"example.com/none":null}}}',
        ]),
    },
  },
  {
    name: 'the kata-remote RuntimeClass deleted',
    area: 'RuntimeClass',
    act: (c) => deleteRecreated(c, KATA_REMOTE_RUNTIME_CLASS),
    expect: { healed: 'RuntimeClass kata-remote recreated', check: (c) => recreated(c, KATA_REMOTE_RUNTIME_CLASS) },
  },
  {
    name: 'the kata-oc label removed from a worker',
    area: 'node labels',
    act: (c) => c.kubectl(['label', 'node', 'worker-0', `${KATA_NODE_ROLE_LABEL}-`]),
    expect: {
      healed: 'the label put back',
      check: async (c) => (await c.client.get(Nodes, 'worker-0')).metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined,
    },
  },
  {
    name: 'the kata-oc label put on a master the KataConfig does not select',
    area: 'node labels',
    act: (c) => c.kubectl(['label', 'node', 'master-0', `${KATA_NODE_ROLE_LABEL}=`]),
    expect: {
      healed: 'the label removed',
      check: async (c) => (await c.client.get(Nodes, 'master-0')).metadata.labels?.[KATA_NODE_ROLE_LABEL] === undefined,
    },
  },
  {
    name: 'the kata-oc label given a value ("true") the pool does not select',
    area: 'node labels',
    act: (c) => c.kubectl(['label', 'node', 'worker-1', `${KATA_NODE_ROLE_LABEL}=true`, '--overwrite']),
    expect: {
      healed: 'the label value put back to ""',
      check: async (c) => (await c.client.get(Nodes, 'worker-1')).metadata.labels?.[KATA_NODE_ROLE_LABEL] === '',
    },
  },
  {
    name: 'the owner reference removed from the extension MachineConfig',
    area: 'MachineConfig',
    act: (c) => c.kubectl(patchJson('mc', EXTENSION_MACHINE_CONFIG, [{ op: 'remove', path: '/metadata/ownerReferences' }])),
    expect: {
      healed: 'owned by the KataConfig again (so that it goes with it)',
      check: async (c) =>
        (await c.client.get(MachineConfigs, EXTENSION_MACHINE_CONFIG)).metadata.ownerReferences?.some((r) => r.kind === 'KataConfig') ===
        true,
    },
  },
  {
    name: 'the kata-crio-config ContainerRuntimeConfig deleted while logLevel is debug',
    area: 'MachineConfig',
    act: async (c) => {
      await c.client.patch(KataConfigs, KC, { spec: { logLevel: 'debug' } });
      await waitFor(async () => !!(await c.client.find(ContainerRuntimeConfigs, CRIO_CONFIG)) && intactNow(await c.kc()), {
        timeoutMs: 180_000,
        message: 'logLevel debug rolled out',
      });
      return c.kubectl(['delete', 'containerruntimeconfig', CRIO_CONFIG]);
    },
    expect: {
      healed: 'kata-crio-config recreated',
      check: async (c) => !!(await c.client.find(ContainerRuntimeConfigs, CRIO_CONFIG)),
      undo: (c) => c.client.patch(KataConfigs, KC, { spec: { logLevel: 'info' } }),
    },
  },
  // --- peer pods: ConfigMap, Secret and the objects made from them ----------------------------------
  {
    name: 'peer-pods-cm emptied',
    area: 'peer pods',
    act: (c) => c.kubectl(patchJson('configmap', PEER_PODS_CM, [{ op: 'remove', path: '/data' }], NS)),
    expect: {
      reported: 'every required key named as missing',
      check: async (c) => {
        const v = configValid(await c.kc());
        return (
          v?.status === 'False' && /CLOUD_PROVIDER is missing from ConfigMap peer-pods-cm: it is required; set it to "aws"/.test(v.message)
        );
      },
      fix: (c) => c.client.patch(ConfigMaps, PEER_PODS_CM, { data: CM_DATA }, { namespace: NS }),
    },
  },
  {
    name: 'INITDATA in peer-pods-cm that is plain TOML, not gzipped and base64-encoded',
    area: 'peer pods',
    act: async (c) => {
      adaptorTemplate = JSON.stringify((await c.client.find(DaemonSets, CAA_DAEMONSET, NS))?.spec.template);
      return c.client.patch(
        ConfigMaps,
        PEER_PODS_CM,
        { data: { INITDATA: 'version = "0.1.0"\nalgorithm = "sha384"\n\n[data]\n' } },
        { namespace: NS },
      );
    },
    expect: {
      reported: 'INITDATA named with the layer at fault and the fix; the adaptors untouched',
      check: async (c) => {
        const v = configValid(await c.kc());
        const template = JSON.stringify((await c.client.find(DaemonSets, CAA_DAEMONSET, NS))?.spec.template);
        return (
          v?.status === 'False' &&
          /INITDATA in ConfigMap peer-pods-cm: the initdata is plain TOML, not gzipped and base64-encoded: encode the TOML file with gzip -c initdata\.toml \| base64 -w0/.test(
            v.message,
          ) &&
          adaptorTemplate !== undefined &&
          template === adaptorTemplate
        );
      },
      fix: (c) => c.client.patch(ConfigMaps, PEER_PODS_CM, { data: { INITDATA: null } }, { namespace: NS }),
    },
  },
  {
    name: 'peer-pods-secret with its keys in lower case',
    area: 'peer pods',
    act: (c) =>
      c.client.patch(
        Secrets,
        PEER_PODS_SECRET,
        {
          data: {
            AWS_ACCESS_KEY_ID: null,
            AWS_SECRET_ACCESS_KEY: null,
            aws_access_key_id: b64(ACCESS_KEY),
            aws_secret_access_key: b64(SECRET_KEY),
          },
        },
        { namespace: NS },
      ),
    expect: {
      reported: 'the missing keys named, no secret value shown',
      check: async (c) => {
        const v = configValid(await c.kc());
        return (
          v?.status === 'False' &&
          /AWS_ACCESS_KEY_ID is missing in Secret peer-pods-secret: it is required for aws/.test(v.message) &&
          !v.message.includes(SECRET_KEY)
        );
      },
      fix: (c) =>
        c.client.patch(
          Secrets,
          PEER_PODS_SECRET,
          {
            data: {
              aws_access_key_id: null,
              aws_secret_access_key: null,
              AWS_ACCESS_KEY_ID: b64(ACCESS_KEY),
              AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY),
            },
          },
          { namespace: NS },
        ),
    },
  },
  {
    name: 'peer-pods-secret deleted',
    area: 'peer pods',
    act: (c) => c.kubectl(['delete', 'secret', PEER_PODS_SECRET, '-n', NS]),
    expect: {
      reported: 'the Secret named, with the command that makes it',
      check: async (c) => {
        const v = configValid(await c.kc());
        return (
          v?.status === 'False' &&
          /Secret peer-pods-secret not found in namespace .*; create it with oc create secret generic/.test(v.message)
        );
      },
      fix: (c) =>
        c.client.create(Secrets, {
          metadata: { name: PEER_PODS_SECRET, namespace: NS },
          stringData: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY },
        }),
    },
  },
  {
    name: 'the cloud-api-adaptor DaemonSet deleted',
    area: 'peer pods',
    act: (c) => c.kubectl(['delete', 'daemonset', CAA_DAEMONSET, '-n', NS, '--wait=false']),
    expect: { healed: 'osc-caa-ds recreated', check: async (c) => !!(await c.client.find(DaemonSets, CAA_DAEMONSET, NS)) },
  },
  {
    name: 'the PeerPodConfig deleted',
    area: 'peer pods',
    act: (c) => c.kubectl(['delete', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '--wait=false']),
    expect: {
      healed: 'peerpodconfig-openshift recreated',
      check: async (c) => !!(await c.client.find(PeerPodConfigs, PEER_POD_CONFIG, NS)),
    },
  },
  {
    name: 'the cloud-api-adaptor DaemonSet image edited',
    area: 'peer pods',
    act: (c) =>
      c.kubectl(
        patchJson(
          'daemonset',
          CAA_DAEMONSET,
          [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'example.com/other:1' }],
          NS,
        ),
      ),
    // osc rewrites its DaemonSet when what it wants changes (the configuration, the image it runs), not on
    // every hand edit: a kubectl rollout restart, for one, must not be undone. Deleting it recreates it.
    expect: {
      kept: "the edit stays until the configuration changes; deleting the DaemonSet puts osc's back",
      check: async (c) => JSON.stringify((await c.client.get(DaemonSets, CAA_DAEMONSET, NS)).spec.template).includes('example.com/other:1'),
      undo: async (c) => {
        await c.client.delete(DaemonSets, CAA_DAEMONSET, { namespace: NS });
        await waitFor(
          async () => {
            const ds = await c.client.find(DaemonSets, CAA_DAEMONSET, NS);
            return ds && !ds.metadata.deletionTimestamp && !JSON.stringify(ds.spec.template).includes('example.com/other:1');
          },
          { message: "osc's DaemonSet back" },
        );
      },
    },
  },
  {
    name: 'the PeerPodConfig limit edited by hand (documented)',
    area: 'peer pods',
    act: (c) => c.kubectl(['patch', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '--type=merge', '-p', '{"spec":{"limit":"3"}}']),
    // The documented way to change the limit (oc patch peerpodconfig): it holds until PEERPODS_LIMIT_PER_NODE changes.
    expect: {
      kept: "the administrator's limit holds",
      check: async (c) => String((await c.client.get(PeerPodConfigs, PEER_POD_CONFIG, NS)).spec?.limit) === '3',
      undo: (c) => c.kubectl(['patch', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '--type=merge', '-p', '{"spec":{"limit":"10"}}']),
    },
  },
  {
    name: 'the PeerPodConfig limit edited to a bad value',
    area: 'peer pods',
    act: (c) => c.kubectl(['patch', 'peerpodconfig', PEER_POD_CONFIG, '-n', NS, '--type=merge', '-p', '{"spec":{"limit":"ten"}}']),
    expect: {
      refused: [/spec\.limit: Invalid value: "object": limit is "ten": it must be a whole number of peer pod VMs per node, 1 or more/],
    },
  },
  // --- kata-remote pods at admission (osc's mutating webhook) ----------------------------------------
  {
    name: 'a kata-remote pod with default_vcpus "two"',
    area: 'pod admission',
    act: (c) => c.kubectl(['create', '-f', '-'], remotePod('vcpus', { 'io.katacontainers.config.hypervisor.default_vcpus': 'two' })),
    expect: {
      refused: [
        DENIED,
        /annotation io\.katacontainers\.config\.hypervisor\.default_vcpus is "two": it must be a whole number of vCPUs, 1 or more \(like "2"\)/,
      ],
    },
  },
  {
    name: 'a kata-remote pod with a vCPU count too large for any number',
    area: 'pod admission',
    act: (c) =>
      c.kubectl(
        ['create', '-f', '-'],
        remotePod('vcpus-huge', { 'io.katacontainers.config.hypervisor.default_vcpus': '99999999999999999999' }),
      ),
    expect: {
      refused: [DENIED, /default_vcpus is "99999999999999999999": it is too large; write a whole number of vCPUs, like "2"/],
    },
  },
  {
    name: 'a kata-remote pod asking for an instance type outside PODVM_INSTANCE_TYPES',
    area: 'pod admission',
    act: (c) => c.kubectl(['create', '-f', '-'], remotePod('type', { 'io.katacontainers.config.hypervisor.machine_type': 'm5.24xlarge' })),
    expect: {
      refused: [
        DENIED,
        /instance type "m5\.24xlarge" \(annotation io\.katacontainers\.config\.hypervisor\.machine_type\) is not allowed: the allowed types are t3\.small, t3\.medium, t3\.large; use one of them, or ask the administrator to add it to PODVM_INSTANCE_TYPES/,
      ],
    },
  },
  {
    name: 'a kata-remote pod whose policy annotation is plain Rego',
    area: 'pod admission',
    act: (c) =>
      c.kubectl(
        ['create', '-f', '-'],
        remotePod('policy', { 'io.katacontainers.config.agent.policy': 'package agent_policy\ndefault X := true\n' }),
      ),
    expect: {
      refused: [DENIED, /the policy annotation holds plain Rego, not base64; set it to the output of base64 -w0 policy\.rego/],
    },
  },
  {
    name: 'a kata-remote pod whose initdata annotation is base64 of TOML that was not gzipped',
    area: 'pod admission',
    act: (c) =>
      c.kubectl(
        ['create', '-f', '-'],
        remotePod('initdata', {
          'io.katacontainers.config.hypervisor.cc_init_data': b64('version = "0.1.0"\nalgorithm = "sha384"\n\n[data]\n'),
        }),
      ),
    expect: {
      refused: [
        DENIED,
        /annotation io\.katacontainers\.config\.hypervisor\.cc_init_data: the initdata is base64 of text, not of gzip: gzip it before encoding/,
      ],
    },
  },
  {
    name: 'a kata-remote pod larger than every allowed instance type',
    area: 'pod admission',
    act: (c) =>
      c.kubectl(['create', '-f', '-'], remotePod('too-big', {}, '    resources:\n      limits:\n        cpu: "1"\n        memory: 64Gi')),
    expect: {
      refused: [
        DENIED,
        /the pod needs 1 vCPUs? and 65536 MiB of memory, more than any allowed instance type offers: .*; lower the containers' CPU\/memory limits, or ask the administrator to add a larger type to PODVM_INSTANCE_TYPES/,
      ],
    },
  },
];

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('bad input on a live cluster: refused with the field and the fix, or healed; the operator survives', () => {
  const cluster = useDevCluster({
    workers: 2,
    platform: 'AWS',
    rebootMs: 300,
    awsUsers: [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }],
    // No Cloud Credential Operator: peer-pods-secret is the only source, so its absence is bad input here.
    cloudCredentialOperator: false,
  });
  let operator: Operator;
  let stopped: unknown = 'running';
  const ac = new AbortController();
  let run: Promise<void>;

  before(async () => {
    operator = await createOperator({
      kubeConfig: cluster.dev.controlPlane.kubeConfig,
      log: testLogger(),
      leaderElection: false,
      metricsAddress: '127.0.0.1:0',
      healthAddress: '127.0.0.1:0',
      webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}' },
      metrics: new RuntimeMetrics(),
      peerPods: { blockedRecheckMs: 60_000 },
    });
    run = operator.run(ac.signal).then(
      () => {
        stopped = 'returned';
      },
      (e) => {
        stopped = e;
      },
    );
  });
  after(async () => {
    ac.abort();
    await run;
  });

  const c: Ctx = {
    kubectl: (args, input) => cluster.dev.controlPlane.kubectl(args, { input }),
    get client() {
      return cluster.dev.client;
    },
    kc: () => cluster.dev.client.get(KataConfigs, KC),
  };

  const intact = intactNow;

  async function assertOperatorHealthy(row: string): Promise<void> {
    assert.equal(stopped, 'running', `${row}: the operator stopped (${String(stopped)})`);
    const address = operator.manager.healthAddress;
    assert.ok(address, 'health endpoint bound');
    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`http://${address}${path}`);
      assert.equal(res.status, 200, `${row}: ${path} answers ${res.status}`);
    }
  }

  async function assertStateKept(row: string): Promise<void> {
    let last: KataConfig | undefined;
    await waitFor(
      async () => {
        last = await c.kc();
        return intact(last);
      },
      { timeoutMs: 180_000, message: `${row}: the KataConfig installed and valid again` },
    ).catch(async (e) => {
      const nodes = (await c.client.list(Nodes)).items.map((n) => ({
        name: n.metadata.name,
        labels: n.metadata.labels,
        annotations: n.metadata.annotations,
      }));
      throw new Error(`${(e as Error).message}\nstatus: ${JSON.stringify(last?.status)}\nnodes: ${JSON.stringify(nodes)}`);
    });
    for (const [rt, name] of [
      [MachineConfigPools, KATA_POOL],
      [MachineConfigs, EXTENSION_MACHINE_CONFIG],
      [RuntimeClasses, KATA_RUNTIME_CLASS],
      [RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS],
    ] as const) {
      assert.ok(await c.client.find(rt as typeof RuntimeClasses, name), `${row}: ${name} exists`);
    }
  }

  test('set up: kata and peer pods installed on both workers', async () => {
    await waitFor(() => operator.manager.isReady, { message: 'operator ready' });
    await waitForDefaultServiceAccount(c.client, 'default');
    await c.client.create(Secrets, {
      metadata: { name: PEER_PODS_SECRET, namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY },
    });
    await c.client.create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data: CM_DATA });
    await c.client.create(KataConfigs, { metadata: { name: KC }, spec: { enablePeerPods: true } });
    await waitFor(async () => intact(await c.kc()), { timeoutMs: 180_000, message: 'installed' });
    await assertOperatorHealthy('set up');
  });

  test(`the table has rows in every area (${rows.length} rows)`, () => {
    const areas = new Set(rows.map((r) => r.area));
    for (const a of [
      'KataConfig spec',
      'KataConfig status',
      'finalizer',
      'pool',
      'MachineConfig',
      'RuntimeClass',
      'node labels',
      'peer pods',
      'pod admission',
    ]) {
      assert.ok(areas.has(a as Row['area']), a);
    }
  });

  for (const row of rows) {
    test(`[${row.area}] ${row.name}`, async () => {
      const before = await c.kc();
      const r = (await row.act(c)) as { code?: number | null; stdout?: string; stderr?: string } | undefined;
      const e = row.expect;
      if ('warned' in e) {
        assert.ok(r && typeof r.code === 'number', 'a kubectl result');
        assert.equal(r.code, 0, r.stderr);
        for (const m of e.warned) assert.match(r.stderr ?? '', m);
        assert.deepEqual((await c.kc()).spec, before.spec, 'the unknown field was dropped');
      } else if ('refused' in e) {
        assert.ok(r && typeof r.code === 'number', 'a kubectl result');
        assert.notEqual(r.code, 0, `accepted: ${r.stdout}`);
        for (const m of e.refused) assert.match(r.stderr ?? '', m);
        const after = await c.kc();
        assert.deepEqual(after.spec, before.spec, 'the refused change left the spec as it was');
      } else {
        if (r && typeof r === 'object' && 'code' in r) assert.equal(r.code, 0, `the bad action itself failed: ${r.stderr}`);
        if ('reported' in e) {
          await waitFor(() => e.check(c), { timeoutMs: 60_000, message: `${row.name}: ${e.reported}` });
          await assertOperatorHealthy(row.name);
          await e.fix(c);
        } else if ('kept' in e) {
          await assertOperatorHealthy(row.name);
          await assertStateKept(row.name);
          assert.ok(await e.check(c), `${row.name}: ${e.kept}`);
          await e.undo(c);
        } else {
          await waitFor(() => e.check(c), { timeoutMs: 120_000, message: `${row.name}: ${e.healed}` });
          await e.undo?.(c);
        }
      }
      await assertOperatorHealthy(row.name);
      await assertStateKept(row.name);
    });
  }
});
