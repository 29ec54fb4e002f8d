/**
 * osc installed as OLM installs its bundle, on the dev cluster with SCC admission on: the bundle cannot carry
 * SecurityContextConstraints, so an operator that does not make them itself leaves the adaptor and monitor
 * DaemonSets at 0 pods (FailedCreate naming the SCC); the bundle's operator (`--ensure-sccs`, running as the
 * bundle's ServiceAccount with only the CSV's permissions) makes them, the pods are admitted under them, and
 * an edited SCC is put back. The operator itself may not use, delete or change any other SCC.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, MONITOR_DAEMONSET, OPERATOR_NAMESPACE, PEER_PODS_CM, PEER_PODS_SECRET } from '../../src/api/names.ts';
import { CAA_SCC, MONITOR_SCC, SecurityContextConstraintsType, VALIDATED_SCC_ANNOTATION } from '../../src/api/scc.ts';
import { SCC_FIELD_MANAGER } from '../../src/controllers/scc/controller.ts';
import { ENSURE_SCCS_FLAG, oscSCCs } from '../../src/install/scc.ts';
import type { Credentials } from '../../src/kube/credentials.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  ConfigMaps,
  DaemonSets,
  Events,
  Pods,
  RoleBindings,
  Roles,
  Secrets,
  ServiceAccounts,
} from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { CSVSpec } from '../../src/packaging/olm.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = OPERATOR_NAMESPACE;
const LONG = { timeoutMs: 180_000 };
const bundleDir = join(import.meta.dirname, '..', '..', 'bundle', 'manifests');
const objectsOf = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o);

describe('an OLM install on OpenShift: the operator keeps its own SCCs', () => {
  // Nothing of what `osc install` ships for SCC admission: only what OLM installs from the bundle.
  const cluster = useDevCluster({ workers: 1, oscSecurityIdentity: false, rebootMs: 300 });
  const c = () => cluster.dev.client;
  let csv: KubeObject & { spec: CSVSpec };
  let operatorCredentials: Credentials;
  let running: RunningOperator | undefined;
  const kubectl = (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });

  before(async () => {
    // What OLM makes of the bundle: the CSV's ServiceAccount with its permissions bound, and every other
    // manifest (the workloads' ServiceAccounts, their pinned `use` grants, Services...) in the namespace.
    const files = readdirSync(bundleDir).map((f) => objectsOf(readFileSync(join(bundleDir, f), 'utf8'))[0] as KubeObject);
    csv = files.find((o) => o.kind === 'ClusterServiceVersion') as KubeObject & { spec: CSVSpec };
    const strategy = csv.spec.install.spec;
    const sa = strategy.permissions[0]?.serviceAccountName ?? '';
    await c().create(ServiceAccounts, { metadata: { name: sa, namespace: ns } });
    const subjects = [{ kind: 'ServiceAccount', name: sa, namespace: ns }];
    const roleRef = (kind: string, name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });
    await c().create(ClusterRoles, { metadata: { name: 'osc-olm' }, rules: strategy.clusterPermissions[0]?.rules } as KubeObject);
    await c().create(ClusterRoleBindings, {
      metadata: { name: 'osc-olm' },
      roleRef: roleRef('ClusterRole', 'osc-olm'),
      subjects,
    } as KubeObject);
    await c().create(Roles, { metadata: { name: 'osc-olm', namespace: ns }, rules: strategy.permissions[0]?.rules } as KubeObject);
    await c().create(RoleBindings, {
      metadata: { name: 'osc-olm', namespace: ns },
      roleRef: roleRef('Role', 'osc-olm'),
      subjects,
    } as KubeObject);
    for (const o of files.filter((x) => x.kind !== 'ClusterServiceVersion' && x.kind !== 'CustomResourceDefinition')) {
      const r = await kubectl(['apply', '-n', ns, '-f', '-'], JSON.stringify(o));
      assert.equal(r.code, 0, `${o.kind} ${o.metadata.name}: ${r.stderr}`);
    }
    // The operator runs as that ServiceAccount, with nothing but the bundle's permissions.
    const token = await c().request<{ status?: { token?: string } }>('POST', `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
    });
    const cp = cluster.dev.controlPlane;
    operatorCredentials = {
      server: cp.apiserverUrl,
      tls: async () => ({ ca: Buffer.from(cp.caPem) }),
      headers: async () => ({ authorization: `Bearer ${token.status?.token ?? ''}` }),
    };
    // A KataConfig with peer pods, so that both privileged DaemonSets are wanted.
    await c().create(Secrets, {
      metadata: { name: PEER_PODS_SECRET, namespace: ns },
      stringData: { AWS_ACCESS_KEY_ID: 'AKIAOSCOLMTEST000001', AWS_SECRET_ACCESS_KEY: 'osc/OlmTestSecretAccessKey+0123456789ab' },
    });
    await c().create(ConfigMaps, {
      metadata: { name: PEER_PODS_CM, namespace: ns },
      data: {
        CLOUD_PROVIDER: 'aws',
        PODVM_AMI_ID: 'ami-0123456789abcdef0',
        AWS_REGION: 'us-east-2',
        AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
        AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
        AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
      },
    });
    await c().create(KataConfigs, {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig' },
      spec: { enablePeerPods: true },
    } as KataConfig);
  });
  after(() => running?.stop());

  test('an operator that makes no SCC (as before): 0 adaptor and monitor pods, FailedCreate naming the SCC', async () => {
    running = await startOperator(cluster.dev, { kubeConfig: operatorCredentials });
    for (const [name, scc] of [
      [MONITOR_DAEMONSET, MONITOR_SCC],
      [CAA_DAEMONSET, CAA_SCC],
    ]) {
      const event = await waitFor(
        async () => {
          return (await c().list(Events, { namespace: ns })).items.find((e) => e.reason === 'FailedCreate' && e.regarding?.name === name);
        },
        { ...LONG, intervalMs: 5000, message: `FailedCreate for ${name}` },
      );
      // Pinned to osc's SCC, the pod is refused for the SCC that is not there, by name.
      assert.match(event.note ?? '', new RegExp(`failed to retrieve the required SCC "${scc}": .*"${scc}" not found`), name);
    }
    const pods = (await c().list(Pods, { namespace: ns })).items.filter((p) =>
      [MONITOR_DAEMONSET, CAA_DAEMONSET].some((d) => p.metadata.name?.startsWith(d)),
    );
    assert.equal(pods.length, 0);
    await running.stop();
    running = undefined;
  });

  test("the bundle's operator (--ensure-sccs) makes osc's SCCs; the pods are admitted under them", async () => {
    const deployment = csv.spec.install.spec.deployments[0]?.spec as { template: { spec: { containers: { args?: string[] }[] } } };
    assert.ok(deployment.template.spec.containers[0]?.args?.includes(ENSURE_SCCS_FLAG), "the CSV's Deployment runs with --ensure-sccs");
    running = await startOperator(cluster.dev, { kubeConfig: operatorCredentials, ensureSCCs: true });
    for (const want of oscSCCs()) {
      const made = await waitFor(() => c().find(SecurityContextConstraintsType, want.metadata.name ?? ''), {
        ...LONG,
        message: `SCC ${want.metadata.name}`,
      });
      assert.deepEqual(made.volumes, want.volumes);
      assert.equal(made.allowPrivilegedContainer, want.allowPrivilegedContainer);
      assert.ok((made.metadata.managedFields as { manager?: string }[] | undefined)?.some((m) => m.manager === SCC_FIELD_MANAGER));
    }
    let nudge = 0;
    for (const [selector, ds, scc] of [
      [`name=${MONITOR_DAEMONSET}`, MONITOR_DAEMONSET, MONITOR_SCC],
      [`app=${CAA_DAEMONSET}`, CAA_DAEMONSET, CAA_SCC],
    ] as const) {
      const pod = await waitFor(
        async () => {
          const found = (await c().list(Pods, { namespace: ns, labelSelector: selector })).items[0];
          // The DaemonSet controller backs off after its failures; a change has it try again at once.
          if (!found) await c().patch(DaemonSets, ds, { metadata: { annotations: { nudge: String(nudge++) } } }, { namespace: ns });
          return found;
        },
        { ...LONG, intervalMs: 2_500, message: `a pod for ${selector}` },
      );
      assert.equal(pod.metadata.annotations?.[VALIDATED_SCC_ANNOTATION], scc, selector);
    }
  });

  test('an edited SCC is put back; the operator may not use, delete or change another SCC', async () => {
    await c().patch(SecurityContextConstraintsType, CAA_SCC, { allowHostPID: true }, { type: 'merge' });
    await waitFor(async () => (await c().get(SecurityContextConstraintsType, CAA_SCC)).allowHostPID === false, {
      ...LONG,
      message: 'the edit undone',
    });
    const as = `system:serviceaccount:${ns}:${csv.spec.install.spec.permissions[0]?.serviceAccountName}`;
    const checks: [string, string, string][] = [
      ['use', `securitycontextconstraints/${CAA_SCC}`, 'no'],
      ['delete', `securitycontextconstraints/${CAA_SCC}`, 'no'],
      ['patch', 'securitycontextconstraints/privileged', 'no'],
      ['use', 'securitycontextconstraints/privileged', 'no'],
      ['patch', `securitycontextconstraints/${CAA_SCC}`, 'yes'],
    ];
    for (const [verb, what, expected] of checks) {
      const r = await kubectl(['auth', 'can-i', verb, what, '--as', as]);
      assert.equal(r.stdout.trim(), expected, `${verb} ${what}`);
    }
  });
});
