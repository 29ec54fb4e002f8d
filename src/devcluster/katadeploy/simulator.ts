import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { DaemonSets, type Node, Nodes, type Pod, Pods } from '../../kube/resources.ts';
import { keyOf } from '../../kube/types.ts';
import { runtimeUnitOf } from '../../mustgather/nodelogs.ts';
import { rfc3339 } from '../../runtime/conditions.ts';
import { Controller } from '../../runtime/controller.ts';
import { Informer } from '../../runtime/informer.ts';
import { silentLogger } from '../../runtime/log.ts';
import type { NodeJournal } from '../journal.ts';
import { type InstallerObserved, type InstallerTiming, installerStep, nodeSelectorMatches, type Progress, podStatusFor } from './core.ts';
import { DEFAULT_INSTALLER_REPOSITORIES, installerConfig, installerContainer, type RuntimeHandler, withHandlers } from './protocol.ts';

export interface KataDeploySimulatorOptions {
  client: KubeClient;
  log?: Logger;
  /** A shared node informer; one is created if absent. */
  nodes?: Informer<Node>;
  /** Image repositories whose containers are kata-deploy; default DEFAULT_INSTALLER_REPOSITORIES. */
  repositories?: readonly string[];
  timing?: Partial<InstallerTiming>;
  /** The nodes' journals: the container runtime's restarts leave their lines there. */
  journal?: NodeJournal;
  /** Only the pods this label selector matches are watched (default: every pod, each checked for the image). */
  podLabelSelector?: string;
}

/** How many ended installer pods the simulator remembers (a restore brings back pods of the last minutes). */
const ENDED_KEPT = 10_000;

/** kubelet's first restart back-off is 10 s; installs take tens of seconds on a real node. Short here. */
export const DEFAULT_TIMING: InstallerTiming = { installMs: 1500, cleanupMs: 500, restartBackoffMs: 2000 };

/**
 * kata-deploy's host side on the dev cluster's nodes (no host exists): while an installer pod runs on a
 * node, after `installMs` its node gets kata-deploy's labels and the container turns Ready; when the pod is
 * deleted, its cleanup releases the labels before the pod goes. kwok starts such pods (Running, not
 * Ready) and removes them once they have exited; this simulator reports what their process does in
 * between (see installerStep).
 */
export class KataDeploySimulator {
  readonly pods: Informer<Pod>;
  readonly nodes: Informer<Node>;
  readonly repositories: readonly string[];
  readonly timing: InstallerTiming;
  readonly stats = { installs: 0, failures: 0, cleanups: 0 };
  private readonly client: KubeClient;
  private readonly log: Logger;
  private readonly journal: NodeJournal | undefined;
  private readonly controller: Controller;
  private readonly progress = new Map<string, Progress>();
  /** The handlers each install (node/instance label) configured, as its drop-in on the host would say. */
  private readonly configured = new Map<string, string[]>();
  /** UIDs of installer pods whose object was deleted here (the last ENDED_KEPT): one back is a restored one. */
  private readonly ended = new Set<string>();
  private ownNodes = false;

  constructor(opts: KataDeploySimulatorOptions) {
    this.client = opts.client;
    this.journal = opts.journal;
    this.log = (opts.log ?? silentLogger()).child({ component: 'kata-deploy-simulator' });
    this.repositories = opts.repositories ?? DEFAULT_INSTALLER_REPOSITORIES;
    this.timing = { ...DEFAULT_TIMING, ...opts.timing };
    const log = opts.log ?? silentLogger();
    this.ownNodes = !opts.nodes;
    this.nodes = opts.nodes ?? new Informer(this.client, Nodes, { log });
    this.pods = new Informer(this.client, Pods, { log, ...(opts.podLabelSelector ? { labelSelector: opts.podLabelSelector } : {}) });
    const ours = (p: Pod) => !!p.spec?.nodeName && !!installerContainer(p, this.repositories);
    this.controller = new Controller(
      {
        name: 'kata-deploy-simulator',
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [
          { informer: this.pods, keys: (p: Pod) => (ours(p) ? [keyOf(p)] : []) },
          // A node's failure annotation or labels matter to the installers running on it.
          { informer: this.nodes, keys: (n: Node) => this.podsOn(objectName(n)) },
        ],
        reconcile: (key, ctx) => this.reconcile(key, ctx.signal),
      },
      log,
    );
  }

  private podsOn(node: string): string[] {
    return this.pods
      .list()
      .filter((p) => p.spec?.nodeName === node && installerContainer(p, this.repositories))
      .map(keyOf);
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.ownNodes) void this.nodes.run(signal);
    void this.pods.run(signal);
    await Promise.all([this.nodes.waitForSync(signal), this.pods.waitForSync(signal)]);
    void this.controller.run(signal);
  }

  private async reconcile(key: string, signal: AbortSignal): Promise<{ requeueAfterMs: number } | undefined> {
    const pod = this.pods.get(key);
    const container = pod && installerContainer(pod, this.repositories);
    if (!pod || !container || !pod.spec?.nodeName) {
      for (const k of this.progress.keys())
        if (k.startsWith(`${key}/`)) {
          this.progress.delete(k);
          this.endedRun(k.slice(key.length + 1));
        }
      return undefined;
    }
    // kwok has not started it yet (its stage writes Running).
    if (pod.status?.phase !== 'Running' && !pod.metadata.deletionTimestamp) return undefined;
    const memoryKey = `${key}/${pod.metadata.uid}`;
    const { nodeName, instanceLabel } = installerConfig(pod, container);
    const installKey = `${nodeName}/${instanceLabel}`;
    const observed: InstallerObserved = {
      pod,
      node: nodeName ? this.nodes.get(nodeName) : undefined,
      progress: this.progress.get(memoryKey),
      configuredHandlers: this.configured.get(installKey),
      ...(pod.metadata.uid && this.ended.has(pod.metadata.uid) ? { ended: true } : {}),
      now: Date.now(),
    };
    let step = installerStep(observed, container, this.timing);
    if (step.needsDaemonSets && observed.node) {
      observed.daemonSets = await this.daemonSetsFor(pod, installerConfig(pod, container).daemonSetName, observed.node, signal);
      step = installerStep(observed, container, this.timing);
    }
    // Installing or removing kata ends in `systemctl restart` of the node's container runtime.
    if (step.handlers && nodeName) this.journal?.restartRuntime(nodeName, runtimeUnitOf(observed.node));
    if (step.labels && Object.keys(step.labels).length && nodeName) {
      await this.client.patch(Nodes, nodeName, { metadata: { labels: step.labels } }, { signal });
      this.log.info({ node: nodeName, pod: key, labels: step.labels }, 'kata-deploy labelled the node');
    }
    if (step.handlers && nodeName) {
      await this.setHandlers(nodeName, step.handlers, signal);
      if (step.handlers.add.length) this.configured.set(installKey, step.handlers.add);
      else this.configured.delete(installKey);
    }
    if (step.report) {
      if (step.report.kind === 'crashLoop' || (step.report.kind === 'exited' && step.report.exitCode !== 0)) this.stats.failures++;
      else if (step.report.kind === 'running' && step.report.ready) this.stats.installs++;
      else if (step.report.kind === 'exited' && pod.metadata.deletionTimestamp) this.stats.cleanups++;
      const status = podStatusFor(pod, container, step.report, rfc3339(new Date()));
      try {
        await this.client.patch(
          Pods,
          objectName(pod),
          { status },
          {
            namespace: pod.metadata.namespace,
            subresource: 'status',
            type: 'strategic',
            fieldManager: 'kubelet',
            signal,
          },
        );
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      this.log.info({ pod: key, node: pod.spec.nodeName, report: step.report }, 'kata-deploy container reported');
    }
    if (step.progress) this.progress.set(memoryKey, step.progress);
    // Running again: its next end is another.
    if (step.progress && pod.metadata.uid) this.ended.delete(pod.metadata.uid);
    return step.requeueAfterMs !== undefined ? { requeueAfterMs: Math.max(1, step.requeueAfterMs) } : undefined;
  }

  private endedRun(uid: string): void {
    this.ended.add(uid);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.values().next().value as string);
  }

  /** The kubelet's report of the runtime's handlers after the restart (a fresh read: kwok writes status too). */
  private async setHandlers(name: string, h: { add: string[]; remove: string[] }, signal: AbortSignal): Promise<void> {
    const node = await this.client.get(Nodes, name, undefined, signal);
    const current = (node.status as { runtimeHandlers?: RuntimeHandler[] } | undefined)?.runtimeHandlers ?? [];
    const runtimeHandlers = withHandlers(current, h.add, h.remove);
    await this.client.patch(Nodes, name, { status: { runtimeHandlers } }, { subresource: 'status', signal });
  }

  /** What cleanup asks of the API server: does its own DaemonSet, or another kata-deploy one, still select the node? */
  private async daemonSetsFor(pod: Pod, ownName: string, node: Node, signal: AbortSignal) {
    const all = (await this.client.list(DaemonSets, { signal })).items.filter((d) => !d.metadata.deletionTimestamp);
    const labels = node.metadata.labels ?? {};
    const selects = (d: (typeof all)[number]) =>
      nodeSelectorMatches((d.spec.template.spec as { nodeSelector?: Record<string, string> }).nodeSelector, labels);
    const isOwn = (d: (typeof all)[number]) => d.metadata.namespace === pod.metadata.namespace && d.metadata.name === ownName;
    return {
      ownSelectsNode: all.some((d) => isOwn(d) && selects(d)),
      legacyOtherSelectsNode: all.some((d) => !isOwn(d) && objectName(d).includes('kata-deploy') && selects(d)),
    };
  }
}
