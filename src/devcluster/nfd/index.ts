import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import { NFD_KATA_LABEL } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { type Node, Nodes } from '../../kube/resources.ts';
import { Controller } from '../../runtime/controller.ts';
import { Informer } from '../../runtime/informer.ts';
import { silentLogger } from '../../runtime/log.ts';
import { evaluateRules, NFD_EXTENDED_RESOURCES_ANNOTATION, type NodeFeatureRule, NodeFeatureRules, nodeFeatures } from './rules.ts';

/**
 * Dev-cluster only: stands for the node's hardware. `"true"` means the machine can run VMs (VT-x/AMD-V and
 * KVM present); the Node Feature Discovery simulator turns that into NFD labels. The dev cluster sets it on
 * every node it registers (DevClusterOptions.virtualizationCapable); set it on a node by hand to change
 * what NFD finds.
 */
export const VIRTUALIZATION_CAPABLE_ANNOTATION = 'osc.dev/virtualization-capable';

/** The CPU feature label NFD's cpu source sets on VT-x capable machines. */
export const NFD_CPU_VMX_LABEL = 'feature.node.kubernetes.io/cpu-cpuid.VMX';
/** Which labels NFD manages on a node, as the real nfd-master records them. */
export const NFD_FEATURE_LABELS_ANNOTATION = 'nfd.node.kubernetes.io/feature-labels';

export interface NodeFeatureDiscoveryOptions {
  client: KubeClient;
  log?: Logger;
  /** A shared node informer; one is created if absent. */
  nodes?: Informer<Node>;
  /** Read NodeFeatureRules (./rules.ts): their CRD must be served. */
  rules?: boolean;
}

/**
 * Node Feature Discovery, as far as osc can see it: virtualization-capable nodes get
 * `feature.node.kubernetes.io/runtime.kata=true` (the label the documented NodeFeatureRule produces) and
 * the VMX CPU feature label. Like nfd-master it manages only the labels it set (recorded in an annotation),
 * so a label put on by hand is never taken away.
 */
export class NodeFeatureDiscovery {
  readonly nodes: Informer<Node>;
  readonly rules?: Informer<NodeFeatureRule>;
  private readonly client: KubeClient;
  private readonly controller: Controller;

  constructor(opts: NodeFeatureDiscoveryOptions) {
    this.client = opts.client;
    const log = opts.log ?? silentLogger();
    this.nodes = opts.nodes ?? new Informer(opts.client, Nodes, { log });
    if (opts.rules) this.rules = new Informer(opts.client, NodeFeatureRules, { log });
    const allNodes = () => this.nodes.list().map((n) => objectName(n));
    this.controller = new Controller(
      {
        name: 'nfd-simulator',
        workers: 4,
        backoff: { baseDelayMs: 50, maxDelayMs: 5_000 },
        watches: [
          { informer: this.nodes, keys: (n: Node) => [objectName(n)] },
          // A rule added, changed or removed is read again on every node.
          ...(this.rules ? [{ informer: this.rules, keys: allNodes }] : []),
        ],
        reconcile: async (key, ctx) => {
          await this.reconcile(key, ctx.signal);
          return undefined;
        },
      },
      log,
    );
  }

  /** Starts (the informer if it is ours and) the labeller; answers once the cache has synced. */
  async start(signal: AbortSignal): Promise<void> {
    void this.nodes.run(signal);
    await this.nodes.waitForSync(signal);
    if (this.rules) {
      void this.rules.run(signal);
      await this.rules.waitForSync(signal);
    }
    void this.controller.run(signal);
  }

  /** The labels NFD puts on a node with this hardware. */
  static featureLabels(node: Node): Record<string, string> {
    if (node.metadata.annotations?.[VIRTUALIZATION_CAPABLE_ANNOTATION] !== 'true') return {};
    return { [NFD_CPU_VMX_LABEL]: 'true', [NFD_KATA_LABEL]: 'true' };
  }

  private async reconcile(name: string, signal: AbortSignal): Promise<void> {
    const node = this.nodes.get(name);
    if (!node || node.metadata.deletionTimestamp) return;
    const fromRules = evaluateRules(this.rules?.list() ?? [], nodeFeatures(node));
    const want = { ...NodeFeatureDiscovery.featureLabels(node), ...fromRules.labels };
    await this.advertise(node, fromRules.extendedResources, signal);
    const labels = node.metadata.labels ?? {};
    const managed = (node.metadata.annotations?.[NFD_FEATURE_LABELS_ANNOTATION] ?? '').split(',').filter(Boolean);
    const patch: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(want)) if (labels[k] !== v) patch[k] = v;
    for (const k of managed) if (!(k in want) && k in labels) patch[k] = null;
    const record = Object.keys(want).sort().join(',');
    const recordChanged = record !== managed.sort().join(',');
    if (Object.keys(patch).length === 0 && !recordChanged) return;
    try {
      await this.client.patch(
        Nodes,
        name,
        { metadata: { labels: patch, annotations: { [NFD_FEATURE_LABELS_ANNOTATION]: record || null } } },
        { signal, fieldManager: 'nfd-master' },
      );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /**
   * nfd-master's extended resources: written into the node's status capacity, those it no longer
   * publishes removed, and recorded in an annotation. The kubelet mirrors a capacity it does not manage
   * into allocatable; kwok does not, so the copy is made here, as the kubelet's.
   */
  private async advertise(node: Node, want: Record<string, string>, signal: AbortSignal): Promise<void> {
    const name = objectName(node);
    const managed = (node.metadata.annotations?.[NFD_EXTENDED_RESOURCES_ANNOTATION] ?? '').split(',').filter(Boolean);
    const capacity = node.status?.capacity ?? {};
    const allocatable = node.status?.allocatable ?? {};
    const change: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(want)) if (capacity[k] !== v || allocatable[k] !== v) change[k] = v;
    for (const k of managed) if (!(k in want) && (k in capacity || k in allocatable)) change[k] = null;
    const record = Object.keys(want).sort().join(',');
    try {
      if (Object.keys(change).length) {
        await this.client.patch(
          Nodes,
          name,
          { status: { capacity: change } },
          { signal, subresource: 'status', fieldManager: 'nfd-master' },
        );
        await this.client.patch(
          Nodes,
          name,
          { status: { allocatable: change } },
          { signal, subresource: 'status', fieldManager: 'kubelet' },
        );
      }
      if (record !== [...managed].sort().join(','))
        await this.client.patch(
          Nodes,
          name,
          { metadata: { annotations: { [NFD_EXTENDED_RESOURCES_ANNOTATION]: record || null } } },
          { signal, fieldManager: 'nfd-master' },
        );
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
