/**
 * The OLM bundle and the Helm chart are generated from `osc install`'s manifests: the committed files are
 * up to date, and the bundle carries exactly the objects, permissions and Deployment that osc install
 * applies (with the one documented difference: the events rules, which OLM can grant only cluster-wide).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { defaultImage, manifestFiles, manifests, NAMES } from '../../src/install/manifests.ts';
import { clusterRules, credentialsRequestRules, eventRules, namespaceRules } from '../../src/install/rbac.ts';
import { ENSURE_SCCS_FLAG, oscSCCs, sccKeeperRules } from '../../src/install/scc.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { packagingFiles } from '../../src/packaging/generate.ts';
import { DEFAULT_CHART_DISTRIBUTION, distributionTemplate, TEMPLATE_OPTIONS, templateOf } from '../../src/packaging/helm.ts';
import { descriptorsOf, displayNameOf, manifestFileName, olmBundle } from '../../src/packaging/olm.ts';
import { INSTALLER_NAME } from '../../src/platform/kubernetes/katadeploy.ts';

const root = join(import.meta.dirname, '..', '..');
const filesUnder = (dir: string): string[] =>
  readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
const id = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

describe('packaging: OLM bundle and Helm chart', () => {
  test('bundle/ and charts/osc/ are what tools/generate-packaging.ts makes from the install manifests', async () => {
    const files = await packagingFiles();
    assert.deepEqual(
      [...filesUnder('bundle'), ...filesUnder('charts/osc')].sort(),
      files.map((f) => f.path).sort(),
      'no file missing, none extra',
    );
    for (const f of files) {
      assert.equal(readFileSync(join(root, f.path), 'utf8'), f.text, `${f.path} is out of date: run "node tools/generate-packaging.ts"`);
    }
  });

  test('the bundle carries exactly the objects, permissions and Deployment of osc install', async () => {
    const objects = await manifests();
    const b = olmBundle(objects, { version: '1.2.3' });
    const byKind = (k: string) => objects.filter((o) => o.kind === k);

    assert.deepEqual(b.crds, byKind('CustomResourceDefinition'));
    const strategy = b.csv.spec.install.spec;
    const deployment = byKind('Deployment')[0] as KubeObject & { spec: unknown };
    assert.equal(strategy.deployments.length, 1);
    assert.equal(strategy.deployments[0]?.name, NAMES.deployment);
    // The one difference: the bundle's operator keeps osc's SCCs itself, which no bundle can carry.
    const withFlag = structuredClone(deployment.spec) as { template: { spec: { containers: { args?: string[] }[] } } };
    const manager = withFlag.template.spec.containers[0];
    assert.ok(manager && !manager.args?.includes(ENSURE_SCCS_FLAG), 'osc install keeps no SCCs: it applies them');
    manager.args = [...(manager.args ?? []), ENSURE_SCCS_FLAG];
    assert.deepEqual(strategy.deployments[0]?.spec, withFlag);
    assert.deepEqual(strategy.deployments[0]?.label, deployment.metadata.labels);

    assert.deepEqual(strategy.permissions, [{ serviceAccountName: NAMES.serviceAccount, rules: namespaceRules() }]);
    // OLM binds CSV permissions only in the operator's namespace: the events rules for `default` and the
    // CredentialsRequest rules for the Cloud Credential Operator's namespace go cluster-wide.
    assert.deepEqual(strategy.clusterPermissions, [
      {
        serviceAccountName: NAMES.serviceAccount,
        rules: [...clusterRules(), ...eventRules(), ...credentialsRequestRules(), ...sccKeeperRules()],
      },
    ]);
    // The workloads' SCC grants are not the operator's: they ship as manifests of their own.
    const sccGrant = (o: KubeObject) => (o.kind === 'Role' || o.kind === 'RoleBinding') && !!o.metadata.name?.startsWith('use-scc-');
    const roles = [
      ...byKind('Role').filter((r) => !sccGrant(r)),
      ...byKind('ClusterRole').filter((r) => r.metadata.name === NAMES.clusterRole),
    ] as (KubeObject & {
      rules: unknown[];
    })[];
    assert.deepEqual(
      roles.flatMap((r) => r.rules).length,
      (strategy.permissions[0]?.rules.length ?? 0) + (strategy.clusterPermissions[0]?.rules.length ?? 0) - sccKeeperRules().length,
      'every rule of every Role and ClusterRole, once (and the SCC keeper rules only the bundle has)',
    );

    // Every other object is a manifest of its own, in the operator's namespace (OLM puts it there).
    const folded = new Set(['Namespace', 'CustomResourceDefinition', 'ServiceAccount', 'Deployment', 'Role', 'RoleBinding']);
    folded.add('ValidatingWebhookConfiguration').add('MutatingWebhookConfiguration');
    // The metrics reader is for scrapers, not the operator: it ships as manifests of its own; so does
    // kata-deploy's ClusterRole and binding (deploymentMode DaemonSet).
    // So do the workloads' ServiceAccounts and SCC grants; the SCCs themselves no bundle can carry.
    const workloadIdentity = (o: KubeObject) => (o.kind === 'ServiceAccount' && o.metadata.name !== NAMES.serviceAccount) || sccGrant(o);
    const rest = objects.filter(
      (o) =>
        o.kind !== 'SecurityContextConstraints' &&
        (workloadIdentity(o) ||
          (!folded.has(o.kind ?? '') &&
            !(o.kind?.startsWith('ClusterRole') && o.metadata.name !== NAMES.metricsReader && o.metadata.name !== INSTALLER_NAME))),
    );
    assert.deepEqual(b.unbundled, byKind('SecurityContextConstraints'));
    assert.match(
      b.csv.spec.description as string,
      /creates its SecurityContextConstraints \(`osc-cloud-api-adaptor`, `osc-kata-monitor`, `osc-kata-deploy`\) itself/,
    );
    assert.ok(rest.length >= 2, 'at least the two Services');
    assert.deepEqual(
      b.extras.map(id),
      rest.map((o) => id({ ...o, metadata: { ...o.metadata, namespace: undefined } })),
    );
    for (const [i, o] of rest.entries()) {
      if (o.kind?.startsWith('ClusterRole')) {
        assert.deepEqual(b.extras[i], o);
        continue;
      }
      assert.equal(o.metadata.namespace, OPERATOR_NAMESPACE);
      assert.deepEqual({ ...b.extras[i], metadata: { ...b.extras[i]?.metadata, namespace: OPERATOR_NAMESPACE } }, o);
    }

    const container = (
      deployment.spec as { template: { spec: { containers: { image: string; env: { name: string; value?: string }[] }[] } } }
    ).template.spec.containers[0];
    assert.deepEqual(b.csv.spec.relatedImages, [
      { name: 'osc-operator', image: container?.image },
      { name: 'kata-monitor', image: container?.env.find((e) => e.name === 'RELATED_IMAGE_KATA_MONITOR')?.value },
      // Every image the operator runs on nodes is related (OLM mirrors them; a release pins them by digest).
      { name: 'kata-deploy', image: container?.env.find((e) => e.name === 'RELATED_IMAGE_KATA_DEPLOY')?.value },
      { name: 'caa', image: container?.env.find((e) => e.name === 'RELATED_IMAGE_CAA')?.value },
      { name: 'podvm-builder', image: container?.env.find((e) => e.name === 'RELATED_IMAGE_PODVM_BUILDER')?.value },
    ]);
    assert.equal(b.csv.metadata.name, 'sandboxed-containers-operator.v1.2.3');
    assert.equal(b.csv.metadata.annotations?.['operatorframework.io/suggested-namespace'], OPERATOR_NAMESPACE);
    const modes = Object.fromEntries((b.csv.spec.installModes as { type: string; supported: boolean }[]).map((m) => [m.type, m.supported]));
    assert.deepEqual(modes, { OwnNamespace: true, SingleNamespace: false, MultiNamespace: false, AllNamespaces: true });
    const examples = JSON.parse(b.csv.metadata.annotations?.['alm-examples'] ?? '[]') as KubeObject[];
    assert.equal(examples[0]?.kind, 'KataConfig');
  });

  test("the SCC keeper's rules: create, and osc's own SCCs by name; never use, delete or another SCC", async () => {
    const names = oscSCCs().map((x) => x.metadata.name);
    const rules = sccKeeperRules();
    const scc = (r: { resources?: string[] }) => r.resources?.includes('securitycontextconstraints');
    assert.ok(rules.every(scc));
    for (const r of rules) {
      assert.ok(!r.verbs.includes('use') && !r.verbs.includes('delete') && !r.verbs.includes('*'), JSON.stringify(r));
      // Only create, which Kubernetes cannot restrict by name, is unpinned.
      if (!r.resourceNames) assert.deepEqual(r.verbs, ['create']);
      else assert.deepEqual(r.resourceNames, names);
    }
    // osc install applies the SCCs itself: its operator has no rule on SCCs at all.
    assert.ok(![...clusterRules(), ...namespaceRules()].some(scc));
    const objects = await manifests();
    const deployment = objects.find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { template: { spec: { containers: { args?: string[] }[] } } };
    };
    assert.ok(!deployment.spec.template.spec.containers[0]?.args?.includes(ENSURE_SCCS_FLAG));
  });

  test('owned CRDs with a descriptor for every spec field and the status an administrator follows', async () => {
    const objects = await manifests();
    const b = olmBundle(objects, { version: '1.0.0' });
    const owned = b.csv.spec.customresourcedefinitions.owned;
    assert.deepEqual(
      owned.map((o) => `${o.kind} ${o.name} ${o.version}`),
      [
        'KataConfig kataconfigs.kataconfiguration.openshift.io v1',
        'KataNode katanodes.kataconfiguration.openshift.io v1alpha1',
        'PeerPodConfig peerpodconfigs.confidentialcontainers.org v1alpha1',
      ],
    );
    const kata = owned[0];
    assert.ok(kata);
    const spec = Object.fromEntries(kata.specDescriptors.map((d) => [d.path, d]));
    assert.deepEqual(Object.keys(spec).sort(), ['checkNodeEligibility', 'enablePeerPods', 'kataConfigPoolSelector', 'logLevel']);
    assert.deepEqual(spec.enablePeerPods?.['x-descriptors'], ['urn:alm:descriptor:com.tectonic.ui:booleanSwitch']);
    assert.deepEqual(spec.kataConfigPoolSelector?.['x-descriptors'], ['urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node']);
    assert.ok(spec.logLevel?.['x-descriptors']?.includes('urn:alm:descriptor:com.tectonic.ui:select:info'));
    assert.equal(spec.checkNodeEligibility?.displayName, 'Check Node Eligibility');
    const status = Object.fromEntries(kata.statusDescriptors.map((d) => [d.path, d]));
    assert.deepEqual(status.conditions?.['x-descriptors'], ['urn:alm:descriptor:io.kubernetes.conditions']);
    assert.ok(status['kataNodes.readyNodeCount'] && status['kataNodes.nodeCount'] && status.runtimeClasses);
    const crd = b.crds.find((c) => c.metadata.name === kata.name);
    assert.ok(crd);
    assert.equal(descriptorsOf(crd).spec.length, kata.specDescriptors.length);
    assert.equal(displayNameOf('kataConfigPoolSelector'), 'Kata Config Pool Selector');
    assert.equal(displayNameOf('PeerPodConfig'), 'Peer Pod Config');
  });

  test('an object OLM cannot install from a bundle is refused by name', async () => {
    const objects = await manifests();
    const daemonSet = { apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'x', namespace: OPERATOR_NAMESPACE } };
    assert.throws(() => olmBundle([...objects, daemonSet], { version: '1.0.0' }), /OLM cannot install a DaemonSet from a bundle \(x\)/);
    const elsewhere = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'y', namespace: 'kube-system' } };
    assert.throws(() => olmBundle([...objects, elsewhere], { version: '1.0.0' }), /Service y is in namespace kube-system/);
  });

  test('every bundle file is YAML (the CSV one document); file names follow operator-sdk', async () => {
    const files = (await packagingFiles()).filter((f) => f.path.startsWith('bundle/manifests/'));
    for (const f of files) {
      const docs = parseAllDocuments(f.text);
      assert.equal(docs.length, 1, f.path);
      const o = docs[0]?.toJS() as KubeObject;
      assert.equal(
        `bundle/manifests/${o.kind === 'ClusterServiceVersion' ? 'sandboxed-containers-operator.clusterserviceversion.yaml' : manifestFileName(o)}`,
        f.path,
      );
    }
    assert.equal(
      manifestFileName({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'osc-metrics-service' } }),
      'osc-metrics-service_v1_service.yaml',
    );
    const annotations = parse(files.length ? readFileSync(join(root, 'bundle/metadata/annotations.yaml'), 'utf8') : '') as {
      annotations: Record<string, string>;
    };
    assert.equal(annotations.annotations['operators.operatorframework.io.bundle.package.v1'], 'sandboxed-containers-operator');
    assert.equal(annotations.annotations['operators.operatorframework.io.bundle.channel.default.v1'], 'stable');
  });

  test('chart templates: each install file, with image, log level, monitor image and replicas as values', async () => {
    const files = await manifestFiles(TEMPLATE_OPTIONS);
    const operator = files.find((f) => f.file === '30-operator.yaml');
    assert.ok(operator);
    const text = templateOf(operator);
    assert.match(text, /^ {10}image: \{\{ \.Values\.image \| quote \}\}$/m);
    assert.match(text, /^ {12}- --log-level=\{\{ \.Values\.logLevel \}\}$/m);
    assert.match(text, /^ {2}replicas: \{\{ \.Values\.replicas \}\}$/m);
    assert.match(text, /^ {14}value: \{\{ \.Values\.monitorImage \| quote \}\}$/m);
    assert.doesNotMatch(text, /osc-chart-value/);
  });

  test("chart: a distribution value chooses the RBAC; kata-deploy's identity only on kubernetes; the rest alike", async () => {
    const values = parse(readFileSync(join(root, 'charts/osc/values.yaml'), 'utf8')) as { distribution: string };
    assert.equal(values.distribution, DEFAULT_CHART_DISTRIBUTION);
    const schema = JSON.parse(readFileSync(join(root, 'charts/osc/values.schema.json'), 'utf8'));
    assert.deepEqual(schema.properties.distribution.enum, ['kubernetes', 'openshift']);
    const of = async (distribution: 'openshift' | 'kubernetes', file: string) =>
      (await manifestFiles({ ...TEMPLATE_OPTIONS, distribution })).find((f) => f.file === file);
    const rbac = distributionTemplate({
      openshift: await of('openshift', '20-rbac.yaml'),
      kubernetes: await of('kubernetes', '20-rbac.yaml'),
    });
    assert.match(rbac, /^\{\{- if eq \.Values\.distribution "kubernetes" \}\}$/m);
    assert.match(rbac, /^\{\{- else if eq \.Values\.distribution "openshift" \}\}$/m);
    const [k8s, openshift] = rbac.split('{{- else if');
    assert.doesNotMatch(k8s ?? '', /machineconfiguration/);
    assert.match(openshift ?? '', /machineconfiguration/);
    const kataDeploy = distributionTemplate({ kubernetes: await of('kubernetes', '25-kata-deploy-rbac.yaml') });
    assert.match(kataDeploy, /^\{\{- if eq \.Values\.distribution "kubernetes" \}\}\napiVersion: v1\nkind: ServiceAccount\n/m);
    assert.match(kataDeploy, /\{\{- end \}\}\n$/);
    const operator = distributionTemplate({
      openshift: await of('openshift', '30-operator.yaml'),
      kubernetes: await of('kubernetes', '30-operator.yaml'),
    });
    assert.doesNotMatch(operator, /Values\.distribution/);
  });

  test("the images' build arguments default to what real users pull", () => {
    const operator = readFileSync(join(root, 'Dockerfile'), 'utf8');
    assert.match(operator, /^ARG NODE_IMAGE=docker\.io\/library\/node:24-bookworm-slim$/m);
    assert.doesNotMatch(operator, /^# syntax=/m, 'no BuildKit frontend to fetch: the classic builder builds it offline');
    const mustGather = readFileSync(join(root, 'must-gather', 'Dockerfile'), 'utf8');
    assert.match(
      mustGather,
      new RegExp(`^ARG OSC_IMAGE=${defaultImage().replace(/[.]/g, '\\.')}$`, 'm'),
      'the operator image of this version',
    );
  });
});
