import type { KataConfig, KataConfigSpec } from '../api/kataconfig.ts';
import type { ConfigRef, KataNodePhase } from '../api/katanode.ts';
import type { KubeClient, PatchType, ResourceType } from '../kube/client.ts';
import type { Node, PolicyRule } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import type { Informer, InformerOptions } from '../runtime/informer.ts';

/**
 * The Platform seam (docs/architecture.md, "The Platform seam"): what differs between a cluster where
 * kata arrives through OpenShift's Machine Config Operator and one where osc runs an installer itself.
 * The KataConfig controller is platform-neutral: it asks the platform which nodes are candidates, what
 * each node's state is (as a per-node record), and what to write; it decides the KataConfig status, the
 * KataNode objects, the RuntimeClasses and the uninstall guard itself, and does every write.
 *
 * Everything here is pure except `watch`, which only registers caches: a platform reads the cluster
 * through the caches it asked for and answers with data.
 */

/** A platform's name, as `--distribution` takes it: one of the registry's (src/platform/index.ts). */
export type PlatformName = string;

export type { ConfigRef, KataNodePhase };

/** What every platform is made with; each also reads its own part of `settings`. */
export interface PlatformOptions {
  /** Pod overhead per runtime class osc creates (default: the platform's own figures). */
  overhead?: Record<string, { memory: string; cpu: string }>;
  /** Where a platform keeps objects of its own (an installer, say): the operator's namespace. */
  namespace?: string;
  /**
   * Each platform's own settings, by platform name, as its descriptor reads them (`parseSettings`). Every
   * platform's are given; only the chosen one's are read.
   */
  settings?: Record<string, Record<string, unknown>>;
}

/**
 * Everything osc knows about a platform outside its own folder: one per folder (`descriptor.ts`), listed
 * once in the registry (src/platform/index.ts). The CLI's choices, the installer's RBAC, the Helm chart and
 * the OLM bundle are derived from these.
 */
export interface PlatformDescriptor<S = unknown> {
  /** `osc run --distribution <name>`, and the Platform's name. */
  readonly name: PlatformName;
  /** How kata reaches the nodes there, for `--help`: e.g. "the Machine Config Operator". */
  readonly summary: string;
  /**
   * Whether a cluster serving these API groups is this platform (`osc run` without `--distribution`). The
   * registry asks in its order and the first that answers yes is chosen; a catch-all comes last.
   */
  recognises(servedGroups: ReadonlySet<string>): boolean;
  /** The RBAC the platform's own calls need, besides what every platform needs (src/install/rbac.ts). */
  readonly rbac: { readonly cluster: readonly PolicyRule[]; readonly namespace: readonly PolicyRule[] };
  /**
   * Other platforms the deploymentMode feature gate may run on this platform's clusters (OpenShift's
   * `DaemonSet` runs kata-deploy's): their RBAC and installed identities ship with this platform's install.
   */
  readonly modePlatforms?: readonly PlatformName[];
  /**
   * Whether this platform has kata on the cluster's nodes now (its shared objects exist), asked when the
   * operator starts: a deploymentMode changed since the install does not switch platforms under it.
   */
  inUse?(client: KubeClient, namespace: string): Promise<boolean>;
  /** How the operator is packaged for this platform's clusters: an OLM bundle, a Helm chart, or neither. */
  readonly packaging?: 'olm' | 'helm';
  /** Whether the dev cluster can simulate it (`osc start --distribution <name>`). */
  readonly devCluster: boolean;
  /** What the platform's clusters have that the installer, the operator and the dev cluster adapt to. */
  readonly cluster?: PlatformCluster;
  /** Checks the platform's own settings; an unknown or bad one is an Error naming it and the fix. */
  parseSettings(raw: Readonly<Record<string, unknown>>): S;
  /** Makes the platform, loading its code only now. */
  create(opts: PlatformOptions, settings: S): Promise<Platform>;
}

/**
 * What a platform's clusters have, beyond Kubernetes itself, that osc adapts to: the manifests `osc install`
 * writes, the caches the operator keeps, the handlers of the confidential RuntimeClasses, what the dev
 * cluster simulates. Every member absent: a plain Kubernetes cluster.
 */
export interface PlatformCluster {
  /**
   * A system priority class the platform lets operators in their own namespaces use (OpenShift's run
   * system-cluster-critical); absent: osc brings a class of its own (a cluster may reserve system-* classes).
   */
  readonly systemPriorityClass?: string;
  /**
   * NetworkPolicy peers the API server's calls to the webhooks come from (OpenShift: the host-network policy
   * group, the kube-apiserver namespace); absent: the webhook port is open to the cluster, TLS guards it.
   */
  readonly apiServerPeers?: readonly Record<string, unknown>[];
  /** Pods are admitted under SecurityContextConstraints: osc ships its SCCs and their use grants. */
  readonly securityContextConstraints?: boolean;
  /** A Cloud Credential Operator reads CredentialsRequests in its namespace: osc may write peer pods' there. */
  readonly cloudCredentialOperator?: boolean;
  /** osc runs kata's node installer (kata-deploy) itself: the installer's ServiceAccount and RBAC ship with it. */
  readonly nodeInstaller?: boolean;
  /** Every such cluster serves the Prometheus Operator's API: the ServiceMonitor is installed by default. */
  readonly prometheusOperator?: boolean;
  /** The cluster's configuration API (config.openshift.io): a ClusterVersion names the release, an Infrastructure the cloud. */
  readonly clusterConfig?: boolean;
  /** Node Feature Discovery labels the nodes (and the dev cluster simulates it). */
  readonly nodeFeatureDiscovery?: boolean;
  /**
   * The runtime handler the nodes have for a runtime that OpenShift's extension names `extension` and
   * kata-deploy installs as shim `shim`; absent: kata-deploy's naming, `kata-<shim>`.
   */
  runtimeHandler?(extension: string, shim: string): string;
}

/** The nodes that should run kata, as the platform selects them from a KataConfig's spec. */
export interface Selection {
  /** Nodes that should run kata, sorted by name. */
  nodes: string[];
  /** checkNodeEligibility is on and no candidate carries the NFD label. */
  noEligibleNodes: boolean;
  /** kataConfigPoolSelector is set and matches no candidate: nothing would get kata. */
  noMatchingNodes?: boolean;
}

/**
 * One node's kata state as the platform observes it: the model of Kubernetes' NodeConfigStatus. The
 * controller turns a record into the KataNode's status (adding lastTransitionTime, and lastKnownGood where
 * the platform does not keep it) and into the KataConfig's kataNodes lists (by `phase`).
 */
export interface NodeRecord {
  /** The node's name (and its KataNode's). */
  node: string;
  /** The node's place in the rollout, i.e. which kataNodes list names it. */
  phase: KataNodePhase;
  /** The configuration the node has been given to run; absent when the platform has given it none yet. */
  assigned?: ConfigRef;
  /** The configuration the node runs now; absent when unknown. */
  active?: ConfigRef;
  /**
   * The configuration the node ran without error for the soak period, where the platform keeps it itself
   * (kata-deploy's rollout rolls a failed node back to it): null when it has none. Absent: the controller
   * promotes `assigned` after the soak period.
   */
  lastKnownGood?: ConfigRef | null;
  /**
   * Why assigned is not active, when that is a failure (phase FailedToInstall or FailedToUninstall): the
   * reason in `Node <name> Degraded: <reason>`. Empty when none.
   */
  error: string;
}

/** One write the controller makes for the platform; `create` tolerates AlreadyExists, `delete` a 404. */
export type PlatformWrite =
  | { op: 'create'; resource: ResourceType; object: KubeObject }
  | {
      op: 'patch';
      resource: ResourceType;
      name: string;
      namespace?: string;
      patch: unknown;
      type?: PatchType;
      /**
       * For a node metadata patch: the part of it that a repeat must match (JSON of `{labels, annotations}`),
       * when the rest (e.g. a time) differs from pass to pass. Default: the whole patch.
       */
      expect?: string;
    }
  | { op: 'delete'; resource: ResourceType; name: string; namespace?: string };

/**
 * What to write now. Steps run in order; the writes within one step run concurrently (a bounded number
 * at a time), so a platform orders dependencies by step (e.g. a MachineConfig before the pool that
 * renders it) and batches many independent writes (e.g. node labels) into one step.
 */
export interface PlatformPlan {
  steps: PlatformWrite[][];
  /**
   * Writes that are needed but left out of this plan (a per-pass batch limit): the controller writes its
   * status and then plans again at once, so that status is not held up behind a thousand node patches.
   */
  pending: number;
  /**
   * Something is expected to change by time alone (e.g. an installer's deadline passing): look again
   * after this long even if no watched object changes.
   */
  recheckAfterMs?: number;
  /**
   * Node metadata patches nothing else depends on (OpenShift's `kata-oc` labels: the pool follows them on
   * its own). The controller makes them beside its worker, after the steps, so that a thousand slow node
   * patches never hold up the next status write. A platform whose later writes need its node patches made
   * first (kata-deploy's pod replacements) keeps them in its steps.
   */
  detached?: PlatformWrite[];
}

/** What every planning and reading function of a platform is given. */
export interface PlatformInput<O> {
  /** The platform's own observations (from its caches, see PlatformWatch.observe). */
  observed: O;
  /** Every node, as cached. */
  nodes: readonly Node[];
  /** The KataConfig in effect (spec, name and UID for owner references); absent when none exists. */
  kataConfig?: KataConfig;
  /** Nodes that should have kata now: the selection while installing, empty once an uninstall has started. */
  selected: ReadonlySet<string>;
  /**
   * The time of the pass: plans are pure, so a deadline or a soak period is measured against this. A
   * platform that needs memory of a node's past keeps it on the objects it writes, never in KataNodes
   * (they report) nor in the process (it restarts).
   */
  now: Date;
  /** How long a node runs its assigned configuration without error before it is its last known good. */
  soakMs: number;
  /**
   * The handlers of the RuntimeClasses beyond kata and kata-remote that exist or are wanted (kata-cc's
   * `kata-qemu-tdx`, say): the platform puts on the nodes what they need (kata-deploy's TEE shims; on
   * OpenShift a MachineConfig with the TEE handler's CRI-O entry and kata configuration), as part of its
   * target, and takes it off once no class needs the handler.
   */
  extraHandlers?: readonly string[];
}

/** The RuntimeClass a platform provides for one runtime class name (kata or kata-remote). */
export interface RuntimeClassSpec {
  /** The CRI runtime handler the node's container runtime knows the runtime by. */
  handler: string;
  /** Where pods of this runtime class may be scheduled: exactly the nodes with kata. */
  nodeSelector: Record<string, string>;
  /** The pod overhead of a sandbox; absent when the platform knows none. */
  overhead?: { memory: string; cpu: string };
}

/** Registers the shared caches a platform reads. */
export interface InformerSource {
  informer<T extends KubeObject>(rt: ResourceType<T>, opts?: InformerOptions): Informer<T>;
}

/** A cache whose changes wake the KataConfig controller. */
export interface PlatformCache {
  informer: Informer<KubeObject>;
  /**
   * Whether an update changes anything the platform's plans read; every update wakes a pass without it. A
   * pass reads every node, so an update that cannot change its plan is better not delivered at all.
   */
  updated?(before: KubeObject, after: KubeObject): boolean;
}

/** A cache of one kind, as the controller takes it (which sees every platform's objects as KubeObjects). */
export const platformCache = <T extends KubeObject>(informer: Informer<T>, updated?: (before: T, after: T) => boolean): PlatformCache => ({
  informer: informer as unknown as Informer<KubeObject>,
  ...(updated ? { updated: updated as (before: KubeObject, after: KubeObject) => boolean } : {}),
});

/** The caches a platform set up, and a reading of them. */
export interface PlatformWatch<O> {
  /** Caches whose changes wake the KataConfig controller (nodes are watched by the controller itself). */
  caches: PlatformCache[];
  /** A snapshot of what the platform observes, for one reconcile pass. Cheap: reads caches only. */
  observe(): O;
}

/**
 * A platform: one per kind of cluster. `O` is its observed state (e.g. OpenShift's pools and
 * MachineConfigs); the controller passes it around without looking inside.
 */
export interface Platform<O = unknown> {
  readonly name: PlatformName;
  /** Whether peer pods (kata-remote) work on this platform; when not, the KataConfig says so. */
  readonly supportsPeerPods: boolean;

  /** Sets up the caches the platform reads. Called once, before the manager starts. */
  watch(source: InformerSource): PlatformWatch<O>;

  /**
   * Which nodes should run kata for this spec (docs/kataconfig.md, "spec"): the platform's candidates,
   * narrowed by kataConfigPoolSelector and, when checkNodeEligibility is on, by the NFD label
   * (see narrowSelection in selection.ts).
   */
  select(nodes: readonly Node[], spec: KataConfigSpec | undefined): Selection;

  /**
   * Each node's record, for every node that is selected or still has kata (sorted by name); a node that
   * is neither has no record, and its KataNode goes. Pure.
   */
  records(input: PlatformInput<O>): NodeRecord[];

  /**
   * Whether the rollout is complete beyond what the records show: everything the platform shares among
   * nodes (e.g. OpenShift's pool configuration) carries what the spec asks for. The controller calls the
   * rollout settled when this holds and every selected node is Installed and no other node is listed.
   */
  rolloutComplete(input: PlatformInput<O>): boolean;

  /** Nodes installing kata at this moment: a KataConfig deleted during a rollout waits for them. */
  installing(input: PlatformInput<O>): string[];

  /**
   * The writes that put kata on the selected nodes and take it off the others (input.selected), compared
   * with what the caches show: an empty plan when everything is in place. Never touches RuntimeClasses
   * (the controller makes them once the rollout is done).
   */
  installPlan(input: PlatformInput<O>): PlatformPlan;

  /** The writes that take kata off every node, during an uninstall after its check for pods. */
  uninstallPlan(input: PlatformInput<O>): PlatformPlan;

  /**
   * Whether kata is off the cluster as far as the platform's shared objects go (beyond the records,
   * which must be empty too): the uninstall may clean up and remove the finalizer.
   */
  uninstallComplete(input: PlatformInput<O>): boolean;

  /**
   * The last writes of an uninstall, made once every node is back: everything the platform created goes.
   * Deletes go straight to the API server (a cache may lag behind a recent create).
   */
  cleanupPlan(input: PlatformInput<O>): PlatformPlan;

  /**
   * With no KataConfig at all (its finalizer removed by hand): the writes that undo what the last one
   * left behind, on the platform's side (the controller deletes RuntimeClasses and KataNodes).
   */
  leftoversPlan(input: PlatformInput<O>): PlatformPlan;

  /** The RuntimeClass for a runtime class name osc provides (kata, kata-remote). */
  runtimeClass(name: string, nodes: readonly Node[]): RuntimeClassSpec;

  /**
   * The label selector of the nodes that have kata (and so run peer pods and the kata monitor): used by
   * other controllers instead of re-deriving it.
   */
  kataNodeSelector(nodes: readonly Node[]): Record<string, string>;

  /** The tolerations a DaemonSet needs to run on every kata node (e.g. a master's taint on a compact cluster). */
  kataNodeTolerations(nodes: readonly Node[]): Toleration[];

  /**
   * One pass's answers from one assessment of the input, for a platform whose answers share a costly
   * computation (kata-deploy's rollout plan); absent: each answer is computed on its own.
   */
  view?(input: PlatformInput<O>): PlatformView;
}

/** A platform's answers for one pass (one input): what the controller reads, each computed at most once. */
export interface PlatformView {
  records(): NodeRecord[];
  rolloutComplete(): boolean;
  installing(): string[];
  installPlan(): PlatformPlan;
  uninstallPlan(): PlatformPlan;
  uninstallComplete(): boolean;
}

/** The platform's view of one pass: its own, or each answer asked of it in turn. */
export function platformView<O>(platform: Platform<O>, input: PlatformInput<O>): PlatformView {
  return (
    platform.view?.(input) ?? {
      records: () => platform.records(input),
      rolloutComplete: () => platform.rolloutComplete(input),
      installing: () => platform.installing(input),
      installPlan: () => platform.installPlan(input),
      uninstallPlan: () => platform.uninstallPlan(input),
      uninstallComplete: () => platform.uninstallComplete(input),
    }
  );
}

export interface Toleration {
  key?: string;
  operator: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
}

/** An empty plan: nothing to write. */
export const noWrites = (): PlatformPlan => ({ steps: [], pending: 0 });

/** Whether a node carries every label of a selector (as kataNodeSelector answers). */
export const matchesSelector = (node: Node, selector: Record<string, string>): boolean =>
  Object.entries(selector).every(([k, v]) => node.metadata.labels?.[k] === v);
