/**
 * What osc ships for OpenShift's SCC admission: each privileged workload under a ServiceAccount of its own,
 * one SCC of osc's per workload that admits its pods and would refuse them with any one allowance less,
 * `use` granted only by resourceNames to exactly that ServiceAccount, pods pinned with required-scc, and
 * the operator's own Deployment admitted under restricted-v2. Checked with the dev cluster's admission.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { MONITOR_SERVICE_ACCOUNT, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import {
  CAA_SCC,
  CAA_SERVICE_ACCOUNT,
  KATA_DEPLOY_SCC,
  MCS_ANNOTATION,
  MONITOR_SCC,
  PODVM_IMAGE_SCC,
  PODVM_IMAGE_SERVICE_ACCOUNT,
  REQUIRED_SCC_ANNOTATION,
  type SecurityContextConstraints,
  UID_RANGE_ANNOTATION,
} from '../../src/api/scc.ts';
import { desiredMonitor } from '../../src/controllers/monitor/desired.ts';
import { desiredDaemonSet, desiredImageJob } from '../../src/controllers/peerpods/desired.ts';
import { type Authorize, admitPod, type UserInfo } from '../../src/devcluster/scc/admission.ts';
import { defaultSCCs } from '../../src/devcluster/scc/defaults.ts';
import type { AdmittedPod } from '../../src/devcluster/scc/provider.ts';
import { manifests, NAMES } from '../../src/install/manifests.ts';
import { oscSCCs, SCC_GRANTS } from '../../src/install/scc.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { nodeLogPod } from '../../src/mustgather/nodelogs.ts';
import { credentialsWiring } from '../../src/peerpods/credentials.ts';
import { desiredInstallerDaemonSet, INSTALLER_NAME, installerConfig } from '../../src/platform/kubernetes/katadeploy.ts';

const NS = OPERATOR_NAMESPACE;
const nsAnnotations = { [UID_RANGE_ANNOTATION]: '1000700000/10000', [MCS_ANNOTATION]: 's0:c27,c4' };
const daemonSetController: UserInfo = {
  username: 'system:serviceaccount:kube-system:daemon-set-controller',
  groups: ['system:serviceaccounts', 'system:authenticated'],
};
const owner = { apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig', name: 'example', uid: 'u1' };
const kataConfig: KataConfig = {
  metadata: { name: 'example', uid: 'u1' },
  spec: { logLevel: 'info' },
  status: { runtimeClasses: ['kata'] },
} as KataConfig;

type Template = { metadata?: { annotations?: Record<string, string> }; spec: Record<string, unknown> };
/** A pod of a template as the API server hands it to admission (a ServiceAccount set; hostNetwork ports get host ports). */
const podOf = (t: Template): AdmittedPod => {
  const spec = structuredClone(t.spec) as AdmittedPod['spec'];
  spec.serviceAccountName ??= 'default';
  // The ServiceAccount admission plugin mounts the API token unless the pod opts out.
  if ((spec as { automountServiceAccountToken?: boolean }).automountServiceAccountToken !== false)
    spec.volumes = [...(spec.volumes ?? []), { name: 'kube-api-access', projected: { sources: [] } }];
  if (spec.hostNetwork) for (const c of spec.containers) for (const p of c.ports ?? []) p.hostPort ??= p.containerPort;
  return { metadata: { generateName: 'p-', namespace: NS, annotations: { ...t.metadata?.annotations } }, spec };
};

/** The volume types a template's pod has at admission (hostPath, projected, ...): what its SCC must allow. */
const volumeTypes = (t: Template): string[] => [
  ...new Set(((podOf(t).spec.volumes ?? []) as Record<string, unknown>[]).flatMap((v) => Object.keys(v).filter((k) => k !== 'name'))),
];

const workloads = () => {
  const caa = desiredDaemonSet({
    namespace: NS,
    image: 'caa:1',
    configHash: 'h',
    placement: { nodeSelector: { kata: '' }, tolerations: [] },
    owner,
  });
  const monitor = desiredMonitor({
    namespace: NS,
    image: 'monitor:1',
    kataConfig,
    kataNodeSelector: { kata: '' },
    prometheusOperator: false,
  })?.daemonSet;
  // On a Manual-mode (STS) cluster the adaptor also mounts a projected token for the role it assumes.
  const caaSts = desiredDaemonSet({
    namespace: NS,
    image: 'caa:1',
    configHash: 'h',
    placement: { nodeSelector: { kata: '' }, tolerations: [] },
    owner,
    credentials: credentialsWiring({ kind: 'sts', roleArn: 'arn:aws:iam::123456789012:role/r' }, 'peer-pods-secret'),
  });
  const job = desiredImageJob({ kind: 'creation', namespace: NS, image: 'builder:1', backoffLimit: 1, configHash: 'h', owner });
  assert.ok(monitor);
  const kataDeploy = desiredInstallerDaemonSet(NS, installerConfig('quay.io/kata-containers/kata-deploy:4.1.0', 'qemu', 'info'));
  return [
    { name: 'cloud-api-adaptor', template: caa.spec.template as Template, scc: CAA_SCC, sa: CAA_SERVICE_ACCOUNT },
    {
      name: 'cloud-api-adaptor with an STS role',
      template: caaSts.spec.template as Template,
      scc: CAA_SCC,
      sa: CAA_SERVICE_ACCOUNT,
    },
    {
      name: 'kata-deploy (deploymentMode DaemonSet)',
      template: kataDeploy.spec.template as Template,
      scc: KATA_DEPLOY_SCC,
      sa: INSTALLER_NAME,
    },
    { name: 'kata monitor', template: (monitor.spec as { template: Template }).template, scc: MONITOR_SCC, sa: MONITOR_SERVICE_ACCOUNT },
    { name: 'pod VM image job', template: job.spec.template as Template, scc: PODVM_IMAGE_SCC, sa: PODVM_IMAGE_SERVICE_ACCOUNT },
  ];
};

/** A fresh OpenShift's RBAC (restricted-v2 for every authenticated subject) plus osc's grants, if shipped. */
const rbac =
  (withGrants: boolean): Authorize =>
  async (who, scc, namespace) =>
    (scc === 'restricted-v2' && who.groups.includes('system:authenticated')) ||
    (withGrants &&
      namespace === NS &&
      SCC_GRANTS.some((g) => g.scc === scc && who.username === `system:serviceaccount:${NS}:${g.serviceAccount}`));

const admit = (pod: AdmittedPod, withGrants: boolean, sccs: SecurityContextConstraints[] = [...defaultSCCs(), ...oscSCCs()]) =>
  admitPod({ pod, namespace: NS, namespaceAnnotations: nsAnnotations, sccs, user: daemonSetController, authorize: rbac(withGrants) });

describe("osc's SCCs and grants", () => {
  for (const w of workloads())
    test(`${w.name}: its own ServiceAccount, its SCC pinned, admitted with osc's grants and refused without`, async () => {
      assert.equal(w.template.spec.serviceAccountName, w.sa);
      assert.notEqual(w.sa, 'default');
      assert.equal(w.template.metadata?.annotations?.[REQUIRED_SCC_ANNOTATION], w.scc);
      const granted = await admit(podOf(w.template), true);
      assert.ok(granted.allowed, granted.allowed ? '' : granted.message);
      assert.equal(granted.scc, w.scc);
      if (w.scc === PODVM_IMAGE_SCC) return; // restricted-v2 needs no grant of osc's
      const refused = await admit(podOf(w.template), false);
      assert.equal(refused.allowed, false);
      if (!refused.allowed)
        assert.match(refused.message, new RegExp(`provider "${w.scc}": Forbidden: not usable by user or serviceaccount`));
    });

  test('no broader than each workload needs: without any one of its allowances, its SCC refuses the pod', async () => {
    for (const w of workloads().filter((x) => x.scc !== PODVM_IMAGE_SCC)) {
      const scc = oscSCCs().find((s) => s.metadata.name === w.scc);
      assert.ok(scc);
      const narrower: [string, Partial<SecurityContextConstraints>][] = [
        ...(scc.allowPrivilegedContainer
          ? [['allowPrivilegedContainer', { allowPrivilegedContainer: false }] as [string, Partial<SecurityContextConstraints>]]
          : []),
        ['allowHostDirVolumePlugin', { allowHostDirVolumePlugin: false }],
        // Each volume type its pod uses, taken away alone.
        ...volumeTypes(w.template).map(
          (v) =>
            [`volumes without ${v}`, { volumes: (scc.volumes ?? []).filter((x) => x !== v) }] as [
              string,
              Partial<SecurityContextConstraints>,
            ],
        ),
        ['runAsUser', { runAsUser: { type: 'MustRunAsNonRoot' } }],
        ...(scc.allowHostNetwork
          ? [['allowHostNetwork', { allowHostNetwork: false }] as [string, Partial<SecurityContextConstraints>]]
          : []),
      ];
      for (const [what, change] of narrower) {
        const v = await admit(podOf(w.template), true, [...defaultSCCs(), { ...scc, ...change }]);
        // MustRunAsNonRoot admits a pod that sets no user by marking it non-root: kata-monitor and the
        // adaptor then could not start, so the check is that admission had to change them.
        if (what === 'runAsUser' && v.allowed) assert.equal(v.pod.spec.containers[0]?.securityContext?.runAsNonRoot, true, w.name);
        else assert.equal(v.allowed, false, `${w.name} admitted without ${what}`);
      }
      for (const off of ['allowHostPID', 'allowHostIPC', 'allowHostPorts'] as const) assert.equal(scc[off], false, `${w.scc} ${off}`);
      // kata-deploy has a scratch emptyDir and its API token, and is the one that needs no privileged container;
      // the adaptor mounts a projected token with short-lived credentials, and on Google Cloud the Secret
      // holding the configuration that names it (tested below, as the default template has neither).
      const volumes = { [KATA_DEPLOY_SCC]: ['emptyDir', 'hostPath', 'projected'], [CAA_SCC]: ['hostPath', 'projected', 'secret'] }[w.scc];
      assert.deepEqual(scc.volumes, volumes ?? ['hostPath']);
      assert.equal(scc.allowPrivilegedContainer, w.scc !== KATA_DEPLOY_SCC);
      assert.equal(scc.readOnlyRootFilesystem, true);
    }
  });

  test("the adaptor with the cluster's short-lived AWS credentials (ccoctl, STS): its projected token is admitted, nothing else is", async () => {
    const sts = desiredDaemonSet({
      namespace: NS,
      image: 'caa:1',
      configHash: 'h',
      placement: { nodeSelector: { kata: '' }, tolerations: [] },
      owner,
      credentials: credentialsWiring({ kind: 'sts', roleArn: 'arn:aws:iam::123456789012:role/r' }, 'peer-pods-secret'),
    });
    const pod = podOf(sts.spec.template as Template);
    assert.ok(pod.spec.volumes?.some((v) => 'projected' in v));
    const v = await admit(pod, true);
    assert.ok(v.allowed, v.allowed ? '' : v.message);
    assert.equal(v.scc, CAA_SCC);
    const hostPathOnly = oscSCCs().map((s) => (s.metadata.name === CAA_SCC ? { ...s, volumes: ['hostPath'] } : s));
    const refused = await admit(pod, true, [...defaultSCCs(), ...hostPathOnly]);
    assert.equal(refused.allowed, false);
  });

  test("the adaptor with Google Cloud's workload identity (ccoctl): its configuration's Secret volume and token are admitted, each needed", async () => {
    const wif = desiredDaemonSet({
      namespace: NS,
      image: 'caa:1',
      configHash: 'h',
      placement: { nodeSelector: { kata: '' }, tolerations: [] },
      owner,
      credentials: credentialsWiring({ kind: 'sts', cloud: 'gcp', tokenPath: '/var/run/secrets/openshift/serviceaccount/token' }, 'x'),
    });
    const pod = podOf(wif.spec.template as Template);
    assert.ok(pod.spec.volumes?.some((v) => 'secret' in v));
    const v = await admit(pod, true);
    assert.ok(v.allowed, v.allowed ? '' : v.message);
    assert.equal(v.scc, CAA_SCC);
    for (const without of ['secret', 'projected']) {
      const narrower = oscSCCs().map((s) => (s.metadata.name === CAA_SCC ? { ...s, volumes: s.volumes?.filter((x) => x !== without) } : s));
      assert.equal((await admit(pod, true, [...defaultSCCs(), ...narrower])).allowed, false, `admitted without ${without}`);
    }
  });

  test("must-gather's node log pods, made by the administrator, are pinned to privileged and admitted by it", async () => {
    const p = nodeLogPod('worker-0', 'osc-must-gather-x', 'ubi:9') as unknown as AdmittedPod;
    assert.equal(p.metadata.annotations?.[REQUIRED_SCC_ANNOTATION], 'privileged');
    const admin: UserInfo = { username: 'kube:admin', groups: ['system:cluster-admins', 'system:authenticated'] };
    const v = await admitPod({
      pod: { ...p, spec: { ...p.spec, serviceAccountName: 'default' } },
      namespace: 'osc-must-gather-x',
      namespaceAnnotations: nsAnnotations,
      sccs: defaultSCCs(),
      user: admin,
      authorize: rbac(false),
    });
    assert.ok(v.allowed, v.allowed ? '' : v.message);
    assert.equal(v.scc, 'privileged');
  });

  test("the operator's Deployment is admitted under restricted-v2 (no fixed user outside the namespace's range)", async () => {
    const dep = (await manifests({ distribution: 'openshift' })).find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { template: Template };
    };
    const pod = podOf(dep.spec.template);
    const v = await admit(pod, true);
    assert.ok(v.allowed, v.allowed ? '' : v.message);
    assert.equal(v.scc, 'restricted-v2');
    assert.equal(v.pod.spec.containers[0]?.securityContext?.runAsUser, 1000700000);
  });

  test('the manifests: use grants pinned by resourceNames to one ServiceAccount each, in the operator namespace, nothing cluster-wide', async () => {
    const all = await manifests({ distribution: 'openshift' });
    type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };
    const sccRules = all.flatMap((o) =>
      ((o as unknown as { rules?: Rule[] }).rules ?? [])
        .filter((r) => r.resources?.includes('securitycontextconstraints'))
        .map((r) => ({ o, r })),
    );
    assert.deepEqual(
      sccRules.map(({ o, r }) => [o.kind, o.metadata.namespace, r.verbs, r.resourceNames]),
      SCC_GRANTS.map((g) => ['Role', NS, ['use'], [g.scc]]),
    );
    for (const g of SCC_GRANTS) {
      const bindings = all.filter(
        (o) => o.kind === 'RoleBinding' && (o as unknown as { roleRef: { name: string } }).roleRef.name === `use-scc-${g.scc}`,
      );
      assert.equal(bindings.length, 1);
      assert.deepEqual((bindings[0] as unknown as { subjects: unknown[] }).subjects, [
        { kind: 'ServiceAccount', name: g.serviceAccount, namespace: NS },
      ]);
    }
    assert.ok(!all.some((o) => o.kind === 'ClusterRoleBinding' && JSON.stringify(o).includes('scc')), 'no cluster-wide SCC grant');
    assert.deepEqual(
      all.filter((o) => o.kind === 'SecurityContextConstraints').map((o) => o.metadata.name),
      [CAA_SCC, MONITOR_SCC, KATA_DEPLOY_SCC],
    );
    const operatorRole = all.filter(
      (o) =>
        (o.kind === 'ClusterRole' || o.kind === 'Role') && ([NAMES.clusterRole, NAMES.role] as string[]).includes(o.metadata.name ?? ''),
    );
    assert.ok(!JSON.stringify(operatorRole).includes('securitycontextconstraints'), 'the operator itself needs no SCC');
    for (const s of oscSCCs()) assert.deepEqual([s.users, s.groups], [[], []], `${s.metadata.name}: granted by RBAC only`);
    assert.ok(!(await manifests({ distribution: 'kubernetes' })).some((o) => o.kind === 'SecurityContextConstraints'));
  });
});
