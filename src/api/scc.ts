import type { KubeObject, ResourceType } from './meta.ts';

/**
 * OpenShift's SecurityContextConstraints (`security.openshift.io/v1`, cluster-scoped): what a pod may ask
 * for (privileged containers, host namespaces, volume types, capabilities, user and group IDs) and who may
 * use it. Unlike most kinds its fields sit at the top level of the object, not under `spec`.
 */
export interface SecurityContextConstraints extends KubeObject {
  priority?: number | null;
  allowPrivilegedContainer?: boolean;
  allowHostNetwork?: boolean;
  allowHostPorts?: boolean;
  allowHostPID?: boolean;
  allowHostIPC?: boolean;
  allowHostDirVolumePlugin?: boolean;
  /** Volume types by their field name in a pod (`hostPath`, `secret`, ...); `*` allows all, `none` none. */
  volumes?: string[] | null;
  allowedCapabilities?: string[] | null;
  requiredDropCapabilities?: string[] | null;
  defaultAddCapabilities?: string[] | null;
  runAsUser?: {
    type: 'MustRunAs' | 'MustRunAsRange' | 'MustRunAsNonRoot' | 'RunAsAny';
    uid?: number;
    uidRangeMin?: number;
    uidRangeMax?: number;
  };
  seLinuxContext?: { type: 'MustRunAs' | 'RunAsAny'; seLinuxOptions?: { user?: string; role?: string; type?: string; level?: string } };
  fsGroup?: { type?: 'MustRunAs' | 'RunAsAny'; ranges?: IDRange[] };
  supplementalGroups?: { type?: 'MustRunAs' | 'RunAsAny'; ranges?: IDRange[] };
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean | null;
  defaultAllowPrivilegeEscalation?: boolean | null;
  /** `runtime/default`, `unconfined`, `localhost/<path>` or `*`. */
  seccompProfiles?: string[] | null;
  users?: string[] | null;
  groups?: string[] | null;
}

export interface IDRange {
  min: number;
  max: number;
}

export const SECURITY_GROUP = 'security.openshift.io';

export const SecurityContextConstraintsType: ResourceType<SecurityContextConstraints> = {
  group: SECURITY_GROUP,
  version: 'v1',
  plural: 'securitycontextconstraints',
  kind: 'SecurityContextConstraints',
  namespaced: false,
};

/** The SCC that admitted a pod, written by SCC admission. */
export const VALIDATED_SCC_ANNOTATION = 'openshift.io/scc';
/** A pod that names its SCC here is admitted only under that one (never a broader one an administrator adds). */
export const REQUIRED_SCC_ANNOTATION = 'openshift.io/required-scc';
/** Whether the user or the pod's ServiceAccount could use the admitting SCC. */
export const VALIDATED_SCC_SUBJECT_ANNOTATION = 'security.openshift.io/validated-scc-subject-type';

/** What OpenShift's namespace allocation controller writes on every namespace (the restricted SCCs read them). */
export const UID_RANGE_ANNOTATION = 'openshift.io/sa.scc.uid-range';
export const MCS_ANNOTATION = 'openshift.io/sa.scc.mcs';
export const SUPPLEMENTAL_GROUPS_ANNOTATION = 'openshift.io/sa.scc.supplemental-groups';

/** The prefix of SCC admission's refusal, as OpenShift words it. */
export const SCC_REFUSAL = 'unable to validate against any security context constraint';

// osc's own workloads on OpenShift: each privileged one runs under a ServiceAccount of its own, allowed
// exactly one SCC of osc's by a `use` grant pinned with resourceNames, and names that SCC on its pods.

/** The cloud-api-adaptor DaemonSet's ServiceAccount. */
export const CAA_SERVICE_ACCOUNT = 'osc-caa';
/** The pod VM image jobs' ServiceAccount (they run under restricted-v2). */
export const PODVM_IMAGE_SERVICE_ACCOUNT = 'osc-podvm-image';
/** The cloud-api-adaptor's SCC: privileged, the host network, host paths. */
export const CAA_SCC = 'osc-cloud-api-adaptor';
/** The kata monitor's SCC: privileged, host paths (the runtime's socket and sandbox state). */
export const MONITOR_SCC = 'osc-kata-monitor';
/**
 * kata-deploy's SCC, for `deploymentMode: DaemonSet` on OpenShift: not privileged, but root on the host's
 * paths (it writes the kata artefacts and CRI-O's drop-in there and restarts CRI-O through systemd).
 */
export const KATA_DEPLOY_SCC = 'osc-kata-deploy';
/** The SCC the pod VM image jobs pin: OpenShift's most restrictive, which every ServiceAccount may use. */
export const PODVM_IMAGE_SCC = 'restricted-v2';
