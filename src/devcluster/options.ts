import type { Logger } from 'pino';
import type { CredentialsMode } from '../api/cloudcredential.ts';
import type { CustomResourceDefinition } from '../kube/resources.ts';
import type { DevHardware } from './hardware.ts';
import type { InstallerTiming } from './katadeploy/index.ts';
import type { Distribution } from './nodes.ts';

/** What a dev cluster is made with (DevCluster.start): its platform, nodes, simulators' timings and failures. */
export interface DevClusterOptions {
  /**
   * `openshift` (default): the OpenShift API types, the simulated MCO, NFD and cloud. `kubernetes`: a plain
   * kubeadm-like cluster (no OpenShift API, containerd nodes) with kata-deploy's host side simulated.
   */
  distribution?: Distribution;
  /**
   * How long the simulated kata-deploy installs and cleans up (katadeploy/): every pod of the kubernetes
   * distribution running its image, and on openshift those of osc's installer (deploymentMode DaemonSet).
   */
  kataDeploy?: Partial<InstallerTiming> & { repositories?: readonly string[] };
  /**
   * Seed kata-deploy's ServiceAccount and RBAC, as `osc install` ships them (both distributions: OpenShift's
   * deploymentMode DaemonSet runs it too; default true: an operator run from a checkout has no install).
   * False leaves that to the install being tested.
   */
  kataDeployIdentity?: boolean;
  /** Worker nodes `worker-0`, `worker-1`, ...; default 2 (0 on compact clusters). */
  workers?: number;
  /** Control plane nodes `master-0`, ...; default 1 (3 on compact clusters). */
  masters?: number;
  /** Masters only, and they run workloads (they carry the worker role too); the worker pool has no machines. */
  compact?: boolean;
  /** How long a node is cordoned and NotReady while it reboots into a new machine config; default 2000ms. */
  rebootMs?: number;
  /** How long after a node is handed a new machine config its (simulated) daemon picks it up; default 500ms. */
  pickupDelayMs?: number;
  /** How long a node drain waits before asking again for an eviction a PodDisruptionBudget refused; default 5000ms. */
  drainRetryMs?: number;
  /** Which nodes Node Feature Discovery finds able to run VMs (and labels for kata); default 'all'. */
  virtualizationCapable?: 'all' | 'none' | string[];
  log?: Logger;
  /** Where the control plane keeps its data; a temporary directory otherwise. */
  dataDir?: string;
  /** Where the control plane components write their logs; the data directory otherwise. */
  logDir?: string;
  /** How long a node may miss its heartbeat (Lease) before it is marked Unknown; default 40s. */
  nodeMonitorGracePeriodSeconds?: number;
  /** The node Leases' duration (renewed at a quarter of it); default 40s, a kubelet's. */
  nodeLeaseDurationSeconds?: number;
  /** More CRDs to serve (osc's own are always served). */
  extraCRDs?: CustomResourceDefinition[];
  /** Extra kube-apiserver flags. */
  apiserverArgs?: string[];
  /**
   * A jq query that is `true` for pods whose process the caller plays itself (e.g. a test running the
   * operator's replicas as processes): kwok starts them Running but not Ready and removes a deleted one only
   * once its phase is Succeeded or Failed; the caller reports readiness and exit, as a kubelet would.
   */
  callerPlayedPods?: string;
  /** The Infrastructure's platform type; default 'None' (bare metal without a platform integration). */
  platform?: 'None' | 'BareMetal' | 'AWS' | 'Azure' | 'GCP';
  /** The region reported for platform AWS; default us-east-2. */
  awsRegion?: string;
  /** How long the simulated cloud takes to build or delete a pod VM image; default 300ms. */
  podvmImageJobMs?: number;
  /**
   * openshift distribution: SecurityContextConstraints admission for every pod, as on OpenShift (default
   * true; src/devcluster/scc/). False leaves pods to the API server's own admission only.
   */
  sccAdmission?: boolean;
  /**
   * openshift distribution: seed osc's own SCCs, its workloads' ServiceAccounts and their `use` grants, as
   * `osc install` ships them (default true: an operator run from a checkout has no install). False leaves
   * that to the install being tested.
   */
  oscSecurityIdentity?: boolean;
  /** TEE and GPU nodes, and the OpenShift release reported (hardware.ts). */
  hardware?: DevHardware;
  /**
   * Platform AWS: IAM users an administrator made (full rights) whose keys the simulated account accepts
   * beside the root credentials and what the Cloud Credential Operator mints.
   */
  awsUsers?: { accessKeyId: string; secretAccessKey: string }[];
  /** The CloudCredential's spec.credentialsMode at start; default '' (mint on AWS). */
  credentialsMode?: CredentialsMode;
  /** false: an OpenShift without the CloudCredential capability (no CCO API, no CCO); default true. */
  cloudCredentialOperator?: boolean;
}
