/**
 * The console's pure logic, shared by the pages and the unit tests: the Create KataConfig form as data,
 * the object it creates, where the API server's refusal belongs in the form, and the node tiles.
 */

import { KATA_NODE_LISTS, KataConfigs, type KataNodeListName } from '../../api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS, KATA_RUNTIME_CLASS } from '../../api/names.ts';
import { type DeadEnd, deadEndOf, LEFT_TO_UNINSTALL_LISTS, leftToUninstall, uninstallProgress } from '../../api/progress.ts';

export type Operator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
export const OPERATORS: Operator[] = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

export interface MatchExpression {
  key: string;
  operator: Operator;
  values: string[];
}

export interface KataConfigForm {
  name: string;
  labels: string;
  checkNodeEligibility: boolean;
  enablePeerPods: boolean;
  matchExpressions: MatchExpression[];
  logLevel: string;
}

export const initialForm = (): KataConfigForm => ({
  name: 'example-kataconfig',
  labels: '',
  checkNodeEligibility: false,
  enablePeerPods: false,
  matchExpressions: [],
  logLevel: 'info',
});

/** Where the console reads and writes KataConfigs, through its proxy to the API server. */
export const KATACONFIG_API = `/apis/${KataConfigs.group}/${KataConfigs.version}/${KataConfigs.plural}`;

/** `app=web, tier=front` (commas or spaces) as a label map; a bare key gets the empty value. */
export function parseLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(/[\s,]+/).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq < 0) out[part] = '';
    else out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/**
 * The KataConfig the form describes, as the API server will receive it. Nothing is checked here: the
 * API server validates, and its answer is shown at the field it names.
 */
export function kataConfigFromForm(f: KataConfigForm): Record<string, unknown> {
  const labels = parseLabels(f.labels);
  const spec: Record<string, unknown> = {
    checkNodeEligibility: f.checkNodeEligibility,
    enablePeerPods: f.enablePeerPods,
    logLevel: f.logLevel,
  };
  if (f.matchExpressions.length > 0) {
    spec.kataConfigPoolSelector = {
      matchExpressions: f.matchExpressions.map((e) => {
        const values = e.values.length > 0 || e.operator === 'In' || e.operator === 'NotIn' ? { values: e.values } : {};
        return { key: e.key, operator: e.operator, ...values };
      }),
    };
  }
  return {
    apiVersion: 'kataconfiguration.openshift.io/v1',
    kind: 'KataConfig',
    metadata: { name: f.name, ...(Object.keys(labels).length ? { labels } : {}) },
    spec,
  };
}

/** A Kubernetes Status (the body of a refused request). */
export interface Status {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { causes?: { reason?: string; message?: string; field?: string }[] };
}

/** Form fields that can carry an error, by the API field path they edit. */
export function formFieldOf(apiField: string): string | undefined {
  const f = apiField.replace(/^\.+/, '');
  if (f === 'metadata.name' || f === 'name') return 'name';
  if (f.startsWith('metadata.labels')) return 'labels';
  if (f === 'spec.checkNodeEligibility') return 'checkNodeEligibility';
  if (f === 'spec.enablePeerPods') return 'enablePeerPods';
  if (f === 'spec.logLevel') return 'logLevel';
  let m = /^spec\.kataConfigPoolSelector\.matchExpressions\[(\d+)\]\.values(\[(\d+)\])?/.exec(f);
  if (m) return m[3] !== undefined ? `matchExpressions.${m[1]}.values.${m[3]}` : `matchExpressions.${m[1]}.values`;
  m = /^spec\.kataConfigPoolSelector\.matchExpressions\[(\d+)\]\.(key|operator)/.exec(f);
  if (m) return `matchExpressions.${m[1]}.${m[2]}`;
  m = /^spec\.kataConfigPoolSelector\.matchExpressions\[(\d+)\]/.exec(f);
  if (m) return `matchExpressions.${m[1]}`;
  if (f.startsWith('spec.kataConfigPoolSelector')) return 'kataConfigPoolSelector';
  return undefined;
}

/**
 * Where each part of a refusal goes: messages per form field, and what names no field (shown at the top).
 * The API server lists one cause per invalid field; an admission webhook answers one message.
 */
export function placeErrors(s: Status): { fields: Record<string, string[]>; general: string[] } {
  const fields: Record<string, string[]> = {};
  const general: string[] = [];
  const causes = s.details?.causes ?? [];
  const named = causes.filter((c) => c.field && c.field !== '<nil>');
  for (const c of causes) {
    const hasField = c.field && c.field !== '<nil>';
    // "Some validation rules were not checked" only says to fix the named fields first.
    if (!hasField && named.length > 0 && /validation rules were not checked/.test(c.message ?? '')) continue;
    const field = hasField ? formFieldOf(c.field as string) : undefined;
    const text = hasField ? `${c.field}: ${c.message ?? c.reason ?? ''}` : (c.message ?? '');
    if (field) (fields[field] ??= []).push(text);
    else general.push(text);
  }
  if (causes.length === 0 || (Object.keys(fields).length === 0 && general.length === 0)) general.push(s.message ?? `refused (${s.code})`);
  else if (Object.keys(fields).length === 0) general.unshift(s.message ?? '');
  return { fields, general: general.filter(Boolean) };
}

/** The form's own findings (validate.ts), placed like the API server's. */
export function placeProblems(problems: readonly { field: string; text: string }[]): {
  fields: Record<string, string[]>;
  general: string[];
} {
  const fields: Record<string, string[]> = {};
  const general: string[] = [];
  for (const p of problems) {
    const field = formFieldOf(p.field);
    if (field) (fields[field] ??= []).push(p.text);
    else general.push(p.text);
  }
  return { fields, general };
}

// ---------------------------------------------------------------------------------------------------------
// Node tiles.

export type TileState = 'waiting' | 'installing' | 'installed' | 'failed' | 'waiting-uninstall' | 'uninstalling' | 'uninstalled';

/** The tile colour each kataNodes list stands for. */
const TILE_OF: Record<KataNodeListName, TileState> = {
  installed: 'installed',
  installing: 'installing',
  waitingToInstall: 'waiting',
  failedToInstall: 'failed',
  uninstalling: 'uninstalling',
  waitingToUninstall: 'waiting-uninstall',
  failedToUninstall: 'failed',
};

/** The legend's entries while installing and while uninstalling. */
export const INSTALL_LEGEND: [TileState, string][] = [
  ['waiting', 'waiting to install'],
  ['installing', 'installing'],
  ['installed', 'installed'],
  ['failed', 'failed'],
];
export const UNINSTALL_LEGEND: [TileState, string][] = [
  ['waiting-uninstall', 'waiting to uninstall'],
  ['uninstalling', 'uninstalling'],
  ['uninstalled', 'uninstalled'],
  ['failed', 'failed'],
];

export interface Tile {
  node: string;
  list: string;
  state: TileState;
  label: string;
}

const byNode = new Intl.Collator(undefined, { numeric: true }).compare;

/**
 * One tile per node named in status.kataNodes, in node order (worker-2 before worker-10). While
 * uninstalling, the status names only the nodes still to go: `uninstalled` (the nodes seen left to
 * uninstall before, see rememberUninstall) keeps a tile for each node that has finished.
 */
export function tilesOf(kataNodes: Record<string, unknown> | undefined, uninstalled: ReadonlySet<string> = new Set()): Tile[] {
  const tiles: Tile[] = [];
  const listed = new Set<string>();
  // In the API's order of the lists, with the API's words for them.
  for (const { list, words } of KATA_NODE_LISTS) {
    const names = kataNodes?.[list];
    if (!Array.isArray(names)) continue;
    for (const node of names) {
      tiles.push({ node: String(node), list, state: TILE_OF[list], label: words });
      listed.add(String(node));
    }
  }
  for (const node of uninstalled) if (!listed.has(node)) tiles.push({ node, list: '', state: 'uninstalled', label: 'uninstalled' });
  return tiles.sort((a, b) => byNode(a.node, b.node));
}

export function tileCounts(tiles: Tile[]): Record<TileState, number> {
  const c: Record<TileState, number> = {
    waiting: 0,
    installing: 0,
    installed: 0,
    failed: 0,
    'waiting-uninstall': 0,
    uninstalling: 0,
    uninstalled: 0,
  };
  for (const t of tiles) c[t.state]++;
  return c;
}

/** Adds to `seen` every node the status names as still to uninstall; answers `seen`. */
export function rememberUninstall(seen: Set<string>, kataNodes: Record<string, unknown> | undefined): Set<string> {
  for (const list of LEFT_TO_UNINSTALL_LISTS) {
    const names = kataNodes?.[list];
    if (Array.isArray(names)) for (const n of names) seen.add(String(n));
  }
  return seen;
}

/** How the header presents a KataConfig: a phase with its tone, a count, and a dead end when there is one. */
export interface Headline {
  phase: string;
  tone: 'progress' | 'done' | 'warning' | 'danger' | 'pending';
  /** `5 of 12 nodes ready`, `3 of 12 nodes uninstalled`. */
  done: number;
  total: number;
  unit: 'ready' | 'uninstalled';
  message: string;
  deadEnd?: DeadEnd;
}

export function headlineOf(kc: KubeLike, seenUninstall: ReadonlySet<string>): Headline {
  const c = conditionOf(kc, 'InProgress');
  const kn = kc.status?.kataNodes ?? {};
  const deleting = !!kc.metadata.deletionTimestamp;
  const message = c?.message ?? '';
  const uninstallPhase = deleting && (c?.reason === 'Uninstalling' || c?.reason === 'BlockedByExistingKataPods');
  if (uninstallPhase) {
    const p = uninstallProgress(leftToUninstall(kn), seenUninstall.size);
    const blocked = c?.reason === 'BlockedByExistingKataPods';
    return {
      phase: blocked ? 'Blocked by existing kata pods' : 'Uninstalling',
      tone: blocked ? 'danger' : 'progress',
      done: p.done,
      total: p.total,
      unit: 'uninstalled',
      message,
    };
  }
  const base = { done: kn.readyNodeCount ?? 0, total: kn.nodeCount ?? 0, unit: 'ready' as const, message };
  if (!c) return { ...base, phase: 'Pending', tone: 'pending' };
  const deadEnd = deadEndOf({
    inProgress: c.status,
    reason: c.reason ?? '',
    deletionRequested: deleting,
    nodeCount: kn.nodeCount ?? 0,
    checkNodeEligibility: kc.spec?.checkNodeEligibility,
    enablePeerPods: kc.spec?.enablePeerPods,
    hasPoolSelector: !!kc.spec?.kataConfigPoolSelector,
  });
  if (deadEnd) return { ...base, phase: 'Action needed', tone: 'warning', deadEnd };
  if (c.status === 'True' && c.reason === 'Failed') return { ...base, phase: 'Failed', tone: 'danger' };
  if (c.status === 'True') return { ...base, phase: c.reason || 'In progress', tone: 'progress' };
  if (c.reason === 'Failed') return { ...base, phase: 'Failed', tone: 'danger' };
  return { ...base, phase: 'Installed', tone: 'done' };
}

/** What headlineOf reads from a KataConfig. */
export interface KubeLike {
  metadata: { deletionTimestamp?: string };
  // biome-ignore lint/suspicious/noExplicitAny: the KataConfig's spec and status as the API server sent them
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: see spec
  status?: any;
}

/**
 * A label selector as one reads it: `custom-kata in (true), gpu notin (a, b), !legacy`. The words are
 * kubectl's selector syntax.
 */
export function selectorText(
  sel: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: Operator; values?: string[] }[] } | undefined,
): string {
  if (!sel) return '';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(', ')})`;
    if (e.operator === 'In') parts.push(`${e.key} in ${values}`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin ${values}`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else parts.push(`!${e.key}`);
  }
  return parts.join(', ');
}

// ---------------------------------------------------------------------------------------------------------
// Pods that use kata.

interface PodLike {
  metadata: { name: string; namespace?: string };
  spec?: { runtimeClassName?: string; nodeName?: string };
}

/**
 * The runtime classes whose pods keep a KataConfig's uninstall waiting: those it made (status.runtimeClasses)
 * and the one its spec asks for, as the operator's deletion guard counts them.
 */
export function guardedRuntimeClasses(kc: KubeLike): Set<string> {
  return new Set<string>([...(kc.status?.runtimeClasses ?? []), kc.spec?.enablePeerPods ? KATA_REMOTE_RUNTIME_CLASS : KATA_RUNTIME_CLASS]);
}

/** The pods that would block the delete of `kc`, by namespace/name. */
export function blockingPods<P extends PodLike>(pods: readonly P[], kc: KubeLike): P[] {
  const classes = guardedRuntimeClasses(kc);
  return pods
    .filter((p) => p.spec?.runtimeClassName && classes.has(p.spec.runtimeClassName))
    .sort((a, b) => byNode(`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`));
}

// ---------------------------------------------------------------------------------------------------------
// Small readers.

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export const conditionOf = (obj: { status?: { conditions?: Condition[] } } | undefined, type: string): Condition | undefined =>
  obj?.status?.conditions?.find((c) => c.type === type);

/** `kubectl get`'s AGE: 45s, 3m, 2h, 4d. */
export function age(timestamp: string | undefined, now = Date.now()): string {
  if (!timestamp) return '';
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Names of metrics that match what the user typed: every word, in any order, case-insensitive. */
export function matchMetricNames(all: readonly string[], typed: string): string[] {
  const words = typed.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [];
  return all.filter((n) => words.every((w) => n.toLowerCase().includes(w)));
}

/**
 * The metrics page's ready-made queries: what the installation is and the peer pods counters worth an alert
 * (docs/console.md). Each plots as soon as it is chosen.
 */
export const METRIC_PRESETS: readonly { id: string; label: string; query: string }[] = [
  { id: 'setup-info', label: 'Installation (osc_setup_info)', query: 'osc_setup_info' },
  { id: 'kata-pods', label: 'Pods by kata RuntimeClass (osc_kata_pods)', query: 'osc_kata_pods' },
  {
    id: 'leaked-vms',
    label: 'Leaked pod VMs (found, deleted, not deleted)',
    query:
      '{__name__=~"osc_peerpods_leaked_vms_found_total|osc_peerpods_leaked_vms_deleted_total|osc_peerpods_leaked_vm_delete_failures_total"}',
  },
  { id: 'adaptor-restarts', label: 'Adaptor restarts (osc_peerpods_adaptor_restarts_total)', query: 'osc_peerpods_adaptor_restarts_total' },
];

/** A query_range step that keeps about 240 points over the range, never below 1s. */
export const stepFor = (rangeSeconds: number): number => Math.max(1, Math.round(rangeSeconds / 240));
