import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import {
  configFiles,
  EVENTS_NAMESPACE,
  fileText,
  KUBERNETES_OVERLAY,
  manifests,
  NAMES,
  operatorArgs,
} from '../../src/install/manifests.ts';
import { clusterRules, LEADER_ELECTION_LEASE, namespaceRules } from '../../src/install/rbac.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { LEADER_ELECTION_LEASE as OPERATOR_LEASE } from '../../src/operator.ts';
import { runOsc as run } from '../support/cli.ts';

const configDir = join(import.meta.dirname, '..', '..', 'config');
/** The manifests under config/ that osc install applies: all of them but the samples, which are KataConfigs to create. */
const installFiles = () =>
  (readdirSync(configDir, { recursive: true }) as string[]).filter((f) => /\.ya?ml$/.test(f) && !f.startsWith('samples/')).sort();
/** The OpenShift install alone: `kubectl apply -f config/` (plain Kubernetes adds config/kubernetes/). */
const openshiftFiles = () => installFiles().filter((f) => !f.startsWith(`${KUBERNETES_OVERLAY}/`));

const docs = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as KubeObject)
    .filter(Boolean);

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

/** Whether some rule grants verb on group/resource (and, when given, that name). */
const grants = (rules: Rule[], group: string, resource: string, verb: string, name?: string) =>
  rules.some(
    (r) =>
      r.apiGroups.includes(group) &&
      r.resources.includes(resource) &&
      r.verbs.includes(verb) &&
      (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))),
  );

describe('osc install manifests', () => {
  test('config/ holds exactly what "osc install --dry-run --output-dir config" writes', async () => {
    const files = await configFiles();
    const committed = installFiles();
    assert.deepEqual(committed, files.map((f) => f.file).sort(), 'regenerate with: npm run osc -- install --dry-run --output-dir config');
    for (const f of files) {
      assert.equal(
        readFileSync(join(configDir, f.file), 'utf8'),
        fileText(f),
        `config/${f.file} is stale: npm run osc -- install --dry-run --output-dir config`,
      );
    }
  });

  test('--dry-run prints the same objects as config/, in apply order', async () => {
    const r = await run(['install', '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    const printed = docs(r.stdout);
    const fromConfig = openshiftFiles().flatMap((f) => docs(readFileSync(join(configDir, f), 'utf8')));
    assert.deepEqual(printed, fromConfig);
    assert.deepEqual(
      printed.map((o) => o.kind),
      [
        'Namespace',
        ...printed.filter((o) => o.kind === 'CustomResourceDefinition').map(() => 'CustomResourceDefinition'),
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'Role',
        'RoleBinding',
        'Role',
        'RoleBinding',
        // peer pods' CredentialsRequest, in the Cloud Credential Operator's namespace
        'Role',
        'RoleBinding',
        'ClusterRole',
        'ClusterRoleBinding',
        // kata-deploy's identity, for deploymentMode DaemonSet
        'ServiceAccount',
        'ClusterRole',
        'ClusterRoleBinding',
        'SecurityContextConstraints',
        'SecurityContextConstraints',
        'SecurityContextConstraints',
        'ServiceAccount',
        'ServiceAccount',
        'Role',
        'RoleBinding',
        'Role',
        'RoleBinding',
        'Role',
        'RoleBinding',
        'Deployment',
        'PodDisruptionBudget',
        'Service',
        'Service',
        'NetworkPolicy',
        'ValidatingWebhookConfiguration',
        'MutatingWebhookConfiguration',
        'ServiceMonitor',
      ],
    );
    assert.ok(printed.some((o) => o.metadata.name === 'kataconfigs.kataconfiguration.openshift.io'));
  });

  test('a NetworkPolicy lets only the API server reach the webhooks and the monitoring stack the metrics, on both platforms', async () => {
    type Peer = { namespaceSelector?: { matchLabels?: Record<string, string> } };
    type Rule = { from?: Peer[]; ports: { port: number }[] };
    for (const distribution of ['openshift', 'kubernetes'] as const) {
      const policies = (await manifests({ distribution })).filter((o) => o.kind === 'NetworkPolicy') as (KubeObject & {
        spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: Rule[] };
      })[];
      assert.equal(policies.length, 1, distribution);
      const p = policies[0] as (typeof policies)[number];
      const dep = (await manifests({ distribution })).find((o) => o.kind === 'Deployment') as KubeObject & {
        spec: { template: { metadata: { labels: Record<string, string> } } };
      };
      for (const [k, v] of Object.entries(p.spec.podSelector.matchLabels))
        assert.equal(dep.spec.template.metadata.labels[k], v, 'selects the operator');
      assert.deepEqual(p.spec.policyTypes, ['Ingress']);
      assert.deepEqual(
        p.spec.ingress.flatMap((r) => r.ports.map((x) => x.port)).sort(),
        [8443, 9443],
        'the health port only from the node',
      );
      const metrics = p.spec.ingress.find((r) => r.ports.some((x) => x.port === 8443));
      const selectors = (metrics?.from ?? []).map((f) => f.namespaceSelector?.matchLabels);
      assert.deepEqual(selectors, [
        { 'kubernetes.io/metadata.name': 'openshift-monitoring' },
        { 'kataconfiguration.openshift.io/metrics-scraper': 'true' },
      ]);
      const webhook = p.spec.ingress.find((r) => r.ports.some((x) => x.port === 9443));
      if (distribution === 'openshift') assert.ok((webhook?.from ?? []).length > 0, 'on OpenShift, only the API server');
    }
  });

  test('--image and --log-level reach the Deployment', async () => {
    const r = await run(['install', '--dry-run', '--image', 'registry.example.com/osc:dev', '--log-level', 'debug']);
    assert.equal(r.code, 0, r.stderr);
    const dep = docs(r.stdout).find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { template: { spec: { containers: { image: string; args: string[] }[] } } };
    };
    assert.equal(dep.spec.template.spec.containers[0]?.image, 'registry.example.com/osc:dev');
    assert.ok(dep.spec.template.spec.containers[0]?.args.includes('--log-level=debug'));
  });

  test('the Deployment runs osc run as non-root, with probes and resource requests, under its ServiceAccount', async () => {
    const dep = (await manifests()).find((o) => o.kind === 'Deployment') as KubeObject & {
      // biome-ignore lint/suspicious/noExplicitAny: a manifest read back
      spec: any;
    };
    assert.equal(dep.metadata.namespace, OPERATOR_NAMESPACE);
    const pod = dep.spec.template.spec;
    assert.equal(pod.serviceAccountName, NAMES.serviceAccount);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const c = pod.containers[0];
    assert.deepEqual(c.args, operatorArgs());
    assert.equal(c.args[0], 'run');
    assert.ok(c.args.includes('--leader-elect'));
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory);
    assert.deepEqual(c.env, [
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      // The replica's name in its requests' User-Agent (the audit log tells replicas apart by it).
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'RELATED_IMAGE_KATA_MONITOR', value: 'quay.io/openshift_sandboxed_containers/openshift-sandboxed-containers-monitor:latest' },
      // The other operand images, so that a release pins them by digest (src/install/images.ts).
      { name: 'RELATED_IMAGE_KATA_DEPLOY', value: 'quay.io/kata-containers/kata-deploy:4.1.0' },
      { name: 'RELATED_IMAGE_CAA', value: 'registry.redhat.io/openshift-sandboxed-containers/osc-cloud-api-adaptor-rhel9:1.12.0' },
      { name: 'RELATED_IMAGE_PODVM_BUILDER', value: 'registry.redhat.io/openshift-sandboxed-containers/osc-podvm-builder-rhel9:1.12.0' },
    ]);
    // The webhook Service reaches the container's webhook port.
    const svc = (await manifests()).find((o) => o.metadata.name === NAMES.webhookService) as KubeObject & {
      spec: { selector: Record<string, string>; ports: { port: number; targetPort: string }[] };
    };
    assert.deepEqual(svc.spec.ports[0], { name: 'https', port: 443, targetPort: 'webhook-server', protocol: 'TCP' });
    for (const [k, v] of Object.entries(svc.spec.selector)) assert.equal(dep.spec.template.metadata.labels[k], v);
  });

  for (const distribution of ['openshift', 'kubernetes'] as const)
    test(`${distribution}: RBAC is least privilege: no wildcards, no kubelet proxy, no RBAC writes, secrets and workloads only in the operator namespace`, async () => {
      const all = await manifests({ distribution });
      // The operator's own roles (the SCC `use` grants of its workloads are checked on their own, below).
      const rulesOf = (kind: string, ns?: string) =>
        all
          .filter((o) => o.kind === kind && o.metadata.namespace === ns && !o.metadata.name?.startsWith('use-scc-'))
          .flatMap((o) => (o as unknown as { rules: Rule[] }).rules);
      const cluster = all
        .filter((o) => o.kind === 'ClusterRole' && o.metadata.name === NAMES.clusterRole)
        .flatMap((o) => (o as unknown as { rules: Rule[] }).rules);
      // Scrapers get exactly get on /metrics, nothing else.
      assert.deepEqual(
        (all.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'osc-metrics-reader') as { rules?: unknown } | undefined)?.rules,
        [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
      );
      assert.ok(grants(cluster, 'authentication.k8s.io', 'tokenreviews', 'create'));
      assert.ok(grants(cluster, 'authorization.k8s.io', 'subjectaccessreviews', 'create'));
      const inNs = rulesOf('Role', OPERATOR_NAMESPACE);
      const inDefault = rulesOf('Role', EVENTS_NAMESPACE);
      // Every role the install makes, kata-deploy's included: no wildcard, no way to run commands on nodes
      // (nodes/proxy reaches the kubelet's exec), to make or bind roles, or to act as someone else.
      const everyRule = all.flatMap((o) => ((o as unknown as { rules?: Rule[] }).rules ?? []).filter((r) => r.resources));
      assert.ok(everyRule.length > cluster.length);
      for (const r of everyRule) {
        for (const field of [r.apiGroups, r.resources, r.verbs]) assert.ok(!field.includes('*'), `wildcard in ${JSON.stringify(r)}`);
        assert.ok(!r.verbs.includes('escalate') && !r.verbs.includes('bind') && !r.verbs.includes('impersonate'));
        assert.ok(!r.resources.some((x) => x.startsWith('nodes/') && x !== 'nodes/status'), `kubelet access in ${JSON.stringify(r)}`);
        assert.ok(!r.apiGroups.includes('rbac.authorization.k8s.io'), `RBAC rule ${JSON.stringify(r)}`);
      }
      // Cluster-wide: nothing on secrets, configmaps, workloads, RBAC; pods are only read.
      for (const res of [
        'secrets',
        'configmaps',
        'daemonsets',
        'jobs',
        'deployments',
        'roles',
        'clusterroles',
        'rolebindings',
        'serviceaccounts',
      ]) {
        assert.ok(!cluster.some((r) => r.resources.includes(res)), `cluster-wide rule on ${res}`);
      }
      assert.ok(!grants(cluster, '', 'pods', 'delete') && !grants(cluster, '', 'pods', 'create'));
      assert.ok(grants(cluster, '', 'pods', 'list') && grants(cluster, '', 'pods', 'watch'));
      // Writes are pinned to the operator's own objects where the verb allows it.
      assert.equal(
        grants(cluster, 'machineconfiguration.openshift.io', 'machineconfigs', 'delete', '50-enable-sandboxed-containers-extension'),
        distribution === 'openshift',
      );
      assert.ok(!grants(cluster, 'machineconfiguration.openshift.io', 'machineconfigs', 'delete', '00-worker'));
      assert.ok(!grants(cluster, 'machineconfiguration.openshift.io', 'machineconfigpools', 'delete', 'worker'));
      assert.ok(!grants(cluster, 'node.k8s.io', 'runtimeclasses', 'delete', 'runc'));
      assert.ok(!grants(cluster, '', 'nodes', 'delete') && !grants(cluster, '', 'nodes', 'update'));
      // The operator's needs: leases, events, the webhook certificate, the KataConfig status.
      assert.ok(grants(inNs, 'coordination.k8s.io', 'leases', 'update', LEADER_ELECTION_LEASE));
      assert.ok(grants(inNs, '', 'secrets', 'create') && grants(inNs, '', 'secrets', 'get'));
      assert.ok(!grants(inNs, '', 'secrets', 'delete'));
      assert.ok(grants(inDefault, 'events.k8s.io', 'events', 'create'));
      assert.ok(grants(cluster, 'kataconfiguration.openshift.io', 'kataconfigs/status', 'update'));
      assert.ok(!grants(cluster, 'kataconfiguration.openshift.io', 'kataconfigs', 'delete'));
      assert.deepEqual(inNs, namespaceRules(distribution));
      assert.deepEqual(cluster, clusterRules(distribution));
    });

  test('the lease the RBAC names is the one the operator takes', () => {
    assert.equal(LEADER_ELECTION_LEASE, OPERATOR_LEASE);
  });

  test('the webhook configurations match what the operator registers, without a caBundle to commit', async () => {
    const hooks = (await manifests()).filter((o) => o.kind?.endsWith('WebhookConfiguration')) as (KubeObject & {
      webhooks: { clientConfig: { service?: { name: string; namespace: string }; caBundle?: string } }[];
    })[];
    assert.equal(hooks.length, 2);
    for (const h of hooks) {
      for (const w of h.webhooks) {
        assert.deepEqual(
          { ...w.clientConfig.service, path: undefined, port: undefined },
          {
            name: NAMES.webhookService,
            namespace: OPERATOR_NAMESPACE,
            path: undefined,
            port: undefined,
          },
        );
        assert.equal(w.clientConfig.caBundle, undefined);
      }
    }
  });
});
