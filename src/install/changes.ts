/**
 * What an apply changed in one object, said briefly for `osc install`'s report: the paths, among those the
 * manifest sets, whose value differs between the object before and after. Lists of named things
 * (containers, env, ports, volumes, rules with names) are matched by name, so that a path reads
 * `spec.template.spec.containers[manager].image` rather than an index that shifts.
 */

type Json = unknown;

const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const named = (v: Json): v is { name: string } => isObject(v) && typeof v.name === 'string';
const same = (a: Json, b: Json) => JSON.stringify(a) === JSON.stringify(b);

/** Fields the API server keeps for itself: a change there is not one of the manifest's. */
const SERVER_FIELDS = new Set(['resourceVersion', 'managedFields', 'generation', 'uid', 'creationTimestamp', 'status']);

function walk(desired: Json, before: Json, after: Json, path: string, out: string[]): void {
  if (Array.isArray(desired) && desired.length && desired.every(named)) {
    const byName = (list: Json) => new Map((Array.isArray(list) ? list.filter(named) : []).map((x) => [x.name, x]));
    const b = byName(before);
    const a = byName(after);
    // A named entry the new manifest dropped (server-side apply removes what the manager no longer sets).
    if (!same([...b.keys()].sort(), [...a.keys()].sort())) {
      out.push(path);
      return;
    }
    for (const d of desired) walk(d, b.get(d.name), a.get(d.name), `${path}[${d.name}]`, out);
    return;
  }
  if (isObject(desired) && isObject(after)) {
    const b = isObject(before) ? before : {};
    // Map-like fields the manifest sets (labels, annotations, data): a key dropped from them counts too.
    for (const k of new Set([...Object.keys(desired), ...(isObject(before) ? Object.keys(before).filter((k) => !(k in after)) : [])])) {
      if (path === 'metadata' && SERVER_FIELDS.has(k)) continue;
      if (path === '' && (k === 'status' || k === 'apiVersion' || k === 'kind')) continue;
      walk(desired[k], b[k], after[k], path ? `${path}.${k}` : k, out);
    }
    return;
  }
  if (!same(before, after)) out.push(path);
}

/**
 * The paths the manifest `desired` sets whose value changed from `before` to `after` (both as the API server
 * returned them). Empty when only the server's own fields changed (e.g. which manager owns a field).
 */
export function changedPaths(desired: object, before: object, after: object): string[] {
  const out: string[] = [];
  walk(desired, before, after, '', out);
  return out;
}

/** At most `max` paths, then how many more: a report line stays one line. */
export function briefPaths(paths: readonly string[], max = 4): string {
  const shown = paths.slice(0, max).join(', ');
  return paths.length > max ? `${shown} and ${paths.length - max} more` : shown;
}
