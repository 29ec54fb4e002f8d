/**
 * The console's pure logic, shared by the pages and the unit tests: the Create KataConfig form as data,
 * the object it creates, where the API server's refusal belongs in the form, and the node tiles.
 */

import { KATA_NODE_LISTS, KataConfigs, type KataNodeListName } from '../../api/kataconfig.ts';

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

// ---------------------------------------------------------------------------------------------------------
// Node tiles.

export type TileState = 'waiting' | 'installing' | 'installed' | 'failed' | 'uninstalling';

/** The tile colour each kataNodes list stands for. */
const TILE_OF: Record<KataNodeListName, TileState> = {
  installed: 'installed',
  installing: 'installing',
  waitingToInstall: 'waiting',
  failedToInstall: 'failed',
  uninstalling: 'uninstalling',
  waitingToUninstall: 'waiting',
  failedToUninstall: 'failed',
};

export interface Tile {
  node: string;
  list: string;
  state: TileState;
  label: string;
}

const byNode = new Intl.Collator(undefined, { numeric: true }).compare;

/** One tile per node named in status.kataNodes, in node order (worker-2 before worker-10). */
export function tilesOf(kataNodes: Record<string, unknown> | undefined): Tile[] {
  const tiles: Tile[] = [];
  // In the API's order of the lists, with the API's words for them.
  for (const { list, words } of KATA_NODE_LISTS) {
    const names = kataNodes?.[list];
    if (Array.isArray(names)) for (const node of names) tiles.push({ node: String(node), list, state: TILE_OF[list], label: words });
  }
  return tiles.sort((a, b) => byNode(a.node, b.node));
}

export function tileCounts(tiles: Tile[]): Record<TileState, number> {
  const c: Record<TileState, number> = { waiting: 0, installing: 0, installed: 0, failed: 0, uninstalling: 0 };
  for (const t of tiles) c[t.state]++;
  return c;
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

/** A query_range step that keeps about 240 points over the range, never below 1s. */
export const stepFor = (rangeSeconds: number): number => Math.max(1, Math.round(rangeSeconds / 240));
