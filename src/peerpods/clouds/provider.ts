import type { AnyProviderSpec } from '../../api/cloudcredential.ts';
/**
 * The provider seam of peer pods: everything osc knows of one cloud, in that cloud's folder
 * (src/peerpods/clouds/<cloud>/). The generic checks of peer-pods-cm (config.ts), the pod webhook's
 * instance choice (instancetypes.ts), the pod VM image jobs and the dev cluster's simulated cloud ask a
 * provider; none of them names a cloud. Adding a cloud is a folder and one line in the registry (index.ts).
 */
export interface Problem {
  /** The ConfigMap or Secret key at fault, or the object's name when the object itself is missing. */
  key: string;
  message: string;
}

export interface InstanceSize {
  vcpus: number;
  memoryMiB: number;
}

export type InstanceTable = Record<string, InstanceSize>;

/** What a provider's own checks get: the ConfigMap's values (those with stray spaces already taken out) and where to report. */
export interface CloudCheckContext {
  /** A key's value; undefined when absent or already reported. */
  value(key: string): string | undefined;
  /**
   * A required key: reports it missing, empty or left as the example's placeholder (with `howToFind`), or
   * failing `check` (which answers why, ending with the fix). Answers the value when it is good.
   */
  required(key: string, howToFind: string, check: (v: string) => string | undefined): string | undefined;
  /** Parses a comma list (no spaces, no empty items, no duplicates), reporting what is wrong. */
  list(key: string, value: string, what: string, example: string): string[] | undefined;
  problems: Problem[];
  warnings: Problem[];
}

/** The pod VM sizes: the keys that name them, what a name looks like, and the sizes osc knows. */
export interface CloudSizes {
  /** The default size's key, e.g. PODVM_INSTANCE_TYPE or AZURE_INSTANCE_SIZE. */
  defaultKey: string;
  /** The allowed sizes' key (a comma list), e.g. PODVM_INSTANCE_TYPES or AZURE_INSTANCE_SIZES. */
  listKey: string;
  /** The default when defaultKey is not set. */
  defaultSize: string;
  /** What one size is called in messages ("instance type", "VM size", "machine type"). */
  noun: string;
  /** The same, short, where the sentence already says which ("allowed types", "allowed sizes"). */
  short: string;
  /** A size name's shape. */
  pattern: RegExp;
  /** `an AWS instance type name (like t3.medium)`: what a value failing `pattern` is not. */
  shape: string;
  /** A list for messages, e.g. `t3.small,t3.medium,t3.large`. */
  listExample: string;
  /**
   * When the default is not in the list: 'warning' (the adaptor uses the default regardless, as the AWS
   * docs' own example does) or 'problem' (the adaptor refuses to start).
   */
  defaultOutsideList: 'warning' | 'problem';
  /** Sizes osc knows (vCPUs, memory): best fit picks among these only. */
  table: Readonly<InstanceTable>;
  /** Whether a well-shaped name outside the table is worth a warning (the table lists every size there is). */
  warnUnknown: boolean;
}

/** The pod VM image: the key the creation job fills and the deletion job empties. */
export interface CloudImage {
  /** PODVM_AMI_ID, AZURE_IMAGE_ID, PODVM_IMAGE_NAME. */
  key: string;
  /** The environment variable naming the image a deletion job deletes. */
  deletionEnv: string;
  /** What the creation job is told besides peer-pods-cm and peer-pods-secret (where to put the image). */
  creationEnv: Readonly<Record<string, string>>;
  /** `AMI ID`: what the value is, for messages. */
  what: string;
  /** `AMI`: what the image is called, for "set <key> to an existing <noun>". */
  noun: string;
  /** Why a value is not an image reference of this cloud (ending with what it looks like), or undefined. */
  check(value: string): string | undefined;
  /** A new image's reference, as the cloud would name it (the dev cluster's simulated build). */
  example: string;
}

export interface CloudSecret {
  required: readonly string[];
  optional: readonly string[];
  /** What a required key holds, for "set it to <...>". */
  describe(key: string): string;
  /** The documented command creating the Secret. */
  createCommand: string;
  /** Why a (decoded, non-empty) value is wrong, e.g. a service-account JSON of the wrong shape. */
  checkValue?(key: string, value: string): string | undefined;
}

export interface CloudTags {
  /** How many TAGS the cloud takes besides what the adaptor sets itself. */
  max: number;
  /** What the adaptor sets itself, for the message (`Name` on AWS). */
  besides?: string;
  /** Why a tag key is not allowed here (ending with no fix: the caller adds the format), or undefined. */
  checkKey(key: string): string | undefined;
  /** The largest value, in characters. */
  maxValue: number;
  /**
   * Whether the adaptor's TAGS become tags the cloud's list API filters by, so that osc gives the adaptor
   * the cluster's tag (CLUSTER_UID_TAG) through them and finds the cluster's pod VMs by it (leaked VMs).
   */
  clusterTag?: boolean;
}

/** How one container gets cloud credentials: whole Secrets, single keys, and the volumes that carry files or tokens. */
export interface CredentialsWiring {
  envFrom: { secretRef: { name: string } }[];
  env: Record<string, unknown>[];
  volumes: Record<string, unknown>[];
  volumeMounts: Record<string, unknown>[];
}

/**
 * What the Secret a CredentialsRequest names holds, as this cloud reads it: long-lived keys (minted by the
 * Cloud Credential Operator, or passed through from the cluster's root credentials), short-lived ones (a
 * workload identity set up with ccoctl in Manual mode: the pods trade a projected ServiceAccount token for
 * the cloud's own), or a form the cloud knows that is broken (`why` ends with the fix).
 */
export type IssuedForm =
  | { kind: 'minted' }
  | { kind: 'sts' /** AWS: the role ccoctl made. */; roleArn?: string /** Where the pods' token is read from. */; tokenPath?: string }
  | { kind: 'unusable'; why: string };

/**
 * A cloud's side of the Cloud Credential Operator (docs/cloud-credentials.md): the CredentialsRequest osc
 * makes for peer pods on it, with the narrowest rights its adaptor, image jobs and osc's own cloud client
 * need, and how the Secret the operator (or ccoctl) writes reaches those.
 */
export interface CloudIssuedCredentials {
  /** The request's name (openshift-sandboxed-containers-<cloud>). */
  requestName: string;
  /** The request's providerSpec (AWSProviderSpec, AzureProviderSpec, GCPProviderSpec). */
  providerSpec(): AnyProviderSpec;
  /** The cluster's root credentials the operator works from (`kube-system/aws-creds`). */
  rootSecret: { namespace: string; name: string };
  /** The ccoctl command a Manual-mode administrator runs with the request (`ccoctl aws create-iam-roles`). */
  ccoctl: string;
  /** The forms the Secret may take, for "holds neither <...>". */
  formsInWords: string;
  /** The Secret's form (`read` answers a key's decoded value); undefined when it holds none this cloud knows. */
  form(read: (key: string) => string | undefined): IssuedForm | undefined;
  /** How the adaptor and the image jobs get a usable form from the Secret `secretName`. */
  wiring(form: Exclude<IssuedForm, { kind: 'unusable' }>, secretName: string): CredentialsWiring;
  /** The variables the adaptor then reads (for messages and the adaptor's configuration). */
  adaptorKeys(form: Exclude<IssuedForm, { kind: 'unusable' }>): string[];
  /** The Secret's values under the adaptor's names, for osc's own cloud client (the leaked-VM collector). */
  adaptorValues(form: Exclude<IssuedForm, { kind: 'unusable' }>, read: (key: string) => string | undefined): Record<string, string>;
  /**
   * The leaked pod VM collector's own request (Manual mode: the adaptor's workload identity trusts the
   * adaptor's ServiceAccounts only): the cloud's list and delete of pod VMs, and nothing else.
   */
  collector: {
    /** openshift-sandboxed-containers-<cloud>-podvm-collector */
    requestName: string;
    providerSpec(): AnyProviderSpec;
    /** The actions it grants, for the docs and the tests that prove them minimal. */
    actions: readonly string[];
  };
  /**
   * What the cluster's credentials mode cannot do on this cloud, with the fix (Azure has no Mint mode);
   * undefined when the mode is one the operator serves here.
   */
  modeProblem?(mode: string): string | undefined;
}

export interface CloudProvider<S extends object = object> {
  /** CLOUD_PROVIDER's value: aws, azure, gcp. */
  name: string;
  /** For sentences: AWS, Azure, Google Cloud. */
  title: string;
  /** The OpenShift Infrastructure's status.platformStatus.type for a cluster on this cloud. */
  infrastructureType: string;
  /** The documented peer-pods-cm keys in the example's order, the generic ones included. */
  cmKeys: readonly string[];
  /** Other keys the adaptor reads on this cloud: accepted without comment. */
  otherCmKeys: readonly string[];
  /**
   * Keys of cmKeys that osc or the pod VM image jobs read and the cloud-api-adaptor of this cloud does not
   * (AWS_VPC_ID on AWS): a change of one restarts no adaptor (src/peerpods/adaptor-keys.ts).
   */
  notReadByAdaptor?: readonly string[];
  /** Keys whose values are lists checked by the provider itself (spaces reported there, not as stray spaces). */
  listKeys: readonly string[];
  /** The keys a missing ConfigMap is told to have, in words: `CLOUD_PROVIDER, AWS_REGION, ... and AWS_SG_IDS`. */
  requiredInWords: string;
  sizes: CloudSizes;
  image: CloudImage;
  secret: CloudSecret;
  /** What the cluster's Cloud Credential Operator hands out on this cloud; without it only peer-pods-secret counts. */
  credentials?: CloudIssuedCredentials;
  tags: CloudTags;
  /** The largest root disk, GB, and what it is (`the largest EBS volume`). */
  maxRootVolumeGB: number;
  maxRootVolumeWhat: string;
  /** The cloud's own location keys: answers its settings when they are all good. */
  validate(ctx: CloudCheckContext): S | undefined;
}
