import type { Logger } from 'pino';
import { objectName } from '../api/meta.ts';
import type { KubeClient } from '../kube/client.ts';
import { type Node, type Pod, type RuntimeClass, RuntimeClasses } from '../kube/resources.ts';
import { runtimeUnitOf } from '../mustgather/nodelogs.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger } from '../runtime/log.ts';
import type { NodeJournal } from './journal.ts';
import { type Sandbox, sandboxId, sandboxStarted, sandboxStopped } from './journal-lines.ts';

/**
 * The container runtime and the kata shim on the dev cluster's nodes, as far as their journals go. kwok plays
 * the kubelet and runs no container; on a real node, the kubelet asks the runtime (CRI-O, or containerd on a
 * kubeadm node) for a pod sandbox once the pod is bound there, and for a pod whose RuntimeClass has a kata
 * handler the runtime starts the kata shim, which starts the VM: QEMU and virtiofsd on the node, or (handler
 * `kata-remote`) a peer pod's VM in the cloud through the adaptor. When the pod is deleted or its containers
 * have ended, the sandbox is stopped. Each of these leaves its lines in the node's journal (journal-lines.ts),
 * which must-gather's node-log pods read. Pods of other handlers (runc) are left out.
 */
export class KataSandboxes {
  readonly runtimeClasses: Informer<RuntimeClass>;
  readonly stats = { started: 0, stopped: 0 };
  private readonly pods: Informer<Pod>;
  private readonly nodes: Informer<Node>;
  private readonly journal: NodeJournal;
  private readonly log: Logger;
  /** Pod UID -> its running kata sandbox and node. */
  private readonly running = new Map<string, Sandbox & { node: string }>();

  constructor(opts: { client: KubeClient; journal: NodeJournal; pods: Informer<Pod>; nodes: Informer<Node>; log?: Logger }) {
    this.journal = opts.journal;
    this.pods = opts.pods;
    this.nodes = opts.nodes;
    this.log = (opts.log ?? silentLogger()).child({ component: 'kata-sandboxes' });
    this.runtimeClasses = new Informer(opts.client, RuntimeClasses, { log: opts.log });
    this.pods.addEventHandler({ add: (p) => this.consider(p), update: (_o, p) => this.consider(p), delete: (p) => this.stop(p) });
    // A pod can reach its node before its RuntimeClass reaches this cache.
    this.runtimeClasses.addEventHandler({
      add: (rc) => {
        for (const p of this.pods.list()) if (p.spec?.runtimeClassName === rc.metadata.name) this.consider(p);
      },
    });
  }

  /** Runs the caches (the pod and node informers are shared: running them again is harmless). */
  async start(signal: AbortSignal): Promise<void> {
    void this.pods.run(signal);
    void this.nodes.run(signal);
    void this.runtimeClasses.run(signal);
    await Promise.all([this.pods.waitForSync(signal), this.nodes.waitForSync(signal), this.runtimeClasses.waitForSync(signal)]);
  }

  private consider(p: Pod): void {
    const uid = p.metadata.uid ?? '';
    const node = p.spec?.nodeName;
    const phase = p.status?.phase;
    if (p.metadata.deletionTimestamp || phase === 'Succeeded' || phase === 'Failed') {
      this.stop(p);
      return;
    }
    if (!node || !p.spec?.runtimeClassName || this.running.has(uid)) return;
    const handler = this.runtimeClasses.get(p.spec.runtimeClassName)?.handler;
    // Without its RuntimeClass the kubelet starts no sandbox; another handler's sandbox is not kata's.
    if (!handler?.startsWith('kata')) return;
    const runtime = runtimeUnitOf(this.nodes.get(node));
    const sandbox = {
      namespace: p.metadata.namespace ?? '',
      name: objectName(p),
      uid,
      handler,
      runtime,
      runtimePid: this.journal.pidOf(node, runtime),
      node,
    };
    this.running.set(uid, sandbox);
    // A dev cluster started again on its data directory finds the sandboxes it had started already there.
    if (this.journal.mentions(node, `sandbox=${sandboxId(uid)}`)) return;
    this.journal.writeLines(node, sandboxStarted(sandbox, new Date()));
    this.stats.started++;
    this.log.debug({ pod: `${sandbox.namespace}/${sandbox.name}`, node, handler }, 'kata sandbox started');
  }

  private stop(p: Pod): void {
    const sandbox = this.running.get(p.metadata.uid ?? '');
    if (!sandbox) return;
    this.running.delete(p.metadata.uid ?? '');
    this.journal.writeLines(
      sandbox.node,
      sandboxStopped({ ...sandbox, runtimePid: this.journal.pidOf(sandbox.node, sandbox.runtime) }, new Date()),
    );
    this.stats.stopped++;
    this.log.debug({ pod: `${sandbox.namespace}/${sandbox.name}`, node: sandbox.node }, 'kata sandbox stopped');
  }
}
