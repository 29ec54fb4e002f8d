/**
 * What an operator upgrade test watches: every change to the objects an upgrade must leave alone (counted
 * from watches opened before the upgrade, so that nothing between two looks is missed), the nodes' cordons
 * and reboots, and the new leader's own metrics (its reconciles, to know it has looked at everything, and
 * its writes).
 */

import { Agent, fetch as undiciFetch } from 'undici';
import { METRICS_READER_ROLE, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { KubeClient, ResourceType } from '../../src/kube/client.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { ClusterRoleBindings, type Node, Nodes, ServiceAccounts } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { Replica } from './operator-kubelet.ts';

export interface Change {
  at: number;
  kind: string;
  name: string;
  type: string;
  /** For a modification: the top-level fields that differ from the object's previous version. */
  fields: string[];
}

const key = (o: KubeObject) => `${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/** The fields that differ between two versions of an object, ignoring what the API server keeps for itself. */
function changedFields(before: KubeObject | undefined, after: KubeObject): string[] {
  if (!before) return ['(new)'];
  const out: string[] = [];
  const skip = new Set(['resourceVersion', 'managedFields', 'generation']);
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const k of keys) {
    if (k === 'metadata') {
      for (const m of new Set([...Object.keys(before.metadata), ...Object.keys(after.metadata)])) {
        if (skip.has(m)) continue;
        const a = (before.metadata as Record<string, unknown>)[m];
        const b = (after.metadata as Record<string, unknown>)[m];
        if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`metadata.${m}`);
      }
      continue;
    }
    if (
      JSON.stringify((before as unknown as Record<string, unknown>)[k]) !== JSON.stringify((after as unknown as Record<string, unknown>)[k])
    )
      out.push(k);
  }
  return out;
}

/** Watches objects of several kinds from one moment on and keeps every change. */
export class ChangeWatch {
  readonly changes: Change[] = [];
  private readonly latest = new Map<string, KubeObject>();
  private readonly stopped = new AbortController();
  private readonly runs: Promise<void>[] = [];
  private readonly client: KubeClient;
  constructor(client: KubeClient) {
    this.client = client;
  }

  /** Lists the kind (its current versions) and watches it from there until stopped. */
  async watch(rt: ResourceType, opts: { namespace?: string; labelSelector?: string; filter?: (o: KubeObject) => boolean } = {}) {
    const list = await this.client.list(rt, { namespace: opts.namespace, labelSelector: opts.labelSelector });
    for (const o of list.items) this.latest.set(`${rt.kind}:${key(o)}`, o);
    let rv = list.metadata?.resourceVersion;
    const run = async () => {
      while (!this.stopped.signal.aborted) {
        try {
          await this.client.watch(rt, { ...opts, resourceVersion: rv, signal: this.stopped.signal, timeoutSeconds: 300 }, (ev) => {
            const o = ev.object as KubeObject;
            if (ev.type === 'BOOKMARK') {
              rv = o.metadata.resourceVersion;
              return;
            }
            rv = o.metadata.resourceVersion;
            if (opts.filter && !opts.filter(o)) return;
            const k = `${rt.kind}:${key(o)}`;
            this.changes.push({ at: Date.now(), kind: rt.kind, name: key(o), type: ev.type, fields: changedFields(this.latest.get(k), o) });
            this.latest.set(k, o);
          });
        } catch (e) {
          if (this.stopped.signal.aborted) return;
          console.log(`# watch ${rt.kind}: ${errorMessage(e)}; again from ${rv}`);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    };
    this.runs.push(run());
  }

  /** How many objects of each kind are watched (as first listed, plus any added since). */
  watched(): string {
    const byKind = new Map<string, number>();
    for (const k of this.latest.keys()) {
      const kind = k.slice(0, k.indexOf(':'));
      byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
    }
    return [...byKind].map(([k, n]) => `${n} ${k}`).join(', ');
  }

  async stop(): Promise<Change[]> {
    this.stopped.abort();
    await Promise.allSettled(this.runs);
    return this.changes;
  }
}

export interface NodeRecord {
  cordons: number;
  reboots: number;
  /** Changes of the MCO's per-node annotations (desiredConfig, currentConfig, state). */
  mcoUpdates: number;
}

const ready = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const mcoOf = (n: Node) =>
  JSON.stringify(Object.entries(n.metadata.annotations ?? {}).filter(([k]) => k.startsWith('machineconfiguration.openshift.io/')));

/** Counts, per node, cordons (unschedulable turned on), reboots (Ready turned off) and MCO annotation changes. */
export class NodeWatch {
  readonly byNode = new Map<string, NodeRecord>();
  private readonly last = new Map<string, Node>();
  private readonly stopped = new AbortController();
  private run: Promise<void> | undefined;

  async start(client: KubeClient): Promise<void> {
    const list = await client.list(Nodes);
    for (const n of list.items) this.last.set(n.metadata.name ?? '', n);
    let rv = list.metadata?.resourceVersion;
    this.run = (async () => {
      while (!this.stopped.signal.aborted) {
        try {
          await client.watch(Nodes, { resourceVersion: rv, signal: this.stopped.signal, timeoutSeconds: 300 }, (ev) => {
            const n = ev.object as Node;
            rv = n.metadata.resourceVersion;
            if (ev.type === 'BOOKMARK') return;
            const name = n.metadata.name ?? '';
            const prev = this.last.get(name);
            this.last.set(name, n);
            if (!prev) return;
            const r = this.byNode.get(name) ?? { cordons: 0, reboots: 0, mcoUpdates: 0 };
            if (!prev.spec?.unschedulable && n.spec?.unschedulable) r.cordons++;
            if (ready(prev) && !ready(n)) r.reboots++;
            if (mcoOf(prev) !== mcoOf(n)) r.mcoUpdates++;
            this.byNode.set(name, r);
          });
        } catch (e) {
          if (this.stopped.signal.aborted) return;
          console.log(`# watch nodes: ${errorMessage(e)}`);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    })();
  }

  async stop(): Promise<NodeRecord> {
    this.stopped.abort();
    await this.run;
    const total = { cordons: 0, reboots: 0, mcoUpdates: 0 };
    for (const r of this.byNode.values()) {
      total.cordons += r.cordons;
      total.reboots += r.reboots;
      total.mcoUpdates += r.mcoUpdates;
    }
    return total;
  }
}

const SCRAPER = 'upgrade-test-scraper';

/** A token that may read the operator's /metrics: a ServiceAccount bound to the installed osc-metrics-reader. */
export async function scraperToken(dev: DevCluster): Promise<string> {
  const client = dev.client;
  await client.apply(ServiceAccounts, { metadata: { name: SCRAPER, namespace: 'default' } });
  await client.apply(ClusterRoleBindings, {
    metadata: { name: SCRAPER },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: METRICS_READER_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: SCRAPER, namespace: 'default' }],
  } as never);
  const r = await client.request<{ status?: { token?: string } }>('POST', `${client.path(ServiceAccounts, 'default', SCRAPER)}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return r.status?.token ?? '';
}

/** One replica's /metrics (its certificate is its own: not verified here), as samples `name{labels}` -> value. */
export async function replicaMetrics(r: Replica, token: string): Promise<Map<string, number>> {
  const address = /"address":"([^"]+)","routes":\["\/metrics"\],"tls":true/.exec(r.proc.stdout)?.[1];
  if (!address) throw new Error(`replica ${r.pod} serves no /metrics yet`);
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  try {
    const res = await undiciFetch(`https://${address}/metrics`, { headers: { authorization: `Bearer ${token}` }, dispatcher });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`/metrics of ${r.pod} answered ${res.status}: ${text}`);
    const out = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const i = line.lastIndexOf(' ');
      out.set(line.slice(0, i), Number(line.slice(i + 1)));
    }
    return out;
  } finally {
    await dispatcher.close();
  }
}

/** The sum of the samples of `metric` whose labels match each of `labels` (`k="v"` fragments). */
export function sumOf(samples: Map<string, number>, metric: string, ...labels: string[]): number {
  let sum = 0;
  for (const [k, v] of samples) if (k.startsWith(`${metric}{`) && labels.every((l) => k.includes(l))) sum += v;
  return sum;
}

/** Requests that write nothing of the cluster's: the lease, and the reviews of the test's own /metrics scrapes. */
const SELF = new Set(['leases', 'tokenreviews', 'subjectaccessreviews']);

/** The replica's writes to the API server (not to its lease), as `VERB resource: n`. */
export function writesOf(samples: Map<string, number>): string[] {
  const out: string[] = [];
  for (const [k, v] of samples) {
    const m = /^rest_client_requests_total\{verb="(POST|PUT|PATCH|DELETE)",resource="([^"]+)",code="([^"]+)"\}$/.exec(k);
    if (m && v > 0 && !SELF.has(m[2] ?? '')) out.push(`${m[1]} ${m[2]} (${m[3]}): ${v}`);
  }
  return out;
}

export const NAMESPACE = OPERATOR_NAMESPACE;
