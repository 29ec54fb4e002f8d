import type { CustomResourceDefinition } from '../../kube/resources.ts';

// The SecurityContextConstraints API for the dev cluster's plain kube-apiserver: cluster-scoped, the
// fields at the top level as on OpenShift, and `kubectl get scc` printing what `oc get scc` prints.

const bool = { type: 'boolean' };
const strings = { type: 'array', items: { type: 'string' }, nullable: true };
const ranges = {
  type: 'array',
  items: { type: 'object', properties: { min: { type: 'integer', format: 'int64' }, max: { type: 'integer', format: 'int64' } } },
};
const strategy = (extra: Record<string, unknown> = {}) => ({ type: 'object', properties: { type: { type: 'string' }, ...extra } });

export function sccCRD(): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'securitycontextconstraints.security.openshift.io', labels: { 'osc.dev/simulated-openshift-api': 'true' } },
    spec: {
      group: 'security.openshift.io',
      scope: 'Cluster',
      names: {
        kind: 'SecurityContextConstraints',
        listKind: 'SecurityContextConstraintsList',
        plural: 'securitycontextconstraints',
        singular: 'securitycontextconstraints',
        shortNames: ['scc'],
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          additionalPrinterColumns: [
            { name: 'Priv', type: 'string', jsonPath: '.allowPrivilegedContainer' },
            { name: 'Caps', type: 'string', jsonPath: '.allowedCapabilities' },
            { name: 'SELinux', type: 'string', jsonPath: '.seLinuxContext.type' },
            { name: 'RunAsUser', type: 'string', jsonPath: '.runAsUser.type' },
            { name: 'FSGroup', type: 'string', jsonPath: '.fsGroup.type' },
            { name: 'SupGroup', type: 'string', jsonPath: '.supplementalGroups.type' },
            { name: 'Priority', type: 'string', jsonPath: '.priority' },
            { name: 'ReadOnlyRootFS', type: 'string', jsonPath: '.readOnlyRootFilesystem' },
            { name: 'Volumes', type: 'string', jsonPath: '.volumes' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              'x-kubernetes-preserve-unknown-fields': true,
              required: [
                'allowHostDirVolumePlugin',
                'allowHostIPC',
                'allowHostNetwork',
                'allowHostPID',
                'allowHostPorts',
                'allowPrivilegedContainer',
                'readOnlyRootFilesystem',
              ],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                priority: { type: 'integer', format: 'int32', nullable: true },
                allowPrivilegedContainer: bool,
                allowHostNetwork: bool,
                allowHostPorts: bool,
                allowHostPID: bool,
                allowHostIPC: bool,
                allowHostDirVolumePlugin: bool,
                allowPrivilegeEscalation: { type: 'boolean', nullable: true },
                defaultAllowPrivilegeEscalation: { type: 'boolean', nullable: true },
                readOnlyRootFilesystem: bool,
                volumes: strings,
                allowedCapabilities: strings,
                requiredDropCapabilities: strings,
                defaultAddCapabilities: strings,
                allowedUnsafeSysctls: strings,
                forbiddenSysctls: strings,
                seccompProfiles: strings,
                users: strings,
                groups: strings,
                runAsUser: strategy({
                  uid: { type: 'integer', format: 'int64' },
                  uidRangeMin: { type: 'integer', format: 'int64' },
                  uidRangeMax: { type: 'integer', format: 'int64' },
                }),
                seLinuxContext: strategy({ seLinuxOptions: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }),
                fsGroup: strategy({ ranges }),
                supplementalGroups: strategy({ ranges }),
              },
            },
          },
        },
      ],
    },
  } as CustomResourceDefinition;
}
