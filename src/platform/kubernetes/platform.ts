import { isDeepStrictEqual } from 'node:util';
import type { KataConfigSpec } from '../../api/kataconfig.ts';
import { kataConfigOwner } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { CONTROL_PLANE_ROLE_LABEL, KATA_RUNTIME_CLASS, MASTER_ROLE_LABEL, OPERATOR_NAMESPACE } from '../../api/names.ts';
import { type DaemonSet, DaemonSets, type Node, Nodes, type Pod, Pods } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import {
  type ConfigRef,
  type InformerSource,
  type NodeRecord,
  type Platform,
  type PlatformInput,
  type PlatformPlan,
  type PlatformView,
  type PlatformWatch,
  type PlatformWrite,
  platformCache,
  type RuntimeClassSpec,
  type Selection,
  type Toleration,
} from '../platform.ts';
import { live, narrowSelection } from '../selection.ts';
import { flavourOf } from './flavour.ts';
import {
  CONFIG_ANNOTATION,
  configId,
  DEFAULT_KATA_DEPLOY_IMAGE,
  DEFAULT_SHIM,
  desiredInstallerDaemonSet,
  handlerFor,
  INSTALL_LABEL,
  INSTALLER_NAME,
  type InstallerConfig,
  installerConfig,
  KATA_DEPLOY_IMAGE_ENV,
  KATA_RUNTIME_LABEL,
  ROLLOUT_ANNOTATION,
  recordedSettings,
  SHIM_OVERHEAD,
  templateConfigId,
} from './katadeploy.ts';
import { observeNodes, type RolloutMemory } from './observe.ts';
import { type NodeMemory, type NodePlan, planRollout, type RolloutPlan, type StopMark } from './rollout.ts';

/**
 * Plain Kubernetes (docs/kubernetes.md): kata reaches the chosen nodes through kata-deploy, run by one
 * osc-owned DaemonSet on the nodes osc labels, one node at a time. Pure but for `watch`.
 */

export interface KubernetesPlatformOptions {
  /** Where the installer's DaemonSet lives (the operator's namespace, where the install put its ServiceAccount). */
  namespace: string;
  /** The kata-deploy image (default: the pinned release, or RELATED_IMAGE_KATA_DEPLOY). */
  image: string;
  /** The kata-deploy shim the `kata` RuntimeClass uses (default qemu: handler kata-qemu). */
  shim: string;
  /** Nodes installing at once (default 1). */
  maxUnavailable: number;
  /** How long an installer has to report before its node counts as failed (default 10 minutes, kata-deploy's startup probe budget). */
  installDeadlineMs: number;
  /** Pod overhead per runtime class (default: kata-deploy's published figures for the shim). */
  overhead?: Record<string, { memory: string; cpu: string }>;
}

export const defaultKubernetesOptions = (env: Record<string, string | undefined> = process.env): KubernetesPlatformOptions => ({
  namespace: OPERATOR_NAMESPACE,
  image: env[KATA_DEPLOY_IMAGE_ENV] || DEFAULT_KATA_DEPLOY_IMAGE,
  shim: DEFAULT_SHIM,
  maxUnavailable: 1,
  installDeadlineMs: 600_000,
});

/** On the installer DaemonSet: the stop mark of a rollout that failed (JSON of StopMark). */
export const STOPPED_ANNOTATION = 'kataconfiguration.openshift.io/rollout-stopped';

/**
 * What the platform reads: its installer objects. kata-deploy's ServiceAccount and RBAC are not among
 * them: they ship with the install (src/install/katadeploy-rbac.ts), so the operator needs no right to
 * make ClusterRoles or bind them.
 */
export interface KubernetesObserved {
  daemonSet?: DaemonSet;
  pods: Pod[];
}

/**
 * The installer pods that may still be cleaning a node up: not those bound to a node that is gone, which
 * clean nothing and stay until the pod garbage collector deletes them (40 s after the node went).
 */
function podsAtWork(input: PlatformInput<KubernetesObserved>): Pod[] {
  const nodes = new Set(input.nodes.map(objectName));
  return input.observed.pods.filter((p) => !p.spec?.nodeName || nodes.has(p.spec.nodeName));
}

const isControlPlane = (n: Node) =>
  n.metadata.labels?.[CONTROL_PLANE_ROLE_LABEL] !== undefined || n.metadata.labels?.[MASTER_ROLE_LABEL] !== undefined;
const noScheduleTaint = (n: Node) => (n.spec?.taints ?? []).some((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute');

/** Labels changed per pass: a rollout moves a few nodes at a time, an uninstall without a KataConfig may move many. */
const LABELS_PER_PASS = 64;

export function readStopMark(ds: DaemonSet | undefined): StopMark | undefined {
  const raw = ds?.metadata.annotations?.[STOPPED_ANNOTATION];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as StopMark;
    return typeof v.generation === 'number' && v.failures && typeof v.failures === 'object' ? v : undefined;
  } catch {
    return undefined;
  }
}

export const describeConfig = (c: InstallerConfig): string =>
  `kata-deploy ${c.image}, shim ${c.shim}${c.extraShims?.length ? ` (and ${c.extraShims.join(', ')})` : ''}, debug ${c.debug ? 'on' : 'off'}${c.flavour ? `, for ${c.flavour}` : ''}`;

export class KubernetesPlatform implements Platform<KubernetesObserved> {
  readonly name = 'kubernetes' as const;
  readonly supportsPeerPods = false;
  readonly opts: KubernetesPlatformOptions;

  constructor(opts: Partial<KubernetesPlatformOptions> = {}) {
    this.opts = { ...defaultKubernetesOptions(), ...opts };
  }

  watch(source: InformerSource): PlatformWatch<KubernetesObserved> {
    const ns = this.opts.namespace;
    const byName = { fieldSelector: `metadata.name=${INSTALLER_NAME}` };
    const daemonSets = source.informer(DaemonSets, { namespace: ns, ...byName });
    const pods = source.informer(Pods, { namespace: ns, labelSelector: `name=${INSTALLER_NAME}` });
    return {
      caches: [platformCache(daemonSets), platformCache(pods)],
      observe: () => ({
        daemonSet: daemonSets.get(`${ns}/${INSTALLER_NAME}`) ?? daemonSets.list()[0],
        pods: pods.list(),
      }),
    };
  }

  /** Candidates: the workers, i.e. nodes without a control-plane role; on a cluster of control-plane nodes only, the untainted ones. */
  select(nodes: readonly Node[], spec: KataConfigSpec | undefined): Selection {
    const all = live(nodes);
    let candidates = all.filter((n) => !isControlPlane(n));
    if (candidates.length === 0) candidates = all.filter((n) => !noScheduleTaint(n));
    return narrowSelection(candidates, spec);
  }

  /** The installer configuration for a spec, on this cluster's flavour of Kubernetes (from its nodes). */
  config(spec: KataConfigSpec | undefined, nodes: readonly Node[] = [], extraHandlers: readonly string[] = []): InstallerConfig {
    // A handler is `kata-<shim>` (handlerFor): kata-deploy installs it when its shim is listed.
    const extraShims = extraHandlers.filter((h) => h.startsWith('kata-')).map((h) => h.slice('kata-'.length));
    return installerConfig(this.opts.image, this.opts.shim, spec?.logLevel, flavourOf(nodes), extraShims);
  }

  /**
   * The rollout for one controller pass, from what the cluster shows: the nodes (with the memory osc wrote
   * on them), the installer pods and the DaemonSet. The same input gives the same plan.
   */
  plan(input: PlatformInput<KubernetesObserved>): RolloutPlan {
    const ds = input.observed.daemonSet;
    const observations = observeNodes(input.nodes, input.observed.pods);
    const memory = new Map<string, NodeMemory>();
    for (const o of observations) {
      const assigned = o.installLabel !== undefined ? { assigned: o.installLabel } : {};
      if (o.memory) memory.set(o.name, { ...o.memory, ...assigned });
      else {
        // Assigned by an osc that kept no memory on the node (before an upgrade): its installer's deadline
        // runs from when its pod was made.
        const since = o.pods.find((p) => !p.terminating && p.config === o.installLabel)?.created;
        if (since && o.installLabel !== undefined) memory.set(o.name, { ...assigned, since });
      }
    }
    return planRollout({
      observations,
      memory,
      selected: input.selected,
      target: configId(this.config(input.kataConfig?.spec, input.nodes, input.extraHandlers)),
      daemonSet: {
        config: templateConfigId(ds),
        observed: !!ds && Number(ds.status?.observedGeneration ?? 0) >= (ds.metadata.generation ?? 1),
        ...(readStopMark(ds) ? { stopped: readStopMark(ds) } : {}),
      },
      generation: input.kataConfig?.metadata.generation ?? 0,
      maxUnavailable: Math.max(1, this.opts.maxUnavailable),
      deadlineMs: this.opts.installDeadlineMs,
      soakMs: input.soakMs,
      now: input.now,
    });
  }

  /** One pass's answers from one rollout plan (the plan costs a walk over every node and pod). */
  view(input: PlatformInput<KubernetesObserved>): PlatformView {
    let plan: RolloutPlan | undefined;
    const once = () => {
      plan ??= this.plan(input);
      return plan;
    };
    return {
      records: () => this.records(input, once()),
      rolloutComplete: () => this.rolloutComplete(input, once()),
      installing: () => this.installing(input, once()),
      installPlan: () => this.installPlan(input, once()),
      uninstallPlan: () => this.uninstallPlan(input, once()),
      uninstallComplete: () => this.uninstallComplete(input, once()),
    };
  }

  records(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): NodeRecord[] {
    const describe = this.describer(input);
    return plan.nodes.map((n) => ({
      node: n.name,
      phase: n.phase,
      ...(n.assigned !== undefined ? { assigned: describe(n.assigned) } : {}),
      ...(n.active !== undefined ? { active: describe(n.active) } : {}),
      // The rollout keeps the last known good itself (it rolls back to it): the KataNode reports it.
      lastKnownGood: n.lastKnownGood !== undefined ? describe(n.lastKnownGood) : null,
      error: n.error,
    }));
  }

  /** Each configuration id with what it is: the target's and the template's settings are known, others were recorded. */
  private describer(input: PlatformInput<KubernetesObserved>): (id: string) => ConfigRef {
    const known = new Map<string, string>();
    for (const c of recordedSettings(input.observed.daemonSet)) known.set(configId(c), describeConfig(c));
    const target = this.config(input.kataConfig?.spec, input.nodes, input.extraHandlers);
    known.set(configId(target), describeConfig(target));
    return (id) => ({ id, description: known.get(id) ?? `kata-deploy configuration ${id}` });
  }

  rolloutComplete(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): boolean {
    const ds = input.observed.daemonSet;
    return (
      !plan.stopped &&
      plan.template === configId(this.config(input.kataConfig?.spec, input.nodes, input.extraHandlers)) &&
      templateConfigId(ds) === plan.template
    );
  }

  /**
   * Nodes an installer is working on now: a pod of kata-deploy is there to finish it (running, or about to
   * run, the node's configuration; or cleaning up). Not those this plan would only start, nor a node assigned
   * whose installer is gone and will not come back (a deletion makes none of the install's writes, and an
   * etcd restore can give back the assignment of a node whose DaemonSet the uninstall had already deleted):
   * waiting for either would wait for good, or until the install deadline.
   */
  installing(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): string[] {
    const starting = new Set(plan.labels.map((l) => l.node));
    const pods = new Map(observeNodes(input.nodes, input.observed.pods).map((o) => [o.name, o.pods]));
    const atWork = (n: NodePlan) => {
      const there = pods.get(n.name) ?? [];
      return n.phase === 'Installing' ? there.some((p) => !p.terminating && p.config === n.assigned) : there.length > 0;
    };
    return plan.nodes
      .filter((n) => (n.phase === 'Installing' || n.phase === 'Uninstalling') && !starting.has(n.name) && atWork(n))
      .map((n) => n.name);
  }

  installPlan(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): PlatformPlan {
    return this.writes(input, plan);
  }

  /**
   * Only nodes leave, each through kata-deploy's cleanup, which runs in its installer pod: nothing is created
   * (a pass that runs after the cleanup must not bring the installer back), but the DaemonSet itself when a
   * node still has kata to lose and nothing can make an installer there. An etcd restore does that: it gives
   * back a node's assignment after the uninstall deleted the DaemonSet, or a pass planned from caches that
   * had not yet seen the restore deletes the DaemonSet the restore gave back. Without it the node waits for
   * an installer for good, and the KataConfig with it.
   */
  uninstallPlan(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): PlatformPlan {
    const stranded = !input.observed.daemonSet && plan.nodes.length > 0;
    return this.writes(input, plan, stranded);
  }

  uninstallComplete(input: PlatformInput<KubernetesObserved>, plan = this.plan(input)): boolean {
    return plan.nodes.length === 0 && podsAtWork(input).length === 0 && !input.nodes.some(carriesOurs);
  }

  cleanupPlan(_input: PlatformInput<KubernetesObserved>): PlatformPlan {
    const ns = this.opts.namespace;
    // The installer's ServiceAccount and RBAC stay: they belong to the install, not to a KataConfig.
    return { steps: [[{ op: 'delete', resource: DaemonSets, name: INSTALLER_NAME, namespace: ns }]], pending: 0 };
  }

  /**
   * No KataConfig: kata leaves every node at once (there is no rollout to follow any more, as on
   * OpenShift), then the installer DaemonSet goes once its pods have cleaned up.
   */
  leftoversPlan(input: PlatformInput<KubernetesObserved>): PlatformPlan {
    const labelled = input.nodes.filter(carriesOurs);
    const now = labelled.slice(0, LABELS_PER_PASS);
    const steps: PlatformWrite[][] = [];
    if (now.length) steps.push(now.map((n) => labelWrite(objectName(n), null, null)));
    const ours = (o: KubeObject | undefined) => o?.metadata.labels?.['app.kubernetes.io/managed-by'] === 'osc-operator';
    if (labelled.length === 0 && podsAtWork(input).length === 0 && ours(input.observed.daemonSet))
      steps.push(...this.cleanupPlan(input).steps);
    return { steps, pending: labelled.length - now.length };
  }

  runtimeClass(name: string, _nodes: readonly Node[]): RuntimeClassSpec {
    const shim = this.opts.shim;
    const overhead = this.opts.overhead?.[name] ?? (name === KATA_RUNTIME_CLASS ? SHIM_OVERHEAD[shim] : undefined);
    return {
      handler: name === KATA_RUNTIME_CLASS ? handlerFor(shim) : name,
      nodeSelector: { [KATA_RUNTIME_LABEL]: 'true' },
      ...(overhead ? { overhead } : {}),
    };
  }

  kataNodeSelector(_nodes: readonly Node[]): Record<string, string> {
    return { [KATA_RUNTIME_LABEL]: 'true' };
  }

  /** None: kata goes only to nodes without a NoSchedule or NoExecute taint of the control plane (see select). */
  kataNodeTolerations(_nodes: readonly Node[]): Toleration[] {
    return [];
  }

  /** The writes of a rollout plan: the DaemonSet, then nodes and pods. */
  private writes(input: PlatformInput<KubernetesObserved>, plan: RolloutPlan, install = true): PlatformPlan {
    const ns = this.opts.namespace;
    const owner = input.kataConfig ? kataConfigOwner(input.kataConfig, true) : undefined;
    const steps: PlatformWrite[][] = [];
    const { daemonSet } = input.observed;
    if (!install) return this.nodeWrites(plan);

    // The template carries the configuration the plan installs now (the target, or a rollback's).
    const templateConfig = this.configFor(plan.template, input);
    if (templateConfig) {
      const desired = desiredInstallerDaemonSet(ns, templateConfig, owner, recordedSettings(daemonSet));
      const mark = plan.stopped ? JSON.stringify(plan.stopped) : null;
      desired.metadata.annotations = { ...desired.metadata.annotations, ...(mark ? { [STOPPED_ANNOTATION]: mark } : {}) };
      if (!daemonSet) steps.push([{ op: 'create', resource: DaemonSets, object: desired }]);
      else {
        const currentMark = daemonSet.metadata.annotations?.[STOPPED_ANNOTATION] ?? null;
        const sameMark = isDeepStrictEqual(currentMark ? JSON.parse(currentMark) : null, plan.stopped ?? null);
        if (templateConfigId(daemonSet) !== plan.template || !sameMark)
          steps.push([
            {
              op: 'patch',
              resource: DaemonSets,
              name: INSTALLER_NAME,
              namespace: ns,
              patch: {
                metadata: { annotations: { ...desired.metadata.annotations, [STOPPED_ANNOTATION]: mark } },
                spec: { template: desired.spec.template },
              },
            },
          ]);
      }
    }

    const nodes = this.nodeWrites(plan);
    return { ...nodes, steps: [...steps, ...nodes.steps] };
  }

  /** The plan's node assignments (with the memory kept beside them) and pod replacements, in one step. */
  private nodeWrites(plan: RolloutPlan): PlatformPlan {
    const memory = new Map(plan.remember.map((r) => [r.node, r.memory]));
    const writes: PlatformWrite[] = plan.labels.map((l) => labelWrite(l.node, l.value, memory.get(l.node) ?? null));
    for (const r of plan.remember) if (r.memory === null && !plan.labels.some((l) => l.node === r.node)) writes.push(forgetWrite(r.node));
    for (const pod of plan.deletePods) writes.push({ op: 'delete', resource: Pods, name: pod, namespace: this.opts.namespace });
    return {
      steps: writes.length ? [writes] : [],
      pending: 0,
      ...(plan.nextDeadlineMs !== undefined ? { recheckAfterMs: plan.nextDeadlineMs + 1000 } : {}),
    };
  }

  /** The settings behind a configuration id osc can (re)install: the target's, or the DaemonSet's recorded ones. */
  private configFor(id: string, input: PlatformInput<KubernetesObserved>): InstallerConfig | undefined {
    const target = this.config(input.kataConfig?.spec, input.nodes, input.extraHandlers);
    if (configId(target) === id) return target;
    return recordedSettings(input.observed.daemonSet).find((c) => configId(c) === id);
  }
}

/** Whether a node carries anything osc writes on nodes: its label, or the rollout's memory. */
const carriesOurs = (n: Node) =>
  n.metadata.labels?.[INSTALL_LABEL] !== undefined || n.metadata.annotations?.[ROLLOUT_ANNOTATION] !== undefined;

/**
 * Assigns a configuration to a node (the label that selects it, the annotation that says which), or takes
 * kata off it; the rollout's memory of the node goes in the same write. `expect` is the assignment alone:
 * a pass that plans it again before the node cache shows it is a repeat, whatever its memory's time.
 */
function labelWrite(node: string, config: string | null, memory: RolloutMemory | null): PlatformWrite {
  const assignment = { labels: { [INSTALL_LABEL]: config === null ? null : 'true' }, annotations: { [CONFIG_ANNOTATION]: config } };
  return {
    op: 'patch',
    resource: Nodes,
    name: node,
    patch: {
      metadata: { ...assignment, annotations: { ...assignment.annotations, [ROLLOUT_ANNOTATION]: memory && JSON.stringify(memory) } },
    },
    expect: JSON.stringify(assignment),
  };
}

/** Kata has left the node: the rollout's memory of it goes too. */
const forgetWrite = (node: string): PlatformWrite => ({
  op: 'patch',
  resource: Nodes,
  name: node,
  patch: { metadata: { annotations: { [ROLLOUT_ANNOTATION]: null } } },
});
