import type { AnyProviderSpec, CredentialsMode, CredentialsRequest } from '../../api/cloudcredential.ts';
import type { CaaUpdateStrategy } from '../../api/featuregates.ts';
import type { KataConfig } from '../../api/kataconfig.ts';
import type { TLSSecurityProfile } from '../../api/openshift.ts';
import type { PeerPodConfig } from '../../api/peerpodconfig.ts';
import type { ConfigMap, DaemonSet, Job, Node, Secret } from '../../kube/resources.ts';
import type { CredentialsWiring } from '../../peerpods/credentials.ts';
import type { KataNodePlacement, PeerPodsImages } from './desired.ts';

/** What the peer pods controller knows when it plans a pass: its caches, read once (observe.ts), and its options. */
export interface PeerPodsObserved {
  /** The key reconciled: a KataConfig's name ('' when there is none at all). */
  key: string;
  kataConfigs: readonly KataConfig[];
  /** Whether the platform runs peer pods at all. */
  supportsPeerPods: boolean;
  /** Where peer pods run: the platform's kata nodes. */
  placement: KataNodePlacement;
  nodes: readonly Node[];
  configMap?: ConfigMap;
  secret?: Secret;
  peerPodConfig?: PeerPodConfig;
  daemonSet?: DaemonSet;
  creationJob?: Job;
  deletionJob?: Job;
  /** Pods (namespace/name) that use kata-remote. */
  remotePods: readonly string[];
  /**
   * peer-pods-cm as cached predates a write of ours to it that the cache has not shown yet: nothing that
   * depends on its PODVM_AMI_ID is decided from it (a deletion job for an image already deleted, say).
   */
  configMapAwaited: boolean;
  /**
   * peer-pods-cm was read from the API server for this plan, not from the cache (the plan asked for it:
   * `readConfigMapLive`). What it lacks then, the cluster lacks.
   */
  configMapLive?: boolean;
  /**
   * An image job this process started that the job cache does not show yet (its watch may be down for a
   * while): the plan must not read the job's absence as "no job". Otherwise a removal finishes while the
   * deletion job it just started runs on, and the finished job stays behind.
   */
  jobsAwaited: { creation: boolean; deletion: boolean };
  /**
   * The adaptor DaemonSet's update strategy: the feature gate caaUpdateStrategy, or, while its value cannot
   * be read, the strategy the DaemonSet has (a typo must not turn OnDelete into a rolling restart).
   */
  caaUpdateStrategy: CaaUpdateStrategy;
  /** The cluster's TLS security profile (the APIServer named cluster), where the cluster has one. */
  tlsProfile?: TLSSecurityProfile;
  /** Where the cluster's Cloud Credential Operator runs (OpenShift): what osc reads of it. */
  cloudCredentials?: ObservedCloudCredentials;
  /**
   * How the pods get their credentials, once the plan has chosen (plan.ts sets it, with `secret` then the
   * Secret chosen): the image jobs are made with it.
   */
  credentialsWiring?: CredentialsWiring;
  options: PeerPodsPlanOptions;
  /** The UID of the cluster's kube-system namespace (the cluster's tag on its pod VMs), once read. */
  clusterUID?: string;
}

export interface ObservedCloudCredentials {
  /** osc's CredentialsRequest for peer pods on the cloud peer-pods-cm names. */
  request?: CredentialsRequest<AnyProviderSpec>;
  /** The leaked pod VM collector's own request on that cloud (made in Manual mode only). */
  collectorRequest?: CredentialsRequest<AnyProviderSpec>;
  /** osc's requests for other clouds (CLOUD_PROVIDER changed): deleted. */
  others?: readonly CredentialsRequest<AnyProviderSpec>[];
  /** The Secret it names (cco-secret), written by the CCO or ccoctl. */
  secret?: Secret;
  /** The cluster's CloudCredential spec.credentialsMode. */
  mode: CredentialsMode;
}

export interface PeerPodsPlanOptions {
  /** Where peer-pods-cm, peer-pods-secret, the PeerPodConfig, the DaemonSet and the jobs live. */
  namespace: string;
  images: PeerPodsImages;
  /** Retries of a pod VM image job before it is Failed (and reported, not retried). */
  imageJobBackoffLimit: number;
  /** How often a removal waiting for kata-remote pods to go looks again (pod deletions also wake it). */
  blockedRecheckMs: number;
}
