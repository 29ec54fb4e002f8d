import type { Logger } from 'pino';
import { confidentialTexts, RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../api/confidential.ts';
import type { KataConfig } from '../../api/kataconfig.ts';
import type { KubeClient } from '../../kube/client.ts';
import { type Node, type Pod, type RuntimeClass, RuntimeClasses } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import type { Platform } from '../../platform/platform.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { addFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { PlatformWriter } from './platformwrites.ts';
import type { DesiredRuntimeClass, ExtraClasses } from './runtimeclasses.ts';
import { podsUsing } from './state.ts';

export interface RuntimeClassWritesDeps {
  client: KubeClient;
  runtimeClasses: Informer<RuntimeClass>;
  pods: Informer<Pod>;
  platform: Platform<unknown>;
  events: EventRecorder;
  writer: PlatformWriter;
}

/**
 * The KataConfig controller's RuntimeClass writes: the classes offered made (last, once kata is on the
 * nodes), adopted and guarded by the cleanup finalizer; those no longer offered deleted once no pod uses
 * them; a class whose handler must change deleted first, to be made again.
 */
export class RuntimeClassWrites {
  private readonly deps: RuntimeClassWritesDeps;

  constructor(deps: RuntimeClassWritesDeps) {
    this.deps = deps;
  }

  /**
   * One install pass's classes: `wanted` (kata, kata-remote) and the extra ones; made only when `installed`.
   * Answers status.runtimeClasses and whether a class no longer wanted waits for its pods.
   */
  async sync(
    kc: KataConfig,
    args: { wanted: readonly string[]; extra: ExtraClasses | undefined; installed: boolean; nodes: readonly Node[]; owner: OwnerReference },
    log: Logger,
    signal: AbortSignal,
  ): Promise<{ runtimeClasses: string[]; waitingForPods: boolean }> {
    const { extra, installed, nodes, owner } = args;
    let runtimeClasses = kc.status?.runtimeClasses ?? [];
    const wanted = [...args.wanted, ...(extra?.classes.map((c) => c.name) ?? [])];
    // A class whose handler must change (the TEE changed) goes first, and is made again once gone.
    const replaced = (extra?.classes ?? []).filter((c) => this.ownedWithOtherHandler(c)).map((c) => c.name);
    if (installed) {
      // RuntimeClasses come last: before they exist, no pod can ask for kata and land on a node without it.
      for (const name of wanted) {
        if (replaced.includes(name)) continue;
        await this.ensure(
          name,
          nodes,
          owner,
          signal,
          extra?.classes.find((c) => c.name === name),
        );
        if (!runtimeClasses.includes(name)) runtimeClasses = [...runtimeClasses, name];
      }
    }
    // A RuntimeClass no longer offered (peer pods or a feature gate turned off) goes once no pod uses it.
    const frozen = extra?.frozen ?? [];
    let waitingForPods = false;
    for (const name of runtimeClasses.filter((n) => (!wanted.includes(n) && !frozen.includes(n)) || replaced.includes(n))) {
      const using = podsUsing(this.deps.pods.list(), new Set([name]));
      if (using.length) {
        log.info(
          { runtimeClass: name, pods: using.slice(0, 20), count: using.length },
          'RuntimeClass no longer wanted: waiting for its pods',
        );
        await this.deps.events.record(kc, 'Warning', 'RuntimeClassInUse', 'Reconcile', confidentialTexts.removalBlocked(name, using));
        waitingForPods = true;
        continue;
      }
      await this.deleteOwn(name, signal);
      runtimeClasses = runtimeClasses.filter((n) => n !== name);
    }
    return { runtimeClasses, waitingForPods };
  }

  /** Whether osc made this class with a handler other than the one it now needs. */
  private ownedWithOtherHandler(d: DesiredRuntimeClass): boolean {
    const existing = this.deps.runtimeClasses.get(d.name);
    return !!existing?.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig') && existing.handler !== d.handler;
  }

  private async ensure(rt: string, nodes: readonly Node[], owner: OwnerReference, signal: AbortSignal, desired?: DesiredRuntimeClass) {
    const { client } = this.deps;
    // Never overwrite an existing RuntimeClass: an administrator may have tuned its overhead. One an
    // earlier KataConfig made is adopted: its owner reference names the KataConfig in effect.
    const existing = this.deps.runtimeClasses.get(rt);
    const spec = desired ?? this.deps.platform.runtimeClass(rt, nodes);
    const nodeSelector = spec.nodeSelector;
    if (existing) {
      const refs = existing.metadata.ownerReferences ?? [];
      // Its node selector is what keeps kata pods off nodes without kata: the labels osc's nodes carry
      // are put back (an administrator may add others, narrowing it further).
      const have = existing.scheduling?.nodeSelector ?? {};
      if (refs.some((r) => r.kind === 'KataConfig') && Object.entries(nodeSelector).some(([k, v]) => have[k] !== v)) {
        await client.patch(RuntimeClasses, rt, { scheduling: { nodeSelector } }, { signal });
      }
      // One osc made before it guarded its classes gets the guard (a merge patch replaces the whole list).
      if (refs.some((r) => r.kind === 'KataConfig') && !existing.metadata.deletionTimestamp)
        await addFinalizer(client, RuntimeClasses, existing, RUNTIME_CLASS_CLEANUP_FINALIZER);
      if (!refs.some((r) => r.kind === 'KataConfig') || refs.some((r) => r.kind === 'KataConfig' && r.uid === owner.uid)) return;
      const ownerReferences = [...refs.filter((r) => r.kind !== 'KataConfig'), owner];
      await client.patch(RuntimeClasses, rt, { metadata: { ownerReferences } }, { signal });
      return;
    }
    const rc: RuntimeClass = {
      // The finalizer keeps the class while pods use it, whoever deletes it (runtimeclass-cleanup.ts).
      metadata: { name: rt, ownerReferences: [owner], finalizers: [RUNTIME_CLASS_CLEANUP_FINALIZER] },
      handler: spec.handler,
      ...(spec.overhead ? { overhead: { podFixed: { ...spec.overhead } } } : {}),
      scheduling: { nodeSelector: spec.nodeSelector },
    };
    await this.deps.writer.create(RuntimeClasses, rc, signal);
  }

  /** Deletes a RuntimeClass osc made; one someone else made is not ours to delete. */
  async deleteOwn(name: string, signal: AbortSignal): Promise<void> {
    const { client } = this.deps;
    const existing = this.deps.runtimeClasses.get(name) ?? (await client.find(RuntimeClasses, name, undefined, signal));
    if (existing?.metadata.ownerReferences?.some((o) => o.kind === 'KataConfig')) await client.delete(RuntimeClasses, name, { signal });
  }
}
