import { objectName } from '../../api/meta.ts';
import { type SecurityContextConstraints, SecurityContextConstraintsType } from '../../api/scc.ts';
import { type ApplyWrite, type CacheLookup, cacheShows } from '../../runtime/applier.ts';

/**
 * Each of osc's SCCs as the release defines it, applied unless the cache already shows exactly that:
 * missing, edited (a field the release sets changed) or of an older release, it is written.
 */
export function planSCCs(desired: readonly SecurityContextConstraints[], lookup: CacheLookup): ApplyWrite<SecurityContextConstraints>[] {
  return desired
    .map((object) => ({ op: 'apply' as const, resource: SecurityContextConstraintsType, object }))
    .filter((w) => !cacheShows(w, lookup(w.resource, objectName(w.object), undefined)));
}
