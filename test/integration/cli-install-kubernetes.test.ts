/**
 * `osc install --distribution kubernetes` into the dev cluster's kubernetes distribution, then the operator
 * run with its own ServiceAccount's token (not as admin): its RBAC must be enough to run kata-deploy's
 * DaemonSet under the identity the install shipped, move the nodes, and take it all away again — and
 * nothing of the Machine Config Operator's, no kubelet proxy and no RBAC writes are granted.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { resourceOf } from '../../src/install/apply.ts';
import { kataDeployIdentity } from '../../src/install/katadeploy-rbac.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { ClusterRoleBindings, ClusterRoles, DaemonSets, Namespaces, RuntimeClasses, ServiceAccounts } from '../../src/kube/resources.ts';
import { INSTALLER_NAME } from '../../src/platform/kubernetes/katadeploy.ts';
import { OscProcess, runOsc as osc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const ns = OPERATOR_NAMESPACE;
const KATACONFIG = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: cluster-kataconfig
spec:
  logLevel: info
`;

describe('osc install --distribution kubernetes, and the operator under its own ServiceAccount', () => {
  const cluster = useDevCluster({
    distribution: 'kubernetes',
    workers: 2,
    masters: 1,
    kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 500 },
    // kata-deploy's ServiceAccount and RBAC come from the install under test.
    kataDeployIdentity: false,
  });
  const dir = mkdtempSync(join(tmpdir(), 'osc-cli-install-k8s-'));
  let operator: OscProcess | undefined;
  const kubectl = (args: string[], opts: { input?: string; kubeconfig?: string } = {}) => cluster.dev.controlPlane.kubectl(args, opts);

  after(() => {
    operator?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the manifests: kata-deploy's identity shipped, no Machine Config Operator rules, no kubelet proxy, no RBAC writes", async () => {
    assert.equal(await cluster.dev.client.find(ServiceAccounts, INSTALLER_NAME, ns), undefined);
    // As an earlier operator left them: made at run time, owned by the KataConfig (here a stand-in owner).
    const client = cluster.dev.client;
    const owner = await client.create(ClusterRoles, { metadata: { name: 'osc-test-former-owner' }, rules: [] } as never);
    const ownerReferences = [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'osc-test-former-owner', uid: owner.metadata.uid ?? '' },
    ];
    await client.create(Namespaces, { metadata: { name: ns } }).catch(() => undefined);
    for (const o of kataDeployIdentity(ns)) await client.create(resourceOf(o), { ...o, metadata: { ...o.metadata, ownerReferences } });
    const r = await osc(['install', '--kubeconfig', cluster.dev.kubeconfigPath, '--distribution', 'kubernetes']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /kata-deploy's ServiceAccount and RBAC taken over/);
    for (const o of kataDeployIdentity(ns)) {
      const got = await client.get(resourceOf(o), o.metadata.name ?? '', o.metadata.namespace);
      assert.equal(got.metadata.ownerReferences, undefined, `${o.kind}: no owner whose deletion would take it away`);
    }
    await client.delete(ClusterRoles, 'osc-test-former-owner');
    const role = (await cluster.dev.client.get(ClusterRoles, NAMES.clusterRole)) as {
      rules?: { apiGroups: string[]; resources: string[] }[];
    };
    assert.ok(!role.rules?.some((x) => x.apiGroups.includes('machineconfiguration.openshift.io')));
    assert.ok(!role.rules?.some((x) => x.resources.includes('nodes/proxy')));
    assert.ok(!role.rules?.some((x) => x.apiGroups.includes('rbac.authorization.k8s.io')));
    assert.ok(await cluster.dev.client.find(ServiceAccounts, INSTALLER_NAME, ns));
    const installer = (await cluster.dev.client.get(ClusterRoles, INSTALLER_NAME)) as { rules?: { resources: string[] }[] };
    assert.ok(!installer.rules?.some((x) => x.resources.includes('nodes/proxy')));
    assert.ok(await cluster.dev.client.find(ClusterRoleBindings, INSTALLER_NAME));
  });

  test('the ServiceAccount-run operator installs kata with kata-deploy and removes it all', async () => {
    const token = await kubectl(['create', 'token', NAMES.serviceAccount, '-n', ns, '--duration=1h']);
    assert.equal(token.code, 0, token.stderr);
    const cp = cluster.dev.controlPlane;
    const saKubeconfig = join(dir, 'sa.kubeconfig');
    writeFileSync(saKubeconfig, tokenKubeconfigText(cp.apiserverUrl, cp.caPem, token.stdout.trim(), { user: 'sa', namespace: ns }));
    operator = new OscProcess(
      [
        'run',
        '--no-leader-elect',
        '--kubeconfig',
        saKubeconfig,
        '--metrics-bind-address',
        '0',
        '--health-probe-bind-address',
        '0',
        '--webhook-bind-address',
        '127.0.0.1:0',
        '--webhook-url',
        'https://127.0.0.1:{port}',
      ],
      { POD_NAMESPACE: ns },
    );
    const op = operator;
    await waitFor(() => op.stdout.includes('"caches synced"') || op.child.exitCode !== null, {
      timeoutMs: 60_000,
      message: 'caches synced',
    });
    assert.equal(op.child.exitCode, null, `the operator exited: ${op.stdout}${op.stderr}`);
    assert.match(op.stdout, /"platform":"kubernetes"/);

    const created = await kubectl(['create', '-f', '-'], { input: KATACONFIG });
    assert.equal(created.code, 0, created.stderr);
    await waitFor(
      async () => {
        const kc = await cluster.dev.client.find(KataConfigs, 'cluster-kataconfig');
        const c = kc?.status?.conditions?.find((x) => x.type === 'InProgress');
        return c?.status === 'False' && c.reason === '' && kc?.status?.kataNodes?.readyNodeCount === 2;
      },
      { timeoutMs: 120_000, message: `kata installed by the ServiceAccount-run operator: ${op.stderr.slice(-2000)}` },
    );
    assert.equal((await cluster.dev.client.get(RuntimeClasses, 'kata')).handler, 'kata-qemu');
    assert.ok(await cluster.dev.client.find(DaemonSets, INSTALLER_NAME, ns));
    assert.doesNotMatch(op.stdout, /"level":50.*forbidden/i, 'no request was refused');

    const deleted = await kubectl(['delete', 'kataconfig', 'cluster-kataconfig', '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    await waitFor(async () => !(await cluster.dev.client.find(KataConfigs, 'cluster-kataconfig')), {
      timeoutMs: 120_000,
      message: 'the KataConfig gone',
    });
    assert.equal(await cluster.dev.client.find(DaemonSets, INSTALLER_NAME, ns), undefined);
    // kata-deploy's identity belongs to the install: it stays until osc itself is uninstalled.
    assert.ok(await cluster.dev.client.find(ClusterRoles, INSTALLER_NAME));
    operator?.kill();
    const un = await osc(['uninstall', '--kubeconfig', cluster.dev.kubeconfigPath]);
    assert.equal(un.code, 0, un.stderr);
    assert.equal(await cluster.dev.client.find(ClusterRoles, INSTALLER_NAME), undefined);
    assert.equal(await cluster.dev.client.find(ClusterRoleBindings, INSTALLER_NAME), undefined);
  });
});
