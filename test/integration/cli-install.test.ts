/**
 * `osc install` into the dev cluster, then the operator run from the installed Deployment's settings with
 * its own ServiceAccount's token (not as admin) installs and removes kata through a KataConfig, while
 * `osc status --watch` renders it live. Also: what the ServiceAccount may not do, `osc must-gather`, and
 * `osc uninstall` (refused while a KataConfig exists).
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { x as extract } from 'tar';
import { Agent, fetch as undiciFetch } from 'undici';
import { KataConfigs, messages } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { NAMES } from '../../src/install/manifests.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  CustomResourceDefinitions,
  Deployments,
  Namespaces,
  RoleBindings,
  Roles,
  RuntimeClasses,
  Secrets,
  ServiceAccounts,
  ValidatingWebhookConfigurations,
} from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { WEBHOOK_SECRET } from '../../src/webhooks/setup.ts';
import { OscProcess, runOsc as osc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor, waitForEvents } from '../support/wait.ts';

const ns = OPERATOR_NAMESPACE;
const SA = `system:serviceaccount:${ns}:${NAMES.serviceAccount}`;
const KATACONFIG = `apiVersion: kataconfiguration.openshift.io/v1
kind: KataConfig
metadata:
  name: cluster-kataconfig
spec:
  checkNodeEligibility: false
  logLevel: info
`;

/** Resolves 'timeout' after ms without holding the process open. */
const timeout = (ms: number) => new Promise<string>((r) => setTimeout(() => r('timeout'), ms).unref());

/** `osc` as a child process, as a user runs it. */
describe('osc install, and the operator under its own ServiceAccount', () => {
  const cluster = useDevCluster({ workers: 2 });
  const dir = mkdtempSync(join(tmpdir(), 'osc-cli-install-'));
  const children: OscProcess[] = [];
  let admin: string;
  let saKubeconfig: string;
  let operator: OscProcess;
  const kubectl = (args: string[], opts: { input?: string; kubeconfig?: string } = {}) => cluster.dev.controlPlane.kubectl(args, opts);
  const start = (args: string[], env?: Record<string, string>) => {
    const p = new OscProcess(args, env);
    children.push(p);
    return p;
  };

  before(() => {
    admin = cluster.dev.kubeconfigPath;
  });
  after(() => {
    for (const c of children) c.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('osc install --dry-run=server: the report of a first install, and nothing written', async () => {
    // Left by "an earlier install": a namespace osc no longer ships is reported, never removed.
    const old = await kubectl(['create', 'namespace', 'osc-retired']);
    assert.equal(old.code, 0, old.stderr);
    assert.equal((await kubectl(['label', 'namespace', 'osc-retired', 'app.kubernetes.io/managed-by=osc-install'])).code, 0);
    const dry = await osc(['install', '--dry-run=server', '--kubeconfig', admin]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^serviceaccount\/osc-controller-manager created \(dry run\)$/m);
    assert.match(dry.stdout, /^deployment\.apps\/osc-controller-manager created \(dry run\)$/m);
    assert.match(dry.stdout, /^namespace\/osc-retired kept: no longer shipped, but removing it would delete what it holds/m);
    assert.match(dry.stdout, /Dry run: nothing was written/);
    assert.equal(await cluster.dev.client.find(Deployments, NAMES.deployment, ns), undefined, 'no Deployment written');
    assert.equal(await cluster.dev.client.find(ServiceAccounts, NAMES.serviceAccount, ns), undefined, 'no ServiceAccount written');
    assert.ok(await cluster.dev.client.find(Namespaces, 'osc-retired'), 'the retired namespace kept');
    assert.equal((await kubectl(['delete', 'namespace', 'osc-retired', '--wait=false'])).code, 0);
  });

  test('osc install applies every manifest, with the webhook certificate; a second run changes nothing', async () => {
    const first = await osc(['install', '--kubeconfig', admin]);
    assert.equal(first.code, 0, first.stderr);
    // The dev cluster made the namespace: osc install adds its labels, and says which.
    assert.match(
      first.stdout,
      /^namespace\/openshift-sandboxed-containers-operator (created|configured \(metadata\.labels\..*\)|unchanged)$/m,
    );
    assert.match(first.stdout, /^serviceaccount\/osc-controller-manager created$/m);
    assert.match(first.stdout, /^clusterrole\.rbac\.authorization\.k8s\.io\/osc-manager-role created$/m);
    assert.match(first.stdout, /^deployment\.apps\/osc-controller-manager created$/m);
    assert.match(
      first.stdout,
      /^validatingwebhookconfiguration\.admissionregistration\.k8s\.io\/osc-validating-webhook-configuration created$/m,
    );
    assert.match(first.stdout, /osc is installed in namespace openshift-sandboxed-containers-operator/);

    const client = cluster.dev.client;
    const secret = await client.get(Secrets, WEBHOOK_SECRET, ns);
    const vwc = (await client.get(ValidatingWebhookConfigurations, 'osc-validating-webhook-configuration')) as KubeObject & {
      webhooks: { clientConfig: { caBundle?: string; service?: { name: string } } }[];
    };
    assert.equal(vwc.webhooks[0]?.clientConfig.caBundle, secret.data?.['ca.crt'], 'the webhook trusts the serving certificate');
    assert.equal(vwc.webhooks[0]?.clientConfig.service?.name, NAMES.webhookService);

    const second = await osc(['install', '--kubeconfig', admin]);
    assert.equal(second.code, 0, second.stderr);
    const changed = second.stdout
      .split('\n')
      .filter((l) => / (created|configured)\b/.test(l))
      .join('\n');
    assert.equal(changed, '', 'a second install is a no-op');
  });

  test('the operator runs with the installed Deployment settings and its ServiceAccount token', async () => {
    const token = await kubectl(['create', 'token', NAMES.serviceAccount, '-n', ns, '--duration=1h']);
    assert.equal(token.code, 0, token.stderr);
    const cp = cluster.dev.controlPlane;
    saKubeconfig = join(dir, 'sa.kubeconfig');
    writeFileSync(saKubeconfig, tokenKubeconfigText(cp.apiserverUrl, cp.caPem, token.stdout.trim(), { user: 'sa', namespace: ns }));
    const whoami = await kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], { kubeconfig: saKubeconfig });
    assert.equal(whoami.stdout, SA);

    // The Deployment's container, as the kubelet would start it: its args and its POD_NAMESPACE. Outside
    // the cluster the addresses move to loopback and the webhooks are registered by URL.
    const dep = (await cluster.dev.client.get(Deployments, NAMES.deployment, ns)) as KubeObject & {
      spec: {
        template: { spec: { serviceAccountName: string; containers: { args: string[]; env: { name: string; valueFrom?: unknown }[] }[] } };
      };
    };
    assert.equal(dep.spec.template.spec.serviceAccountName, NAMES.serviceAccount);
    const container = dep.spec.template.spec.containers[0];
    assert.ok(container);
    assert.ok(container.env.some((e) => e.name === 'POD_NAMESPACE'));
    const args = container.args.map((a) => a.replace(/^(--(?:metrics|health-probe|webhook)-bind-address)=:\d+$/, '$1=127.0.0.1:0'));
    assert.deepEqual(args.slice(0, 2), ['run', '--leader-elect']);
    operator = start([...args, '--kubeconfig', saKubeconfig, '--webhook-url', 'https://127.0.0.1:{port}'], {
      POD_NAMESPACE: dep.metadata.namespace ?? '',
    });
    await waitFor(() => operator.stdout.includes('"caches synced"') || operator.child.exitCode !== null, {
      timeoutMs: 60_000,
      message: 'the operator to sync its caches',
    });
    assert.equal(operator.child.exitCode, null, `the operator exited: ${operator.stdout}${operator.stderr}`);
    await waitFor(
      async () => {
        const w = (await cluster.dev.client.get(ValidatingWebhookConfigurations, 'osc-validating-webhook-configuration')) as KubeObject & {
          webhooks: { clientConfig: { url?: string } }[];
        };
        return w.webhooks[0]?.clientConfig.url?.startsWith('https://127.0.0.1:');
      },
      { message: 'the webhooks registered by URL' },
    );
    await waitFor(() => operator.stdout.includes('"became leader"'), { message: 'the leader lease (leases RBAC)' });
  });

  test("its /metrics: HTTPS, for the cluster Prometheus's token (osc-metrics-reader), not for others", async () => {
    // The operator's RBAC lets it review tokens and access; the shipped binding names OpenShift's Prometheus.
    const m = /"address":"([^"]+)","routes":\["\/metrics"\],"tls":true/.exec(operator.stdout);
    assert.ok(m?.[1], `the operator serves /metrics over TLS:\n${operator.stdout}`);
    for (const args of [
      ['create', 'namespace', 'openshift-monitoring'],
      ['create', 'serviceaccount', 'prometheus-k8s', '-n', 'openshift-monitoring'],
    ]) {
      const r = await kubectl(args);
      assert.equal(r.code, 0, r.stderr);
    }
    const tokenOf = async (sa: string, namespace: string) => (await kubectl(['create', 'token', sa, '-n', namespace])).stdout.trim();
    // Its certificate is one the child process made for itself (no service CA here): not verified by this client.
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
    const get = async (token: string) => {
      const r = await undiciFetch(`https://${m[1]}/metrics`, { headers: { authorization: `Bearer ${token}` }, dispatcher });
      return { status: r.status, text: await r.text() };
    };
    try {
      const prom = await get(await tokenOf('prometheus-k8s', 'openshift-monitoring'));
      assert.equal(prom.status, 200, prom.text);
      assert.match(prom.text, /^leader_election_master_status\{name="osc-operator-leader"\} 1$/m);
      const own = await get(await tokenOf(NAMES.serviceAccount, ns));
      assert.equal(own.status, 403, own.text);
    } finally {
      await dispatcher.close();
    }
  });

  test('osc status --watch renders the install live; kata is installed by the ServiceAccount-run operator', async () => {
    const watch = start(['status', '--watch', '--kubeconfig', admin]);
    await waitFor(() => watch.stdout.includes('No KataConfig in this cluster yet'), { message: 'status --watch waiting' });
    const created = await kubectl(['create', '-f', '-'], { input: KATACONFIG });
    assert.equal(created.code, 0, created.stderr);
    const code = await Promise.race([watch.exited, timeout(120_000)]);
    assert.equal(code, 0, `status --watch ended with ${code}:\n${watch.stdout}${watch.stderr}`);
    const out = watch.stdout;
    const points = [
      `KataConfig cluster-kataconfig: Installing — ${messages.installing('kata')}`,
      '[----------] 0/2 nodes',
      'worker-0   waiting to install',
      '[#####-----] 1/2 nodes',
      'KataConfig cluster-kataconfig: Installed — kata is installed on 2 node(s); pods can use runtimeClassName: kata',
      '[##########] 2/2 nodes',
      'RuntimeClasses: kata',
    ];
    let at = 0;
    for (const p of points) {
      const i = out.indexOf(p, at);
      assert.ok(i >= 0, `"${p}" after position ${at} in:\n${out}`);
      at = i;
    }
    assert.match(out, /^worker-\d {3}installing$/m, 'a node seen installing');
    assert.equal((await cluster.dev.client.get(RuntimeClasses, 'kata')).handler, 'kata');
    // The operator's events reached default (its events RBAC works).
    // Events are recorded asynchronously: the Installed one may land just after the status says so.
    await waitForEvents(
      cluster.dev.client,
      'default',
      (e) => e.regarding?.kind === 'KataConfig' && e.reason === 'Installed',
      'the Installed event in default',
    );
    assert.doesNotMatch(operator.stdout, /forbidden/i, 'no request of the operator was refused');

    const once = await osc(['status', '--kubeconfig', admin, '-o', 'json']);
    assert.equal(once.code, 0, once.stderr);
    const parsed = JSON.parse(once.stdout) as { kataConfigs: { name: string; phase: string; readyNodeCount: number; nodes: unknown[] }[] };
    assert.equal(parsed.kataConfigs[0]?.phase, 'Installed');
    assert.equal(parsed.kataConfigs[0]?.readyNodeCount, 2);
    const yaml = await osc(['status', '--kubeconfig', admin, '-o', 'yaml']);
    assert.match(yaml.stdout, /^kataConfigs:\n {2}- name: cluster-kataconfig\n {4}phase: Installed$/m);
  });

  test('RBAC: the ServiceAccount can do its job and nothing more', async () => {
    const can = async (verb: string, resource: string, namespace?: string) => {
      const r = await kubectl(['auth', 'can-i', verb, resource, '--as', SA, ...(namespace ? ['-n', namespace] : [])]);
      return r.stdout.trim() === 'yes';
    };
    const allowed: [string, string, string?][] = [
      ['patch', 'nodes'],
      ['list', 'pods', 'default'],
      ['update', 'kataconfigs.kataconfiguration.openshift.io/cluster-kataconfig', undefined],
      ['create', 'machineconfigs.machineconfiguration.openshift.io'],
      ['delete', 'machineconfigs.machineconfiguration.openshift.io/50-enable-sandboxed-containers-extension'],
      ['get', `secrets/${WEBHOOK_SECRET}`, ns],
      ['update', 'leases.coordination.k8s.io/osc-operator-leader', ns],
      ['create', 'events.events.k8s.io', 'default'],
      ['create', 'daemonsets.apps', ns],
    ];
    const denied: [string, string, string?][] = [
      ['get', 'secrets', 'default'],
      ['list', 'secrets', 'kube-system'],
      ['create', 'secrets', 'default'],
      ['delete', `secrets/${WEBHOOK_SECRET}`, ns],
      ['delete', 'nodes'],
      ['create', 'pods', 'default'],
      ['delete', 'pods', 'default'],
      ['delete', 'machineconfigs.machineconfiguration.openshift.io/00-worker'],
      ['patch', 'machineconfigpools.machineconfiguration.openshift.io/worker'],
      ['delete', 'runtimeclasses.node.k8s.io/runc'],
      ['create', 'clusterrolebindings'],
      ['create', 'deployments.apps', 'default'],
      ['create', 'daemonsets.apps', 'default'],
      ['get', 'configmaps', 'kube-system'],
      ['delete', 'kataconfigs.kataconfiguration.openshift.io'],
      ['delete', 'customresourcedefinitions'],
      ['update', 'leases.coordination.k8s.io/someone-elses-lease', ns],
      ['create', 'events.events.k8s.io', 'kube-system'],
    ];
    // Update KataConfig (not its status) is not needed: finalizers are patched.
    allowed.splice(2, 1, ['patch', 'kataconfigs.kataconfiguration.openshift.io']);
    for (const [verb, res, nsName] of allowed) assert.ok(await can(verb, res, nsName), `allowed: ${verb} ${res} ${nsName ?? ''}`);
    for (const [verb, res, nsName] of denied) assert.ok(!(await can(verb, res, nsName)), `denied: ${verb} ${res} ${nsName ?? ''}`);

    // And for real, with the token: reading a secret outside its namespace is refused.
    await kubectl(['create', 'secret', 'generic', 'not-yours', '-n', 'default', '--from-literal=k=v']);
    const read = await kubectl(['get', 'secret', 'not-yours', '-n', 'default'], { kubeconfig: saKubeconfig });
    assert.notEqual(read.code, 0);
    assert.match(read.stderr, /Forbidden.*cannot get resource "secrets" in API group "" in the namespace "default"/);
    const del = await kubectl(['delete', 'node', 'worker-0', '--dry-run=server'], { kubeconfig: saKubeconfig });
    assert.match(del.stderr, /Forbidden/);
  });

  test('osc must-gather: KataConfig, pools, nodes, events, the operator namespace; no secret values', async () => {
    const secretValues = { AWS_ACCESS_KEY_ID: 'AKIAOSCMUSTGATHERTEST', AWS_SECRET_ACCESS_KEY: 'osc-very-secret-value-4711' };
    const made = await kubectl([
      'create',
      'secret',
      'generic',
      'peer-pods-secret',
      '-n',
      ns,
      ...Object.entries(secretValues).map(([k, v]) => `--from-literal=${k}=${v}`),
    ]);
    assert.equal(made.code, 0, made.stderr);
    const dest = join(dir, 'gather');
    const r = await osc(['must-gather', '--dest-dir', dest, '--kubeconfig', admin]);
    assert.equal(r.code, 0, r.stderr);
    const archive = /in (\S+\.tar\.gz)$/m.exec(r.stdout)?.[1];
    assert.ok(archive, r.stdout);
    const out = join(dir, 'extracted');
    rmSync(out, { recursive: true, force: true });
    (await import('node:fs')).mkdirSync(out, { recursive: true });
    await extract({ file: join(dest, archive.split('/').pop() ?? ''), cwd: out });
    const top = readdirSync(out)[0] ?? '';
    const read = (p: string) => readFileSync(join(out, top, p), 'utf8');
    assert.match(read('cluster-scoped/kataconfigs.yaml'), /name: cluster-kataconfig/);
    assert.match(read('cluster-scoped/kataconfigs.yaml'), /readyNodeCount: 2/);
    assert.match(read('cluster-scoped/katanodes.yaml'), /phase: Installed/);
    const pools = read('cluster-scoped/machineconfigpools.yaml');
    for (const p of ['kata-oc', 'worker', 'master']) assert.match(pools, new RegExp(`name: ${p}\\n`));
    const mcs = read('cluster-scoped/machineconfigs.yaml');
    assert.match(mcs, /name: 50-enable-sandboxed-containers-extension/);
    assert.match(mcs, /name: rendered-kata-oc-/);
    const nodes = read('cluster-scoped/nodes.yaml');
    assert.match(nodes, /name: worker-0/);
    assert.match(nodes, /node-role\.kubernetes\.io\/kata-oc: ""/);
    assert.match(nodes, /machineconfiguration\.openshift\.io\/state: Done/);
    assert.match(read('cluster-scoped/runtimeclasses.yaml'), /handler: kata/);
    assert.match(read('namespaces/default/events.yaml'), /reportingController: kataconfiguration\.openshift\.io\/osc/);
    assert.match(read(`namespaces/${ns}/deployments.yaml`), /name: osc-controller-manager/);
    assert.match(read(`namespaces/${ns}/leases.yaml`), /name: osc-operator-leader/);
    const secrets = read(`namespaces/${ns}/secrets.yaml`);
    assert.match(secrets, /AWS_SECRET_ACCESS_KEY: REDACTED/);
    assert.match(secrets, /tls\.key: REDACTED/);
    // The Deployment's pod runs (on a kwok node, which serves no logs): collected, and the missing log said.
    assert.match(read(`namespaces/${ns}/pods.yaml`), /name: osc-controller-manager-/);
    assert.match(read('summary.txt'), /KataConfig cluster-kataconfig: Installed/);
    assert.match(
      read('summary.txt'),
      /Not collected:\n(.*\n)*\s+- logs of openshift-sandboxed-containers-operator\/osc-controller-manager-\S+\/manager: /,
    );

    const webhookKey = (await cluster.dev.client.get(Secrets, WEBHOOK_SECRET, ns)).data?.['tls.key'] ?? '';
    const forbidden = [
      ...Object.values(secretValues),
      ...Object.values(secretValues).map((v) => Buffer.from(v).toString('base64')),
      webhookKey,
    ];
    const everything = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? everything(join(d, e.name)) : [join(d, e.name)]));
    const files = everything(out);
    assert.ok(files.length >= 20, `${files.length} files`);
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const v of forbidden) assert.ok(!text.includes(v), `${f} contains a secret value`);
      assert.ok(
        !text.includes('BEGIN RSA PRIVATE KEY') && !text.includes('BEGIN PRIVATE KEY') && !text.includes('BEGIN EC PRIVATE KEY'),
        f,
      );
    }
  });

  test('osc uninstall refuses while a KataConfig exists; after the uninstall rollout it removes everything', async () => {
    const refused = await osc(['uninstall', '--kubeconfig', admin]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^error: KataConfig "cluster-kataconfig" still exists: delete it first \("kubectl delete kataconfig cluster-kataconfig"\) and wait until it is gone, so that the operator removes kata from the nodes\./,
    );
    assert.ok(await cluster.dev.client.find(Deployments, NAMES.deployment, ns), 'nothing was removed');

    // A settled KataConfig: the watch shows it and ends at once.
    const settled = start(['status', '--watch', '--kubeconfig', admin]);
    assert.equal(await settled.exited, 0);
    assert.match(settled.stdout, /^KataConfig cluster-kataconfig: Installed/);

    // A pod using kata blocks the uninstall; the watch follows that, then the rollout back, to the end.
    const pod = await kubectl([
      'run',
      'hello-openshift',
      '--image=quay.io/openshift/origin-hello-openshift',
      '--overrides={"spec":{"runtimeClassName":"kata"}}',
    ]);
    assert.equal(pod.code, 0, pod.stderr);
    const deleted = await kubectl(['delete', 'kataconfig', 'cluster-kataconfig', '--wait=false']);
    assert.equal(deleted.code, 0, deleted.stderr);
    const follow = start(['status', '-w', '--kubeconfig', admin]);
    await waitFor(() => follow.stdout.includes('BlockedByExistingKataPods'), { message: 'the watch to show the blocked uninstall' });
    assert.match(
      follow.stdout,
      /BlockedByExistingKataPods — Existing pods using "kata" RuntimeClass found\. Please delete the pods manually/,
    );
    assert.equal(follow.child.exitCode, null, 'blocked is not settled: the watch goes on');
    assert.equal((await kubectl(['delete', 'pod', 'hello-openshift'])).code, 0);
    const code = await Promise.race([follow.exited, timeout(120_000)]);
    assert.equal(code, 0, `${follow.stdout}${follow.stderr}`);
    assert.match(follow.stdout, /KataConfig cluster-kataconfig: Uninstalling — Removing kata from cluster\n/);
    assert.match(follow.stdout, /nodes uninstalled\n/);
    assert.match(follow.stdout, /KataConfig cluster-kataconfig: deleted — kata was removed from the cluster\n$/);
    assert.equal(await cluster.dev.client.find(KataConfigs, 'cluster-kataconfig'), undefined);

    operator.child.kill('SIGTERM');
    assert.equal(await operator.exited, 0, operator.stderr);
    assert.match(operator.stdout, /"operator stopped"/);
    assert.doesNotMatch(operator.stdout, /forbidden/i, 'no request of the operator was refused, uninstall included');

    const r = await osc(['uninstall', '--kubeconfig', admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^mutatingwebhookconfiguration\.admissionregistration\.k8s\.io\/osc-mutating-webhook-configuration deleted$/m);
    assert.match(r.stdout, /^customresourcedefinition\.apiextensions\.k8s\.io\/kataconfigs\.kataconfiguration\.openshift\.io deleted$/m);
    assert.match(r.stdout, /osc is uninstalled\.$/m);
    const c = cluster.dev.client;
    assert.equal(await c.find(Deployments, NAMES.deployment, ns), undefined);
    assert.equal(await c.find(ServiceAccounts, NAMES.serviceAccount, ns), undefined);
    assert.equal(await c.find(ClusterRoles, NAMES.clusterRole), undefined);
    assert.equal(await c.find(ClusterRoleBindings, NAMES.clusterRoleBinding), undefined);
    assert.equal(await c.find(Roles, NAMES.role, ns), undefined);
    assert.equal(await c.find(RoleBindings, NAMES.eventsRoleBinding, 'default'), undefined);
    assert.equal(await c.find(ValidatingWebhookConfigurations, 'osc-validating-webhook-configuration'), undefined);
    assert.equal(await c.find(Secrets, WEBHOOK_SECRET, ns), undefined);
    await waitFor(async () => !(await c.find(CustomResourceDefinitions, 'kataconfigs.kataconfiguration.openshift.io')), {
      message: 'the KataConfig CRD gone',
    });
    // The controller-manager's namespace controller empties the namespace and it goes.
    await waitFor(async () => !(await c.find(Namespaces, ns)), { timeoutMs: 120_000, message: 'the operator namespace gone' });

    const after = await osc(['status', '--kubeconfig', admin]);
    assert.equal(after.code, 1);
    assert.equal(
      after.stderr,
      'error: the KataConfig API is not installed in this cluster (kataconfigs.kataconfiguration.openshift.io); run "osc install" first\n',
    );

    // And installing again works as on any cluster (a namespace stuck Terminating would refuse it).
    const again = await osc(['install', '--kubeconfig', admin]);
    assert.equal(again.code, 0, again.stderr);
    assert.ok(await c.find(Deployments, NAMES.deployment, ns), 'the operator Deployment is back');
    const removed = await osc(['uninstall', '--kubeconfig', admin]);
    assert.equal(removed.code, 0, removed.stderr);
  });
});
