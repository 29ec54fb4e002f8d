/**
 * Whether two values are the same JSON document: what the API server would store for either. Objects are
 * compared by their fields in any order, a field set to undefined counting as absent and an undefined
 * array element as null (as JSON.stringify writes them); arrays element by element. It answers what a
 * JSON round trip of both and a deep comparison answered, without copying either: a KataConfig status
 * lists up to every node by name, and each pass compares it.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let fields = 0;
  for (const k in x) {
    if (x[k] === undefined) continue;
    fields++;
    if (!Object.hasOwn(y, k) || !sameJson(x[k], y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined) fields--;
  return fields === 0;
}
