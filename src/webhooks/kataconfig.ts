import { type KataConfig, messages } from '../api/kataconfig.ts';
import type { AdmissionRequest, Decision } from './admission.ts';

export const KATACONFIG_WEBHOOK_PATH = '/validate-kataconfiguration-openshift-io-v1-kataconfig';

/**
 * Peer pods only where the platform has them (docs/kubernetes.md); the controller says the same of one that
 * got past this check (an update, or the webhook down). Only one KataConfig may exist: a create is refused while another one exists (docs/kataconfig.md, "Validation"). The field-level
 * rules are in the CRD schema, where the API server enforces them without a round trip here.
 */
export function validateKataConfig(
  req: AdmissionRequest<KataConfig>,
  existing: readonly KataConfig[],
  platform: { name: string; supportsPeerPods: boolean } = { name: 'openshift', supportsPeerPods: true },
): Decision {
  if (req.operation !== 'CREATE') return { allowed: true };
  if (req.object?.spec?.enablePeerPods && !platform.supportsPeerPods)
    return { allowed: false, code: 422, reason: 'Invalid', message: messages.peerPodsUnsupported(platform.name) };
  const others = existing.filter((k) => k.metadata.name !== req.name);
  if (others.length > 0) return { allowed: false, code: 403, reason: 'Forbidden', message: messages.duplicate() };
  return { allowed: true };
}

/** Where the webhook sees the KataConfigs that exist: the operator's cache once synced, the API server before. */
export interface KataConfigSource {
  hasSynced: boolean;
  list(): KataConfig[];
  live(): Promise<KataConfig[]>;
  /** Calls back with each KataConfig the cache comes to show (the informer's add events). */
  onCached?(cb: (name: string) => void): void;
}

/** How long an admitted create counts as existing while the cache has not shown it yet. */
export const ADMITTED_CREATE_MS = 10_000;
/** A live read confirming a refusal serves the refusals of this long after it started (a flood costs little). */
export const CONFIRM_REUSE_MS = 250;

/**
 * The KataConfig webhook reading the operator's cache instead of listing per request (anyone who reaches
 * the port can send requests). A cache lags behind the API server both ways:
 * - a create this webhook admitted counts as an existing KataConfig until the cache shows it (or
 *   ADMITTED_CREATE_MS passes, when it was refused further on): a second create in quick succession, even
 *   one that arrives while the first is still being decided, is refused;
 * - a KataConfig just deleted may still be in the cache: a create the cache alone would refuse is decided
 *   again on a live read (one at a time, and shared by the refusals of the next CONFIRM_REUSE_MS), so that
 *   delete-then-create is never refused by a stale cache.
 * Each decision and its record happen in one turn of the event loop.
 */
export function kataConfigAdmission(
  source: KataConfigSource,
  platform: { name: string; supportsPeerPods: boolean },
  now: () => number = () => performance.now(),
) {
  let admitted: { name: string; until: number } | undefined;
  // Once the cache has shown the admitted create, the cache speaks for it: a KataConfig made and deleted
  // again before the next request must not hold its place for the rest of ADMITTED_CREATE_MS.
  source.onCached?.((name) => {
    if (admitted?.name === name) admitted = undefined;
  });
  let confirming: { started: number; items: Promise<KataConfig[]> } | undefined;
  const live = (): Promise<KataConfig[]> => {
    const t = now();
    if (!confirming || t - confirming.started >= CONFIRM_REUSE_MS) confirming = { started: t, items: source.live() };
    return confirming.items;
  };
  const decide = (req: AdmissionRequest<KataConfig>, existing: readonly KataConfig[]) => {
    if (admitted && (admitted.until <= now() || existing.some((k) => k.metadata.name === admitted?.name))) admitted = undefined;
    const pending = admitted ? [{ metadata: { name: admitted.name } } as KataConfig] : [];
    const withoutPending = validateKataConfig(req, existing, platform);
    const decision = pending.length ? validateKataConfig(req, [...existing, ...pending], platform) : withoutPending;
    const name = req.name || req.object?.metadata?.name;
    if (decision.allowed && !req.dryRun && name) admitted = { name, until: now() + ADMITTED_CREATE_MS };
    // Whether the cache alone refused it (not a create this webhook admitted a moment ago).
    return { decision, byCache: !withoutPending.allowed && withoutPending.message === messages.duplicate() };
  };
  return async (req: AdmissionRequest<KataConfig>): Promise<Decision> => {
    if (req.operation !== 'CREATE') return { allowed: true };
    if (!source.hasSynced) return decide(req, await source.live()).decision;
    // From here to the return nothing awaits: no other request is decided in between.
    const first = decide(req, source.list());
    if (first.decision.allowed || !first.byCache) return first.decision;
    return decide(req, await live()).decision;
  };
}
