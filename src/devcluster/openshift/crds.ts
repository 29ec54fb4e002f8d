import type { CustomResourceDefinition } from '../../kube/resources.ts';

/**
 * The OpenShift API types that osc reads or writes, as CustomResourceDefinitions for the dev cluster's
 * plain kube-apiserver. Names, scopes, short names, subresources and printer columns are those of the real
 * OpenShift definitions (openshift/api), so that `kubectl get mcp` looks like `oc get mcp`. Schemas type
 * the fields osc and the simulator use; where the real schema is large (Ignition configs, platform
 * status, kubelet configuration) unknown fields are preserved rather than modelled.
 */

type Schema = Record<string, unknown>;

const str = (description?: string): Schema => (description ? { type: 'string', description } : { type: 'string' });
const int = (format: 'int32' | 'int64' = 'int32'): Schema => ({ type: 'integer', format });
const strList = (extra: Schema = {}): Schema => ({ type: 'array', items: { type: 'string' }, ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({ type: 'object', properties, ...extra });
const preserved = (description?: string): Schema => ({
  type: 'object',
  'x-kubernetes-preserve-unknown-fields': true,
  ...(description ? { description } : {}),
});
const intOrString = (description?: string): Schema => ({
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  ...(description ? { description } : {}),
});

const labelSelector = (description: string): Schema =>
  obj(
    {
      matchExpressions: {
        type: 'array',
        items: obj(
          { key: str(), operator: str(), values: strList({ 'x-kubernetes-list-type': 'atomic' }) },
          { required: ['key', 'operator'] },
        ),
        'x-kubernetes-list-type': 'atomic',
      },
      matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    },
    { description, 'x-kubernetes-map-type': 'atomic' },
  );

const objectReference = obj({
  apiVersion: str(),
  fieldPath: str(),
  kind: str(),
  name: str(),
  namespace: str(),
  resourceVersion: str(),
  uid: str(),
});

const condition = obj({
  lastTransitionTime: { type: 'string', format: 'date-time', nullable: true },
  message: str(),
  reason: str(),
  status: str(),
  type: str(),
});

const topLevel = (spec: Schema, status?: Schema, required: string[] = []): Schema => ({
  type: 'object',
  ...(required.length ? { required } : {}),
  properties: {
    apiVersion: str(),
    kind: str(),
    metadata: { type: 'object' },
    spec,
    ...(status ? { status } : {}),
  },
});

interface CrdInput {
  group: string;
  plural: string;
  singular: string;
  kind: string;
  shortNames?: string[];
  categories?: string[];
  schema: Schema;
  status: boolean;
  columns?: { name: string; jsonPath: string; type: string; description?: string }[];
  annotations?: Record<string, string>;
}

function crd(c: CrdInput): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${c.plural}.${c.group}`,
      labels: { 'osc.dev/simulated-openshift-api': 'true' },
      annotations: {
        'api-approved.openshift.io': 'https://github.com/openshift/api/pull/1453',
        'include.release.openshift.io/self-managed-high-availability': 'true',
        ...c.annotations,
      },
    },
    spec: {
      group: c.group,
      scope: 'Cluster',
      names: {
        kind: c.kind,
        listKind: `${c.kind}List`,
        plural: c.plural,
        singular: c.singular,
        ...(c.shortNames ? { shortNames: c.shortNames } : {}),
        ...(c.categories ? { categories: c.categories } : {}),
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: c.schema },
          ...(c.status ? { subresources: { status: {} } } : {}),
          ...(c.columns ? { additionalPrinterColumns: c.columns } : {}),
        },
      ],
    },
  };
}

const MCO_GROUP = 'machineconfiguration.openshift.io';

export function machineConfigCRD(): CustomResourceDefinition {
  return crd({
    group: MCO_GROUP,
    plural: 'machineconfigs',
    singular: 'machineconfig',
    kind: 'MachineConfig',
    shortNames: ['mc'],
    status: false,
    schema: topLevel(
      obj(
        {
          baseOSExtensionsContainerImage: str('the base OS extensions container image'),
          config: { ...preserved('an Ignition config object'), nullable: true },
          extensions: strList({ nullable: true, description: 'RHCOS extensions to install' }),
          fips: { type: 'boolean', description: 'whether FIPS mode is enabled' },
          kernelArguments: strList({ nullable: true, 'x-kubernetes-list-type': 'atomic' }),
          kernelType: str('default, realtime or 64k-pages'),
          osImageURL: str('the OS image to boot'),
        },
        { description: 'MachineConfigSpec is the spec for MachineConfig' },
      ),
    ),
    columns: [
      {
        name: 'GeneratedByController',
        type: 'string',
        description:
          'Version of the controller that generated the machineconfig. This will be empty if the machineconfig is not managed by a controller.',
        jsonPath: '.metadata.annotations.machineconfiguration\\.openshift\\.io/generated-by-controller-version',
      },
      {
        name: 'IgnitionVersion',
        type: 'string',
        description: 'Version of Ignition that machine-config-daemon uses to configure the machine.',
        jsonPath: '.spec.config.ignition.version',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

export function machineConfigPoolCRD(): CustomResourceDefinition {
  const configuration = obj({
    ...(objectReference.properties as Record<string, Schema>),
    source: { type: 'array', items: objectReference, 'x-kubernetes-list-type': 'atomic' },
  });
  return crd({
    group: MCO_GROUP,
    plural: 'machineconfigpools',
    singular: 'machineconfigpool',
    kind: 'MachineConfigPool',
    shortNames: ['mcp'],
    status: true,
    schema: topLevel(
      obj({
        configuration,
        machineConfigSelector: labelSelector('selects the MachineConfigs that the pool renders'),
        nodeSelector: labelSelector('selects the nodes of the pool'),
        maxUnavailable: intOrString('how many nodes may be updating (unavailable) at once; an integer or a percentage; default 1'),
        paused: { type: 'boolean', description: 'when true, no node of the pool is updated' },
        pinnedImageSets: { type: 'array', items: preserved() },
      }),
      obj({
        certExpirys: { type: 'array', items: preserved() },
        conditions: { type: 'array', items: condition },
        configuration,
        degradedMachineCount: int(),
        machineCount: int(),
        observedGeneration: int('int64'),
        poolSynchronizersStatus: { type: 'array', items: preserved() },
        readyMachineCount: int(),
        unavailableMachineCount: int(),
        updatedMachineCount: int(),
      }),
    ),
    columns: [
      { name: 'Config', type: 'string', jsonPath: '.status.configuration.name' },
      {
        name: 'Updated',
        type: 'string',
        description: 'When all the machines in the pool are updated to the correct machine config.',
        jsonPath: '.status.conditions[?(@.type=="Updated")].status',
      },
      {
        name: 'Updating',
        type: 'string',
        description:
          'When at least one of machine is not either not updated or is in the process of updating to the desired machine config.',
        jsonPath: '.status.conditions[?(@.type=="Updating")].status',
      },
      {
        name: 'Degraded',
        type: 'string',
        description: 'When progress is blocked on updating one or more nodes or the pool configuration is failing.',
        jsonPath: '.status.conditions[?(@.type=="Degraded")].status',
      },
      {
        name: 'MachineCount',
        type: 'number',
        description: 'Total number of machines in the machine config pool',
        jsonPath: '.status.machineCount',
      },
      {
        name: 'ReadyMachineCount',
        type: 'number',
        description: 'Total number of ready machines targeted by the pool',
        jsonPath: '.status.readyMachineCount',
      },
      {
        name: 'UpdatedMachineCount',
        type: 'number',
        description: 'Total number of machines targeted by the pool that have the CurrentMachineConfig as their config',
        jsonPath: '.status.updatedMachineCount',
      },
      {
        name: 'DegradedMachineCount',
        type: 'number',
        description: 'Total number of machine marked degraded (or unreconcilable)',
        jsonPath: '.status.degradedMachineCount',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  });
}

const mcoConfigStatus = obj({
  conditions: { type: 'array', items: condition },
  observedGeneration: int('int64'),
});

export function containerRuntimeConfigCRD(): CustomResourceDefinition {
  return crd({
    group: MCO_GROUP,
    plural: 'containerruntimeconfigs',
    singular: 'containerruntimeconfig',
    kind: 'ContainerRuntimeConfig',
    shortNames: ['ctrcfg'],
    status: true,
    schema: topLevel(
      obj(
        {
          containerRuntimeConfig: obj(
            {
              logLevel: str('CRI-O log level: fatal, panic, error, warn, info, debug or trace'),
              pidsLimit: int('int64'),
              logSizeMax: intOrString(),
              overlaySize: intOrString(),
              defaultRuntime: str(),
            },
            { 'x-kubernetes-preserve-unknown-fields': true },
          ),
          machineConfigPoolSelector: labelSelector('selects the MachineConfigPools the configuration applies to'),
        },
        { required: ['containerRuntimeConfig'] },
      ),
      mcoConfigStatus,
      ['spec'],
    ),
  });
}

export function kubeletConfigCRD(): CustomResourceDefinition {
  return crd({
    group: MCO_GROUP,
    plural: 'kubeletconfigs',
    singular: 'kubeletconfig',
    kind: 'KubeletConfig',
    status: true,
    schema: topLevel(
      obj({
        autoSizingReserved: { type: 'boolean', nullable: true },
        kubeletConfig: preserved('the kubelet configuration fields to override'),
        logLevel: { type: 'integer', format: 'int32', nullable: true },
        machineConfigPoolSelector: labelSelector('selects the MachineConfigPools the configuration applies to'),
        tlsSecurityProfile: preserved(),
      }),
      mcoConfigStatus,
    ),
  });
}

export function infrastructureCRD(): CustomResourceDefinition {
  return crd({
    group: 'config.openshift.io',
    plural: 'infrastructures',
    singular: 'infrastructure',
    kind: 'Infrastructure',
    status: true,
    schema: topLevel(
      obj({
        cloudConfig: obj({ key: str(), name: str() }),
        platformSpec: obj({ type: str() }, { 'x-kubernetes-preserve-unknown-fields': true }),
      }),
      obj({
        apiServerInternalURI: str(),
        apiServerURL: str(),
        controlPlaneTopology: str('HighlyAvailable, SingleReplica or External'),
        cpuPartitioning: str(),
        etcdDiscoveryDomain: str(),
        infrastructureName: str(),
        infrastructureTopology: str('HighlyAvailable or SingleReplica'),
        platform: str(),
        platformStatus: obj(
          { type: str(), aws: obj({ region: str() }, { 'x-kubernetes-preserve-unknown-fields': true }) },
          { 'x-kubernetes-preserve-unknown-fields': true },
        ),
      }),
      ['spec'],
    ),
  });
}

/** The API server's configuration: osc follows its TLS security profile. */
export function apiServerCRD(): CustomResourceDefinition {
  return crd({
    group: 'config.openshift.io',
    plural: 'apiservers',
    singular: 'apiserver',
    kind: 'APIServer',
    status: true,
    schema: topLevel(
      obj(
        { tlsSecurityProfile: preserved('Old, Intermediate, Modern or Custom (type, and custom.ciphers/minTLSVersion)') },
        {
          'x-kubernetes-preserve-unknown-fields': true,
        },
      ),
      obj({}, { 'x-kubernetes-preserve-unknown-fields': true }),
      ['spec'],
    ),
  });
}

/** The cluster's release (`version`): confidential containers on bare metal need a minimum. */
export function clusterVersionCRD(): CustomResourceDefinition {
  return crd({
    group: 'config.openshift.io',
    plural: 'clusterversions',
    singular: 'clusterversion',
    kind: 'ClusterVersion',
    status: true,
    schema: topLevel(
      obj({ channel: str(), clusterID: str() }, { 'x-kubernetes-preserve-unknown-fields': true }),
      obj(
        { desired: obj({ version: str(), image: str() }, { 'x-kubernetes-preserve-unknown-fields': true }) },
        { 'x-kubernetes-preserve-unknown-fields': true },
      ),
      ['spec'],
    ),
    columns: [{ name: 'Version', jsonPath: '.status.desired.version', type: 'string' }],
  });
}

/** Every OpenShift CRD the dev cluster serves. */
export function openshiftCRDs(): CustomResourceDefinition[] {
  return [
    machineConfigCRD(),
    machineConfigPoolCRD(),
    containerRuntimeConfigCRD(),
    kubeletConfigCRD(),
    infrastructureCRD(),
    apiServerCRD(),
    clusterVersionCRD(),
  ];
}
