import { ACTIVE_POD_PHASES, confidentialTexts, RUNTIME_CLASS_CLEANUP_FINALIZER } from '../../api/confidential.ts';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { type Pod, Pods, type RuntimeClass, RuntimeClasses } from '../../kube/resources.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { hasFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';

export const RUNTIME_CLASS_CLEANUP_CONTROLLER = 'runtimeclass-cleanup';

/** How often a class held by its pods looks again (their deletion also wakes it). */
export const CLEANUP_RECHECK_MS = 10_000;

/** The pods that keep a RuntimeClass: those using it in a phase that still needs the runtime. */
export function activePodsUsing(pods: readonly Pod[], runtimeClass: string): string[] {
  return pods
    .filter((p) => p.spec?.runtimeClassName === runtimeClass && ACTIVE_POD_PHASES.includes(p.status?.phase ?? 'Pending'))
    .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
    .sort();
}

const deleting = (rc: RuntimeClass | undefined): rc is RuntimeClass =>
  !!rc?.metadata.deletionTimestamp && hasFinalizer(rc, RUNTIME_CLASS_CLEANUP_FINALIZER);

/**
 * Releases `kataconfig.openshift.io/runtime-class-cleanup` from a RuntimeClass being deleted once no
 * Running, Pending or Unknown pod uses it, whoever asked for the deletion: the KataConfig's uninstall, a
 * feature gate turned off, an administrator, the garbage collector after the KataConfig went. The caches
 * wake it; a live list of pods decides, so that a pod the cache does not show yet cannot lose its runtime.
 */
export function setupRuntimeClassCleanup(
  mgr: Manager,
  caches: { runtimeClasses: Informer<RuntimeClass>; pods: Informer<Pod>; events: EventRecorder },
  recheckMs = CLEANUP_RECHECK_MS,
): void {
  const { runtimeClasses, pods, events } = caches;
  mgr.addController({
    name: RUNTIME_CLASS_CLEANUP_CONTROLLER,
    watches: [
      { informer: runtimeClasses, keys: (rc) => (deleting(rc) ? [objectName(rc)] : []) },
      // A pod's going may free the class it used.
      {
        informer: pods,
        keys: (p) => (p.spec?.runtimeClassName && deleting(runtimeClasses.get(p.spec.runtimeClassName)) ? [p.spec.runtimeClassName] : []),
      },
    ],
    reconcile: (name, { log, signal }) =>
      releaseWhenUnused({ client: mgr.client, runtimeClasses, pods, events }, name, recheckMs, log, signal),
  });
}

async function releaseWhenUnused(
  deps: { client: KubeClient; runtimeClasses: Informer<RuntimeClass>; pods: Informer<Pod>; events: EventRecorder },
  name: string,
  recheckMs: number,
  log: { info: (o: object, m: string) => void },
  signal: AbortSignal,
): Promise<ReconcileResult | undefined> {
  const { client, runtimeClasses, pods, events } = deps;
  const rc = runtimeClasses.get(name);
  if (!deleting(rc)) return undefined;
  const cached = activePodsUsing(pods.list(), name);
  const live = cached.length ? cached : activePodsUsing((await client.list(Pods, { signal })).items, name);
  if (live.length) {
    log.info({ runtimeClass: name, pods: live.slice(0, 20), count: live.length }, 'RuntimeClass deleted: kept while pods use it');
    // On the class itself, where `kubectl describe runtimeclass` shows why it does not go (one series).
    await events.record(rc, 'Normal', 'WaitingForPods', 'Delete', confidentialTexts.keptForPods(name, live));
    return { requeueAfterMs: recheckMs };
  }
  try {
    await removeFinalizer(client, RuntimeClasses, rc, RUNTIME_CLASS_CLEANUP_FINALIZER);
  } catch (e) {
    if (!isNotFound(e)) throw e;
  }
  log.info({ runtimeClass: name }, 'RuntimeClass deleted: no pod uses it any more, released');
  return undefined;
}
