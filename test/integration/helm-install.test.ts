/**
 * The Helm chart installed with the real helm binary on the dev cluster, once per distribution, then the
 * operator run with the chart's ServiceAccount token (not as admin) installs kata through a KataConfig and
 * removes it: the chart's RBAC, kata-deploy's identity included on plain Kubernetes, is enough, and no
 * request of the operator is refused.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { ClusterRoles, DaemonSets, Deployments, RuntimeClasses, ServiceAccounts } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { INSTALLER_NAME } from '../../src/platform/kubernetes/katadeploy.ts';
import { MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { OscProcess } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { cachedBuild } from '../support/tools.ts';
import { waitFor } from '../support/wait.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'charts', 'osc');
const ns = OPERATOR_NAMESPACE;

for (const distribution of ['kubernetes', 'openshift'] as const) {
  describe(`helm install of charts/osc (distribution ${distribution}), then kata under the chart's RBAC`, () => {
    const cluster = useDevCluster({
      distribution,
      workers: 2,
      masters: 1,
      ...(distribution === 'kubernetes'
        ? { kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 500 }, kataDeployIdentity: false }
        : {}),
    });
    const dir = mkdtempSync(join(tmpdir(), `osc-helm-${distribution}-`));
    let helm = '';
    let operator: OscProcess | undefined;
    const kubectl = (args: string[], opts: { input?: string; kubeconfig?: string } = {}) => cluster.dev.controlPlane.kubectl(args, opts);
    const helmRun = (args: string[]) =>
      run(helm, [...args, '--kubeconfig', cluster.dev.kubeconfigPath], {
        maxBuffer: 16 << 20,
        env: { ...process.env, HELM_CACHE_HOME: dir, HELM_CONFIG_HOME: dir, HELM_DATA_HOME: dir },
      });

    before(async () => {
      helm = await cachedBuild(join(root, 'tools', 'build-helm.sh'));
    });
    after(() => {
      operator?.kill();
      rmSync(dir, { recursive: true, force: true });
    });

    test('helm install applies the chart for this distribution', async () => {
      const values = distribution === 'kubernetes' ? [] : ['--set', 'distribution=openshift'];
      // The dev cluster serves osc's CRDs and made the operator's namespace (an operator run from a checkout
      // needs them); the chart renders them too, so they are handed to the release as helm adopts objects:
      // by its ownership metadata.
      const rendered = parseAllDocuments((await helmRun(['template', 'osc', chart, ...values])).stdout)
        .map((d) => d.toJS() as KubeObject | null)
        .filter((o): o is KubeObject => !!o);
      for (const o of rendered) {
        const ref = [`${o.kind?.toLowerCase()}/${o.metadata.name}`, ...(o.metadata.namespace ? ['-n', o.metadata.namespace] : [])];
        if ((await kubectl(['get', ...ref])).code !== 0) continue;
        assert.equal((await kubectl(['label', '--overwrite', ...ref, 'app.kubernetes.io/managed-by=Helm'])).code, 0);
        const owner = ['meta.helm.sh/release-name=osc', 'meta.helm.sh/release-namespace=default'];
        assert.equal((await kubectl(['annotate', '--overwrite', ...ref, ...owner])).code, 0);
      }
      const installed = await helmRun(['install', 'osc', chart, ...values]);
      assert.match(installed.stdout, /STATUS: deployed/);
      const client = cluster.dev.client;
      assert.ok(await client.find(Deployments, NAMES.deployment, ns));
      const role = (await client.get(ClusterRoles, NAMES.clusterRole)) as { rules?: { apiGroups: string[]; resources: string[] }[] };
      assert.equal(
        role.rules?.some((r) => r.apiGroups.includes('machineconfiguration.openshift.io')),
        distribution === 'openshift',
      );
      assert.ok(!role.rules?.some((r) => r.resources.includes('nodes/proxy') || r.apiGroups.includes('rbac.authorization.k8s.io')));
      // kata-deploy's identity ships for both: OpenShift runs it with deploymentMode DaemonSet.
      assert.ok(await client.find(ServiceAccounts, INSTALLER_NAME, ns));
    });

    test("the operator, with the chart's ServiceAccount token, installs kata and removes it", async () => {
      // The operator runs outside the cluster here and registers its webhooks by URL; the chart's
      // registrations by Service are unreachable from the dev cluster's API server, and a URL cannot be
      // merged into a registration helm owns the Service of (exactly one of them is allowed).
      for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration'])
        for (const name of [VALIDATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_CONFIGURATION])
          await kubectl(['delete', kind, name, '--ignore-not-found']);
      const token = await kubectl(['create', 'token', NAMES.serviceAccount, '-n', ns, '--duration=1h']);
      assert.equal(token.code, 0, token.stderr);
      const cp = cluster.dev.controlPlane;
      const saKubeconfig = join(dir, 'sa.kubeconfig');
      writeFileSync(saKubeconfig, tokenKubeconfigText(cp.apiserverUrl, cp.caPem, token.stdout.trim(), { user: 'sa', namespace: ns }));
      // The chart's Deployment's container, as the kubelet would start it, with its addresses on loopback.
      const dep = (await cluster.dev.client.get(Deployments, NAMES.deployment, ns)) as KubeObject & {
        spec: { template: { spec: { containers: { args: string[] }[] } } };
      };
      const args = (dep.spec.template.spec.containers[0]?.args ?? []).map((a) =>
        a.replace(/^(--(?:metrics|health-probe|webhook)-bind-address)=:\d+$/, '$1=127.0.0.1:0'),
      );
      assert.deepEqual(args.slice(0, 2), ['run', '--leader-elect']);
      const op = new OscProcess([...args, '--kubeconfig', saKubeconfig, '--webhook-url', 'https://127.0.0.1:{port}'], {
        POD_NAMESPACE: ns,
      });
      operator = op;
      await waitFor(() => op.stdout.includes('"became leader"') || op.child.exitCode !== null, {
        timeoutMs: 120_000,
        message: 'the operator to lead',
      });
      assert.equal(op.child.exitCode, null, `the operator exited: ${op.stdout}${op.stderr}`);
      assert.match(op.stdout, new RegExp(`"platform":"${distribution}"`));

      const kataConfig = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: cluster-kataconfig
spec:
  logLevel: info
`;
      await waitFor(async () => (await kubectl(['create', '-f', '-'], { input: kataConfig })).code === 0, {
        timeoutMs: 60_000,
        message: 'the KataConfig accepted (webhooks registered by the operator)',
      });
      await waitFor(
        async () => {
          const kc = await cluster.dev.client.find(KataConfigs, 'cluster-kataconfig');
          const c = kc?.status?.conditions?.find((x) => x.type === 'InProgress');
          return c?.status === 'False' && c.reason === '' && kc?.status?.kataNodes?.readyNodeCount === 2;
        },
        { timeoutMs: 300_000, message: `kata installed under the chart's RBAC: ${op.stdout.slice(-3000)}` },
      );
      assert.ok(await cluster.dev.client.find(RuntimeClasses, 'kata'));
      if (distribution === 'kubernetes') assert.ok(await cluster.dev.client.find(DaemonSets, INSTALLER_NAME, ns));

      const deleted = await kubectl(['delete', 'kataconfig', 'cluster-kataconfig', '--wait=false']);
      assert.equal(deleted.code, 0, deleted.stderr);
      await waitFor(async () => !(await cluster.dev.client.find(KataConfigs, 'cluster-kataconfig')), {
        timeoutMs: 300_000,
        message: 'the KataConfig gone',
      });
      assert.doesNotMatch(op.stdout, /forbidden/i, "no request of the operator was refused under the chart's RBAC");
      op.kill();
      const uninstalled = await helmRun(['uninstall', 'osc']);
      assert.match(uninstalled.stdout, /uninstalled/);
      assert.equal(await cluster.dev.client.find(ClusterRoles, NAMES.clusterRole), undefined);
    });
  });
}
