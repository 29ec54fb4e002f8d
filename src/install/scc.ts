/**
 * What OpenShift's SCC admission requires of osc's privileged workloads, shipped with the install
 * (`osc install`, config/, the Helm chart). Each SCC allows exactly what its one workload does
 * (docs/openshift-security.md says what and why), and its `use` is granted by a Role in the operator's
 * namespace, pinned by resourceNames, to that workload's ServiceAccount alone. An OLM bundle cannot carry
 * SCCs: there the operator keeps them itself (`osc run --ensure-sccs`, src/controllers/scc), with the
 * rules below and never a `use` grant of its own.
 */

import { objectName } from '../api/meta.ts';
import { MONITOR_SERVICE_ACCOUNT } from '../api/names.ts';
import {
  CAA_SCC,
  CAA_SERVICE_ACCOUNT,
  KATA_DEPLOY_SCC,
  MONITOR_SCC,
  PODVM_IMAGE_SERVICE_ACCOUNT,
  type SecurityContextConstraints,
} from '../api/scc.ts';
import type { KubeObject } from '../kube/types.ts';
import { INSTALLER_NAME } from '../platform/kubernetes/katadeploy.ts';
import type { PolicyRule } from './rbac.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';
const labels = {
  'app.kubernetes.io/name': 'osc',
  'app.kubernetes.io/component': 'security',
  'app.kubernetes.io/part-of': 'openshift-sandboxed-containers',
};

/**
 * A privileged pod on the host's paths, as root, nothing else: no host PID or IPC, no host ports, no
 * volume type but hostPath (and those listed in `volumes`), a read-only root file system. Privileged
 * containers need privilege escalation allowed (the API refuses the two together otherwise) and run with
 * every capability, so the SCC lists none.
 */
function privilegedOnHostPaths(
  name: string,
  description: string,
  hostNetwork: boolean,
  volumes: string[] = [],
): SecurityContextConstraints {
  return {
    apiVersion: 'security.openshift.io/v1',
    kind: 'SecurityContextConstraints',
    metadata: { name, labels, annotations: { 'kubernetes.io/description': description } },
    priority: null,
    allowPrivilegedContainer: true,
    allowPrivilegeEscalation: true,
    allowHostNetwork: hostNetwork,
    allowHostPorts: false,
    allowHostPID: false,
    allowHostIPC: false,
    allowHostDirVolumePlugin: true,
    volumes: ['hostPath', ...volumes],
    allowedCapabilities: null,
    defaultAddCapabilities: null,
    requiredDropCapabilities: null,
    readOnlyRootFilesystem: true,
    runAsUser: { type: 'RunAsAny' },
    seLinuxContext: { type: 'RunAsAny' },
    fsGroup: { type: 'RunAsAny' },
    supplementalGroups: { type: 'RunAsAny' },
    seccompProfiles: ['runtime/default'],
    users: [],
    groups: [],
  };
}

/**
 * kata-deploy (`deploymentMode: DaemonSet`): an unprivileged container running as root (the image's user)
 * on host paths, with an emptyDir for its scratch space and its ServiceAccount token (a projected volume:
 * it labels its node through the API); nothing else. Its SELinux context is its own to choose, as on a
 * privileged SCC: it writes CRI-O's configuration on the host.
 */
function kataDeploySCC(): SecurityContextConstraints {
  return {
    ...privilegedOnHostPaths(
      KATA_DEPLOY_SCC,
      "osc's kata-deploy installer (deploymentMode DaemonSet): an unprivileged container running as root that installs kata under /opt/kata, writes CRI-O's drop-in under /etc/crio and restarts CRI-O through systemd's private socket, with those host paths, an emptyDir and its API token.",
      false,
    ),
    allowPrivilegedContainer: false,
    allowPrivilegeEscalation: false,
    volumes: ['emptyDir', 'hostPath', 'projected'],
  };
}

export function oscSCCs(): SecurityContextConstraints[] {
  return [
    privilegedOnHostPaths(
      CAA_SCC,
      "osc's cloud-api-adaptor: a privileged container on the host network (it plumbs peer pods' networking into the node's network namespaces) with the host paths /run/peerpod and /run/netns, and with short-lived cloud credentials a projected ServiceAccount token and, on Google Cloud, the Secret holding the credential configuration that names it.",
      true,
      // With short-lived credentials (ccoctl, Manual mode) the adaptor exchanges a projected ServiceAccount
      // token for the cloud's own; Google's SDK reads its external_account configuration from a file, which
      // only a Secret volume puts in the container.
      ['projected', 'secret'],
    ),
    privilegedOnHostPaths(
      MONITOR_SCC,
      "osc's kata monitor: a privileged container reading the container runtime's socket and the sandboxes' state under /run/vc/sbs on the host.",
      false,
    ),
    kataDeploySCC(),
  ];
}

/**
 * The ServiceAccounts osc's install makes for its workloads (the kata monitor's is made by the operator,
 * kata-deploy's ships with its RBAC: src/install/katadeploy-rbac.ts).
 */
export const INSTALLED_SERVICE_ACCOUNTS = [CAA_SERVICE_ACCOUNT, PODVM_IMAGE_SERVICE_ACCOUNT];

/** Which ServiceAccount may use which of osc's SCCs. */
export const SCC_GRANTS: { scc: string; serviceAccount: string }[] = [
  { scc: CAA_SCC, serviceAccount: CAA_SERVICE_ACCOUNT },
  { scc: MONITOR_SCC, serviceAccount: MONITOR_SERVICE_ACCOUNT },
  { scc: KATA_DEPLOY_SCC, serviceAccount: INSTALLER_NAME },
];

/** The SCCs, the workloads' ServiceAccounts and the pinned `use` grants, for the operator's namespace. */
export function oscSecurityIdentity(namespace: string): KubeObject[] {
  const accounts = INSTALLED_SERVICE_ACCOUNTS.map((name) => ({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace, labels },
  }));
  const grants = SCC_GRANTS.flatMap(({ scc, serviceAccount }) => [
    {
      apiVersion: RBAC,
      kind: 'Role',
      metadata: { name: `use-scc-${scc}`, namespace, labels },
      rules: [{ apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: [scc], verbs: ['use'] }],
    },
    {
      apiVersion: RBAC,
      kind: 'RoleBinding',
      metadata: { name: `use-scc-${scc}`, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `use-scc-${scc}` },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
    },
  ]);
  return [...oscSCCs(), ...accounts, ...grants] as KubeObject[];
}

/**
 * What an operator that keeps osc's SCCs itself may do with SCCs: create (a verb Kubernetes cannot pin to
 * a name), and read, watch and server-side apply osc's own by name. No `use`, no delete, no other SCC.
 */
export function sccKeeperRules(): PolicyRule[] {
  const group = ['security.openshift.io'];
  const resources = ['securitycontextconstraints'];
  return [
    { apiGroups: group, resources, verbs: ['create'] },
    { apiGroups: group, resources, verbs: ['get', 'list', 'watch', 'patch'], resourceNames: oscSCCs().map((s) => objectName(s)) },
  ];
}

/** The operator's flag that makes it keep osc's SCCs (the OLM form). */
export const ENSURE_SCCS_FLAG = '--ensure-sccs';
