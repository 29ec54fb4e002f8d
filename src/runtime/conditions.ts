import type { Condition } from '../kube/types.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'> & { lastTransitionTime?: string };

/**
 * Sets one condition in a list, answering a new list. lastTransitionTime moves only when the status
 * flips: a change of reason or message alone keeps it, as metav1.Condition's contract says.
 */
export function setCondition(conditions: readonly Condition[] | undefined, input: ConditionInput, now = new Date()): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === input.type);
  const existing = i >= 0 ? list[i] : undefined;
  const lastTransitionTime =
    existing && existing.status === input.status ? existing.lastTransitionTime : (input.lastTransitionTime ?? rfc3339(now));
  const next: Condition = {
    type: input.type,
    status: input.status,
    reason: input.reason,
    message: input.message,
    lastTransitionTime,
    ...(input.observedGeneration !== undefined ? { observedGeneration: input.observedGeneration } : {}),
  };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Seconds precision, as the API server stores metav1.Time. */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
