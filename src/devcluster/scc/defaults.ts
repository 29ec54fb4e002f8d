import type { SecurityContextConstraints } from '../../api/scc.ts';
import type { KubeObject } from '../../kube/types.ts';

// OpenShift 4's default SecurityContextConstraints, as the kube-apiserver operator creates them on every
// cluster: the same field values and priorities, users and groups. Only anyuid has a priority (10); the
// rest are ordered by how much they allow.

type Fields = Omit<SecurityContextConstraints, 'metadata' | 'apiVersion' | 'kind'>;

const closed: Fields = {
  allowHostDirVolumePlugin: false,
  allowHostIPC: false,
  allowHostNetwork: false,
  allowHostPID: false,
  allowHostPorts: false,
  allowPrivilegeEscalation: true,
  allowPrivilegedContainer: false,
  allowedCapabilities: null,
  defaultAddCapabilities: null,
  fsGroup: { type: 'MustRunAs' },
  groups: [],
  priority: null,
  readOnlyRootFilesystem: false,
  requiredDropCapabilities: ['KILL', 'MKNOD', 'SETUID', 'SETGID'],
  runAsUser: { type: 'MustRunAsRange' },
  seLinuxContext: { type: 'MustRunAs' },
  supplementalGroups: { type: 'RunAsAny' },
  users: [],
};

const VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
/** The v2 SCCs drop every capability, forbid privilege escalation and default the seccomp profile. */
const v2: Fields = {
  allowPrivilegeEscalation: false,
  allowedCapabilities: ['NET_BIND_SERVICE'],
  requiredDropCapabilities: ['ALL'],
  seccompProfiles: ['runtime/default'],
};

const scc = (name: string, description: string, fields: Fields): SecurityContextConstraints => ({
  apiVersion: 'security.openshift.io/v1',
  kind: 'SecurityContextConstraints',
  metadata: { name, annotations: { 'kubernetes.io/description': description } },
  ...closed,
  volumes: VOLUMES,
  ...fields,
});

export function defaultSCCs(): SecurityContextConstraints[] {
  return [
    scc(
      'restricted-v2',
      'restricted-v2 denies access to all host features and requires pods to be run with a UID, and SELinux context that are allocated to the namespace. This is the most restrictive SCC and it is used by default for authenticated users.',
      { ...v2 },
    ),
    scc(
      'restricted',
      'restricted denies access to all host features and requires pods to be run with a UID, and SELinux context that are allocated to the namespace.',
      {},
    ),
    scc('nonroot-v2', 'nonroot-v2 allows running with any non-root UID; it drops all capabilities and forbids privilege escalation.', {
      ...v2,
      fsGroup: { type: 'RunAsAny' },
      runAsUser: { type: 'MustRunAsNonRoot' },
    }),
    scc('nonroot', 'nonroot provides all features of the restricted SCC but allows users to run with any non-root UID.', {
      fsGroup: { type: 'RunAsAny' },
      runAsUser: { type: 'MustRunAsNonRoot' },
    }),
    scc(
      'hostnetwork-v2',
      'hostnetwork-v2 allows host networking and host ports; it drops all capabilities and forbids privilege escalation.',
      {
        ...v2,
        allowHostNetwork: true,
        allowHostPorts: true,
        supplementalGroups: { type: 'MustRunAs' },
      },
    ),
    scc(
      'hostnetwork',
      'hostnetwork allows using host networking and host ports but still requires pods to be run with a UID and SELinux context that are allocated to the namespace.',
      { allowHostNetwork: true, allowHostPorts: true, supplementalGroups: { type: 'MustRunAs' } },
    ),
    scc(
      'hostmount-anyuid',
      'hostmount-anyuid provides all the features of the restricted SCC but allows host mounts and any UID by a pod.',
      {
        allowHostDirVolumePlugin: true,
        fsGroup: { type: 'RunAsAny' },
        requiredDropCapabilities: ['MKNOD'],
        runAsUser: { type: 'RunAsAny' },
        users: ['system:serviceaccount:openshift-infra:pv-recycler-controller'],
        volumes: [...VOLUMES.slice(0, 5), 'hostPath', 'nfs', ...VOLUMES.slice(5)],
      },
    ),
    scc(
      'hostaccess',
      'hostaccess allows access to all host namespaces but still requires pods to be run with a UID and SELinux context that are allocated to the namespace.',
      {
        allowHostDirVolumePlugin: true,
        allowHostIPC: true,
        allowHostNetwork: true,
        allowHostPID: true,
        allowHostPorts: true,
        volumes: [...VOLUMES.slice(0, 5), 'hostPath', ...VOLUMES.slice(5)],
      },
    ),
    scc('anyuid', 'anyuid provides all features of the restricted SCC but allows users to run with any UID and any GID.', {
      fsGroup: { type: 'RunAsAny' },
      groups: ['system:cluster-admins'],
      priority: 10,
      requiredDropCapabilities: ['MKNOD'],
      runAsUser: { type: 'RunAsAny' },
    }),
    scc(
      'privileged',
      'privileged allows access to all privileged and host features and the ability to run as any user, any group, any fsGroup, and with any SELinux context.',
      {
        allowHostDirVolumePlugin: true,
        allowHostIPC: true,
        allowHostNetwork: true,
        allowHostPID: true,
        allowHostPorts: true,
        allowPrivilegedContainer: true,
        allowedCapabilities: ['*'],
        fsGroup: { type: 'RunAsAny' },
        groups: ['system:cluster-admins', 'system:nodes', 'system:masters'],
        requiredDropCapabilities: null,
        runAsUser: { type: 'RunAsAny' },
        seLinuxContext: { type: 'RunAsAny' },
        seccompProfiles: ['*'],
        users: ['system:admin', 'system:serviceaccount:openshift-infra:build-controller'],
        volumes: ['*'],
      },
    ),
  ];
}

/**
 * The `system:openshift:scc:<name>` ClusterRoles (`use` on one SCC, by resourceNames) OpenShift ships for
 * every default SCC, and the one binding it ships: restricted-v2 for every authenticated user. That binding
 * is why a pod of any ServiceAccount gets restricted-v2 and nothing broader.
 */
export function defaultSCCRoles(): KubeObject[] {
  const rbac = 'rbac.authorization.k8s.io/v1';
  const roles = defaultSCCs().map(
    (s) =>
      ({
        apiVersion: rbac,
        kind: 'ClusterRole',
        metadata: { name: `system:openshift:scc:${s.metadata.name}` },
        rules: [
          {
            apiGroups: ['security.openshift.io'],
            resources: ['securitycontextconstraints'],
            resourceNames: [s.metadata.name],
            verbs: ['use'],
          },
        ],
      }) as KubeObject,
  );
  const binding = {
    apiVersion: rbac,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'system:openshift:scc:restricted-v2' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:openshift:scc:restricted-v2' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
  } as KubeObject;
  return [...roles, binding];
}
