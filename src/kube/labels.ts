import type { LabelSelector } from './types.ts';

/**
 * Label selector semantics as metav1.LabelSelectorAsSelector defines them, except that callers decide what
 * an absent selector means: `undefined`/`null` matches nothing here (the MCO's reading); the KataConfig
 * treats an absent kataConfigPoolSelector as "all workers" before calling this.
 */
export function selectorMatches(sel: LabelSelector | undefined | null, labels: Record<string, string> | undefined): boolean {
  if (!sel) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const r of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(l, r.key);
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
        if (!has || !values.includes(l[r.key] as string)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(l[r.key] as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** "a=b,c in (d,e)": for messages. */
export function selectorString(sel: LabelSelector | undefined | null): string {
  if (!sel) return '<none>';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const r of sel.matchExpressions ?? []) {
    const vs = `(${(r.values ?? []).join(',')})`;
    if (r.operator === 'In') parts.push(`${r.key} in ${vs}`);
    else if (r.operator === 'NotIn') parts.push(`${r.key} notin ${vs}`);
    else if (r.operator === 'Exists') parts.push(r.key);
    else parts.push(`!${r.key}`);
  }
  return parts.join(',') || '<everything>';
}
