/**
 * The OLM bundle (registry+v1 format: manifests/ + metadata/annotations.yaml) generated from the objects
 * `osc install` applies (src/install/manifests.ts), so that both install paths grant the same permissions and
 * run the same Deployment. How each install object maps into the bundle:
 *
 * - Namespace: none. The documented OLM procedure has the administrator create it (with the OperatorGroup
 *   and Subscription); the CSV suggests it (operatorframework.io/suggested-namespace).
 * - CustomResourceDefinitions: one file each, owned by the CSV with descriptors for the console's form.
 * - ServiceAccount, ClusterRole(Binding), Role(Binding): the CSV's clusterPermissions and permissions (OLM
 *   creates the account, roles and bindings itself).
 * - A ClusterRole bound to others (osc-metrics-reader, for Prometheus): a manifest each, with its binding.
 * - The events Role in `default`: OLM binds CSV permissions only in the operator's namespace, so these
 *   rules go into clusterPermissions (the one place the bundle grants more than `osc install`).
 * - Deployment: the CSV's install strategy.
 * - Webhook configurations: none, and no CSV webhookdefinitions (for which OLM would make certificates).
 *   The operator registers them itself at start (its ClusterRole allows exactly that); on OpenShift its
 *   certificate comes from the service CA, asked by the webhook Service's annotation (docs/security.md).
 * - Anything else (Services, ServiceMonitors, ...): a manifest file each, if OLM can carry its kind.
 */
import { stringify } from 'yaml';
import { objectName } from '../api/meta.ts';
import { OPERATOR_NAMESPACE } from '../api/names.ts';
import { unpinnedImages } from '../install/images.ts';
import type { PolicyRule } from '../install/rbac.ts';
import { ENSURE_SCCS_FLAG, sccKeeperRules } from '../install/scc.ts';
import type { KubeObject } from '../kube/types.ts';
import { upgradeGraph } from './upgrade-graph.ts';

export const PACKAGE = 'sandboxed-containers-operator';
export const CHANNEL = 'stable';
export const DISPLAY_NAME = 'OpenShift sandboxed containers Operator';

/**
 * The kinds OLM installs from a bundle besides the CSV and CRDs (operator-registry's supported resources),
 * with whether they are namespaced (then they go into the operator's namespace).
 */
export const OLM_SUPPORTED_KINDS: Record<string, boolean> = {
  Secret: true,
  ConfigMap: true,
  Service: true,
  ServiceAccount: true,
  Role: true,
  RoleBinding: true,
  ClusterRole: false,
  ClusterRoleBinding: false,
  ServiceMonitor: true,
  PodMonitor: true,
  PrometheusRule: true,
  PodDisruptionBudget: true,
  PriorityClass: false,
  VerticalPodAutoscaler: true,
  NetworkPolicy: true,
  ConsoleYAMLSample: false,
  ConsoleQuickStart: false,
  ConsoleCLIDownload: false,
  ConsoleLink: false,
  ConsolePlugin: false,
};

export interface BundleFile {
  /** Path under bundle/. */
  path: string;
  text: string;
}

export interface Bundle {
  csv: KubeObject & { spec: CSVSpec };
  crds: KubeObject[];
  /** Other objects installed alongside the operator (namespace removed: OLM puts them in its own). */
  extras: KubeObject[];
  /**
   * What `osc install` applies that no bundle can carry: osc's SecurityContextConstraints (OLM installs a
   * fixed list of kinds, SCCs not among them). The operator of the bundle keeps them itself
   * (`--ensure-sccs`, with the rules of sccKeeperRules in its clusterPermissions).
   */
  unbundled: KubeObject[];
  annotations: Record<string, string>;
}

/** Kinds the bundle leaves to the administrator (see Bundle.unbundled). */
export const UNBUNDLED_KINDS = ['SecurityContextConstraints'];

interface StrategyDeployment {
  name: string;
  label?: Record<string, string>;
  spec: unknown;
}

export interface CSVSpec {
  install: {
    strategy: 'deployment';
    spec: {
      clusterPermissions: { serviceAccountName: string; rules: PolicyRule[] }[];
      permissions: { serviceAccountName: string; rules: PolicyRule[] }[];
      deployments: StrategyDeployment[];
    };
  };
  customresourcedefinitions: { owned: OwnedCRD[] };
  relatedImages: { name: string; image: string }[];
  [key: string]: unknown;
}

interface Descriptor {
  path: string;
  displayName: string;
  description?: string;
  'x-descriptors'?: string[];
}

interface OwnedCRD {
  name: string;
  version: string;
  kind: string;
  displayName: string;
  description?: string;
  resources?: { kind: string; version: string; name?: string }[];
  specDescriptors: Descriptor[];
  statusDescriptors: Descriptor[];
}

interface SchemaNode {
  type?: string;
  description?: string;
  enum?: unknown[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  'x-kubernetes-int-or-string'?: boolean;
}

/** "kataConfigPoolSelector" -> "Kata Config Pool Selector", as the console shows field names. */
export function displayNameOf(path: string): string {
  const last = path.split('.').pop() ?? path;
  const words = last.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const UI = 'urn:alm:descriptor:com.tectonic.ui';

/** Which console form widget fits a field of the spec. */
function specWidget(name: string, node: SchemaNode): string[] {
  if (node.type === 'boolean') return [`${UI}:booleanSwitch`];
  if (node.enum) return node.enum.map((v) => `${UI}:select:${String(v)}`);
  if (node.type === 'integer' || node.type === 'number' || node['x-kubernetes-int-or-string']) return [`${UI}:number`];
  if (/selector$/i.test(name)) return [`${UI}:selector:core:v1:Node`];
  if (/secretname$/i.test(name)) return ['urn:alm:descriptor:io.kubernetes:Secret'];
  if (/configmapname$/i.test(name)) return ['urn:alm:descriptor:io.kubernetes:ConfigMap'];
  if (node.type === 'string') return [`${UI}:text`];
  return [`${UI}:advanced`];
}

function statusWidget(name: string, node: SchemaNode): string[] | undefined {
  if (name === 'conditions') return ['urn:alm:descriptor:io.kubernetes.conditions'];
  if (node.type === 'integer' || node.type === 'number') return ['urn:alm:descriptor:text'];
  return undefined;
}

/**
 * Spec and status descriptors from the CRD's schema: every top-level field, and the fields of status
 * objects one level down (the node counts and lists an administrator follows during an install).
 */
export function descriptorsOf(crd: KubeObject): { spec: Descriptor[]; status: Descriptor[] } {
  const version = (crd as unknown as { spec: { versions: { schema: { openAPIV3Schema: SchemaNode } }[] } }).spec.versions[0];
  const props = version?.schema.openAPIV3Schema.properties ?? {};
  const describe = (path: string, node: SchemaNode, widget: string[] | undefined): Descriptor => ({
    path,
    displayName: displayNameOf(path),
    ...(node.description ? { description: node.description } : {}),
    ...(widget ? { 'x-descriptors': widget } : {}),
  });
  const spec = Object.entries(props.spec?.properties ?? {}).map(([k, n]) => describe(k, n, specWidget(k, n)));
  const status: Descriptor[] = [];
  for (const [k, n] of Object.entries(props.status?.properties ?? {})) {
    if (n.type === 'object' && n.properties) {
      for (const [k2, n2] of Object.entries(n.properties)) status.push(describe(`${k}.${k2}`, n2, statusWidget(k2, n2)));
    } else {
      status.push(describe(k, n, statusWidget(k, n)));
    }
  }
  return { spec, status };
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** The owned CRD entry of the CSV. */
function ownedCRD(crd: KubeObject): OwnedCRD {
  const s = (crd as unknown as { spec: { names: { kind: string }; versions: { name: string; schema: { openAPIV3Schema: SchemaNode } }[] } })
    .spec;
  const { spec, status } = descriptorsOf(crd);
  const kind = s.names.kind;
  const resources: Record<string, { kind: string; version: string }[]> = {
    KataConfig: [
      { kind: 'MachineConfigPool', version: 'v1' },
      { kind: 'MachineConfig', version: 'v1' },
      { kind: 'RuntimeClass', version: 'v1' },
      { kind: 'Node', version: 'v1' },
    ],
    PeerPodConfig: [
      { kind: 'DaemonSet', version: 'v1' },
      { kind: 'ConfigMap', version: 'v1' },
      { kind: 'Node', version: 'v1' },
    ],
  };
  return {
    name: objectName(crd),
    version: s.versions[0]?.name ?? '',
    kind,
    displayName: displayNameOf(kind),
    ...(s.versions[0]?.schema.openAPIV3Schema.description ? { description: s.versions[0].schema.openAPIV3Schema.description } : {}),
    ...(resources[kind] ? { resources: resources[kind] } : {}),
    specDescriptors: spec,
    statusDescriptors: status,
  };
}

/** The example KataConfig the console offers in "Create KataConfig" (the documented default). */
export const ALM_EXAMPLES = [
  {
    apiVersion: 'kataconfiguration.openshift.io/v1',
    kind: 'KataConfig',
    metadata: { name: 'cluster-kataconfig' },
    spec: { checkNodeEligibility: false, logLevel: 'info' },
  },
];

export interface BundleOptions {
  version: string;
  /** The versions released before this one (default RELEASED_VERSIONS): the upgrade graph's edges. */
  released?: readonly string[];
  /**
   * A release bundle: every image must be named by digest (src/install/images.ts), so that a disconnected
   * mirror holds exactly what the cluster runs. Refused, naming each image, otherwise.
   */
  release?: boolean;
  /** RFC 3339 time the CSV says it was made (left out by default, so that the generated files are reproducible). */
  createdAt?: string;
}

/** The bundle from `osc install`'s objects (in its order). */
export function olmBundle(objects: readonly KubeObject[], opts: BundleOptions): Bundle {
  const ns = OPERATOR_NAMESPACE;
  const crds: KubeObject[] = [];
  const extras: KubeObject[] = [];
  const clusterRules: PolicyRule[] = [];
  const nsRules: PolicyRule[] = [];
  const deployments: StrategyDeployment[] = [];
  let serviceAccount = '';
  const unbundled: KubeObject[] = [];
  const roles = new Map<string, KubeObject & { rules?: PolicyRule[] }>();
  const bound: { role: KubeObject & { rules?: PolicyRule[] }; namespace?: string }[] = [];
  const key = (kind: string, name: string, namespace?: string) => `${kind}/${namespace ?? ''}/${name}`;
  for (const o of objects)
    if (o.kind === 'Role' || o.kind === 'ClusterRole') roles.set(key(o.kind, objectName(o), o.metadata.namespace), o);
  // Roles bound to someone other than the operator (e.g. the metrics reader, for scrapers) are no CSV
  // permissions: they ship as manifests of their own, with their bindings.
  // The operator's account is the one its Deployment runs as; the others (its workloads', with their SCC
  // grants) ship as manifests of their own.
  const operatorAccounts = new Set(
    objects
      .filter((o) => o.kind === 'Deployment')
      .map(
        (o) => (o as unknown as { spec: { template: { spec: { serviceAccountName?: string } } } }).spec.template.spec.serviceAccountName,
      ),
  );
  const forOperator = (binding: KubeObject) =>
    ((binding as unknown as { subjects?: { kind: string; name: string }[] }).subjects ?? []).some(
      (s) => s.kind === 'ServiceAccount' && operatorAccounts.has(s.name),
    );
  const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
  const foreign = (o: KubeObject) =>
    (o.kind === 'ServiceAccount' && !operatorAccounts.has(o.metadata.name)) ||
    ((o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') && !forOperator(o)) ||
    ((o.kind === 'ClusterRole' || o.kind === 'Role') &&
      !bindings.some(
        (b) => forOperator(b) && (b as unknown as { roleRef: { kind: string; name: string } }).roleRef.name === o.metadata.name,
      ));

  for (const o of objects) {
    if (UNBUNDLED_KINDS.includes(o.kind ?? '')) {
      unbundled.push(clone(o));
      continue;
    }
    if (foreign(o)) {
      const copy = clone(o);
      if (OLM_SUPPORTED_KINDS[o.kind ?? '']) delete copy.metadata.namespace;
      extras.push(copy);
      continue;
    }
    switch (o.kind) {
      case 'Namespace':
      case 'ValidatingWebhookConfiguration':
      case 'MutatingWebhookConfiguration':
      case 'Role':
      case 'ClusterRole':
        break;
      case 'CustomResourceDefinition':
        crds.push(clone(o));
        break;
      case 'ServiceAccount':
        if (serviceAccount) throw new Error(`the bundle supports one ServiceAccount; found ${serviceAccount} and ${o.metadata.name}`);
        serviceAccount = objectName(o);
        break;
      case 'ClusterRoleBinding':
      case 'RoleBinding': {
        const ref = (o as unknown as { roleRef: { kind: string; name: string } }).roleRef;
        const role = roles.get(key(ref.kind, ref.name, ref.kind === 'Role' ? o.metadata.namespace : undefined));
        if (!role) throw new Error(`${o.kind} ${o.metadata.name} refers to ${ref.kind} ${ref.name}, which osc install does not create`);
        bound.push({ role, namespace: o.kind === 'RoleBinding' ? o.metadata.namespace : undefined });
        break;
      }
      case 'Deployment': {
        const d = clone(o) as KubeObject & { spec: unknown };
        deployments.push({ name: objectName(d), ...(d.metadata.labels ? { label: d.metadata.labels } : {}), spec: d.spec });
        break;
      }
      default: {
        const namespaced = OLM_SUPPORTED_KINDS[o.kind ?? ''];
        if (namespaced === undefined) throw new Error(`OLM cannot install a ${o.kind} from a bundle (${o.metadata.name})`);
        const copy = clone(o);
        if (namespaced) {
          if (copy.metadata.namespace && copy.metadata.namespace !== ns) {
            throw new Error(`${o.kind} ${o.metadata.name} is in namespace ${copy.metadata.namespace}: OLM installs it only into ${ns}`);
          }
          delete copy.metadata.namespace;
        }
        extras.push(copy);
      }
    }
  }
  for (const b of bound) {
    const rules = clone(b.role.rules ?? []);
    if (b.namespace === ns) nsRules.push(...rules);
    else clusterRules.push(...rules);
  }
  // The SCCs no bundle carries: the operator keeps them itself, allowed exactly that.
  if (unbundled.some((o) => o.kind === 'SecurityContextConstraints')) {
    clusterRules.push(...sccKeeperRules());
    for (const d of deployments) {
      const [manager] = (d.spec as { template: { spec: { containers: { args?: string[] }[] } } }).template.spec.containers;
      if (manager && !manager.args?.includes(ENSURE_SCCS_FLAG)) manager.args = [...(manager.args ?? []), ENSURE_SCCS_FLAG];
    }
  }
  if (!serviceAccount) throw new Error('osc install creates no ServiceAccount for the operator');

  // The containers' images, and the operands' images the operator is given as RELATED_IMAGE_* variables.
  type Container = { name: string; image: string; env?: { name: string; value?: string }[] };
  const images = deployments.flatMap((d) =>
    ((d.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers ?? []).flatMap((c) => [
      { name: c.name === 'manager' ? 'osc-operator' : c.name, image: c.image },
      ...(c.env ?? [])
        .filter((e) => e.name.startsWith('RELATED_IMAGE_') && e.value)
        .map((e) => ({ name: e.name.slice('RELATED_IMAGE_'.length).toLowerCase().replace(/_/g, '-'), image: e.value ?? '' })),
    ]),
  );
  const operatorImage = images[0]?.image ?? '';
  if (opts.release) {
    const loose = unpinnedImages(objects);
    if (loose.length) throw new Error(`a release bundle names every image by digest; these are by tag: ${loose.join('; ')}`);
  }
  const graph = upgradeGraph(PACKAGE, opts.version, opts.released);
  const csv = {
    apiVersion: 'operators.coreos.com/v1alpha1',
    kind: 'ClusterServiceVersion',
    metadata: {
      name: `${PACKAGE}.v${opts.version}`,
      annotations: {
        'alm-examples': JSON.stringify(ALM_EXAMPLES, null, 2),
        capabilities: 'Seamless Upgrades',
        categories: 'Security',
        containerImage: operatorImage,
        ...(opts.createdAt ? { createdAt: opts.createdAt } : {}),
        ...(graph.skipRange ? { 'olm.skipRange': graph.skipRange } : {}),
        description: 'Kata Containers and peer pods for OpenShift, driven by one KataConfig.',
        'operatorframework.io/suggested-namespace': ns,
        'operators.openshift.io/infrastructure-features': '["disconnected"]',
        'operators.operatorframework.io/internal-objects': '["peerpodconfigs.confidentialcontainers.org"]',
        support: 'osc',
      },
      labels: { 'operatorframework.io/arch.amd64': 'supported', 'operatorframework.io/os.linux': 'supported' },
    },
    spec: {
      displayName: DISPLAY_NAME,
      version: opts.version,
      ...(graph.replaces ? { replaces: graph.replaces } : {}),
      maturity: 'stable',
      minKubeVersion: '1.28.0',
      description: [
        'OpenShift sandboxed containers runs pods in lightweight virtual machines (Kata Containers), each with its own',
        'guest kernel, as an optional runtime class next to the default one.',
        '',
        'After installing the Operator, create one `KataConfig` (Create instance on the Operator page). The Operator',
        'then installs kata on the selected worker nodes through the Machine Config Operator, one node at a time, and',
        'creates the `kata` RuntimeClass when every selected node is ready. With `enablePeerPods: true` the pod VMs',
        'run in the cloud instead, through runtime class `kata-remote`.',
        '',
        `Install it in namespace \`${ns}\`.`,
        ...(unbundled.length
          ? [
              '',
              `The Operator creates its SecurityContextConstraints (${unbundled.map((o) => `\`${o.metadata.name}\``).join(', ')}) itself,`,
              'since a bundle cannot carry them, and keeps them as its release defines them. The bundle grants their use',
              "to the cloud-api-adaptor's, the kata monitor's and kata-deploy's ServiceAccounts alone.",
            ]
          : []),
      ].join('\n'),
      keywords: ['sandboxed-containers', 'kata', 'peer-pods', 'isolation', 'security'],
      provider: { name: 'osc' },
      maintainers: [{ name: 'osc', email: 'osc@example.com' }],
      links: [{ name: 'Source', url: 'https://github.com/openshift/sandboxed-containers-operator' }],
      installModes: [
        { type: 'OwnNamespace', supported: true },
        { type: 'SingleNamespace', supported: false },
        { type: 'MultiNamespace', supported: false },
        { type: 'AllNamespaces', supported: true },
      ],
      install: {
        strategy: 'deployment' as const,
        spec: {
          clusterPermissions: [{ serviceAccountName: serviceAccount, rules: clusterRules }],
          permissions: [{ serviceAccountName: serviceAccount, rules: nsRules }],
          deployments,
        },
      },
      customresourcedefinitions: { owned: crds.map(ownedCRD) },
      relatedImages: images,
    },
  } as KubeObject & { spec: CSVSpec };
  return {
    csv,
    crds,
    extras,
    unbundled,
    annotations: {
      'operators.operatorframework.io.bundle.mediatype.v1': 'registry+v1',
      'operators.operatorframework.io.bundle.manifests.v1': 'manifests/',
      'operators.operatorframework.io.bundle.metadata.v1': 'metadata/',
      'operators.operatorframework.io.bundle.package.v1': PACKAGE,
      'operators.operatorframework.io.bundle.channels.v1': CHANNEL,
      'operators.operatorframework.io.bundle.channel.default.v1': CHANNEL,
    },
  };
}

const yaml = (o: unknown) => stringify(o, { lineWidth: 0 });

/** operator-sdk's file names: <group>_<plural>.yaml for CRDs, <name>_<group>_<version>_<kind>.yaml otherwise. */
export function manifestFileName(o: KubeObject): string {
  if (o.kind === 'CustomResourceDefinition') {
    const s = (o as unknown as { spec: { group: string; names: { plural: string } } }).spec;
    return `${s.group}_${s.names.plural}.yaml`;
  }
  const apiVersion = o.apiVersion ?? '';
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return `${[o.metadata.name, group, version, o.kind?.toLowerCase()].filter(Boolean).join('_')}.yaml`;
}

export const BUNDLE_HEADER = '# Generated by "node tools/generate-packaging.ts" from the manifests of "osc install"; do not edit by hand.';

/** The files of bundle/: manifests, metadata and the bundle image's Dockerfile. */
export function bundleFiles(b: Bundle): BundleFile[] {
  const files: BundleFile[] = [
    { path: `manifests/${PACKAGE}.clusterserviceversion.yaml`, text: `${BUNDLE_HEADER}\n${yaml(b.csv)}` },
    ...[...b.crds, ...b.extras].map((o) => ({ path: `manifests/${manifestFileName(o)}`, text: `${BUNDLE_HEADER}\n${yaml(o)}` })),
    { path: 'metadata/annotations.yaml', text: `${BUNDLE_HEADER}\n${yaml({ annotations: b.annotations })}` },
  ];
  const labels = Object.entries(b.annotations).map(([k, v]) => `LABEL ${k}=${v}`);
  files.push({
    path: 'bundle.Dockerfile',
    text: [
      BUNDLE_HEADER,
      '# The bundle image: docker build -f bundle/bundle.Dockerfile -t <registry>/osc-bundle:v<version> bundle',
      'FROM scratch',
      ...labels,
      'COPY manifests /manifests/',
      'COPY metadata /metadata/',
      '',
    ].join('\n'),
  });
  return files;
}
