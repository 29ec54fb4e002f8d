/**
 * osc's own SecurityContextConstraints, made by the operator where the install could not make them: an OLM
 * bundle cannot carry SCCs (OLM installs a fixed list of kinds), so an operator installed from one runs
 * with `--ensure-sccs` and keeps each of osc's SCCs (src/install/scc.ts) as the release defines it: made
 * when missing, corrected when edited, brought up to the new definition by an upgrade. Observe (one cache
 * per SCC, by name: its RBAC names each), plan (src/controllers/scc/plan.ts, pure), write through the
 * applier. The `use` grants are not the operator's: they ship in the bundle as Roles pinned by name.
 */

import { objectName } from '../../api/meta.ts';
import { SecurityContextConstraintsType } from '../../api/scc.ts';
import { oscSCCs } from '../../install/scc.ts';
import type { KubeObject } from '../../kube/types.ts';
import { Applier, type CacheLookup } from '../../runtime/applier.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { Manager } from '../../runtime/manager.ts';
import { planSCCs } from './plan.ts';

export const SCC_CONTROLLER = 'osc-sccs';
export const SCC_FIELD_MANAGER = 'osc-sccs';
const KEY = 'sccs';

export function setupSCCController(mgr: Manager): void {
  const desired = oscSCCs();
  const applier = new Applier({ client: mgr.client, fieldManager: SCC_FIELD_MANAGER, metrics: mgr.metrics });
  const caches = new Map<string, Informer<KubeObject>>();
  for (const scc of desired) {
    const name = objectName(scc);
    const informer = mgr.informer(SecurityContextConstraintsType, {
      fieldSelector: `metadata.name=${name}`,
    }) as unknown as Informer<KubeObject>;
    applier.watch(SecurityContextConstraintsType, informer);
    caches.set(name, informer);
  }
  const lookup: CacheLookup = (_rt, name) => caches.get(name)?.get(name);
  const controller = mgr.addController({
    name: SCC_CONTROLLER,
    watches: [...caches.values()].map((informer) => ({ informer, keys: () => [KEY] })),
    reconcile: async (_key, { log, signal }) => {
      const writes = planSCCs(desired, lookup);
      if (!writes.length) return undefined;
      const existed = writes.map((w) => !!lookup(w.resource, objectName(w.object), undefined));
      const outcomes = await applier.run(writes, lookup, signal);
      for (const [i, w] of writes.entries())
        if (outcomes[i] === 'written')
          log.info(
            { scc: w.object.metadata.name },
            existed[i] ? 'SecurityContextConstraints corrected' : 'SecurityContextConstraints created',
          );
      return undefined;
    },
  });
  // An SCC that is missing brings no event: the first pass is asked for; so does a write taken back before
  // its cache showed it (an etcd restore).
  controller.queue.add(KEY);
  applier.onUnshownExpired(() => controller.queue.add(KEY));
}
