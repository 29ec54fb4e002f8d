import { after, before } from 'node:test';
import { Agent, fetch as undiciFetch } from 'undici';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { DevCluster, type DevClusterOptions } from '../../src/devcluster/devcluster.ts';
import { metricsScraperToken } from '../../src/devcluster/prometheus.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { createOperator, type Operator, type OperatorOptions } from '../../src/operator.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { RuntimeMetrics } from '../../src/runtime/metrics.ts';
import { testLogger } from './controlplane.ts';
import { waitFor } from './wait.ts';

/** One dev cluster (real control plane + simulated OpenShift) for a whole test file. */
export function useDevCluster(opts: DevClusterOptions = {}): { readonly dev: DevCluster } {
  const ref: { dev?: DevCluster } = {};
  before(async () => {
    const t0 = Date.now();
    ref.dev = await DevCluster.start({ rebootMs: 400, pickupDelayMs: 100, log: testLogger(), ...opts });
    console.log(`# dev cluster: kube-apiserver ${ref.dev.controlPlane.version}, ready in ${Date.now() - t0} ms`);
  });
  after(() => ref.dev?.stop());
  return {
    get dev(): DevCluster {
      if (!ref.dev) throw new Error('dev cluster not started yet');
      return ref.dev;
    },
  };
}

export interface RunningOperator {
  operator: Operator;
  stop(): Promise<void>;
}

/** Runs the operator in this process against the dev cluster, as `osc run` would (webhooks on loopback). */
export async function startOperator(dev: DevCluster, opts: Partial<OperatorOptions> = {}): Promise<RunningOperator> {
  const operator = await createOperator({
    kubeConfig: dev.controlPlane.kubeConfig,
    log: testLogger(),
    leaderElection: false,
    metricsAddress: '127.0.0.1:0',
    healthAddress: '',
    webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}' },
    metrics: new RuntimeMetrics(),
    // As osc start runs it: the leaked pod VM collector talks to the dev cluster's cloud endpoint.
    ...(dev.cloudAPIServer ? { leakedVMs: { endpoint: dev.cloudAPI } } : {}),
    ...opts,
  });
  const ac = new AbortController();
  const run = operator.run(ac.signal);
  return {
    operator,
    stop: async () => {
      ac.abort();
      await run;
    },
  };
}

/** The parts of a KataConfig status the documents show (times dropped), as one comparable value. */
export function statusView(kc: KataConfig) {
  const c = kc.status?.conditions?.find((x) => x.type === 'InProgress');
  return {
    inProgress: c ? { status: c.status, reason: c.reason, message: c.message } : undefined,
    kataNodes: kc.status?.kataNodes,
    runtimeClasses: kc.status?.runtimeClasses,
  };
}
export type StatusView = ReturnType<typeof statusView>;

/** Records every distinct status a KataConfig goes through, from a watch (nothing is missed or sampled). */
export class StatusRecorder {
  readonly seen: StatusView[] = [];
  readonly deleted: boolean[] = [];
  private readonly ac = new AbortController();
  private readonly informer: Informer<KataConfig>;
  private readonly run: Promise<void>;

  constructor(client: KubeClient, name: string) {
    this.informer = new Informer(client, KataConfigs, { fieldSelector: `metadata.name=${name}` });
    const push = (kc: KataConfig) => {
      const v = statusView(kc);
      const last = this.seen.at(-1);
      if (!last || JSON.stringify(last) !== JSON.stringify(v)) this.seen.push(v);
    };
    this.informer.addEventHandler({ add: push, update: (_o, n) => push(n), delete: () => this.deleted.push(true) });
    this.run = this.informer.run(this.ac.signal);
  }

  get current(): KataConfig | undefined {
    return this.informer.list()[0];
  }

  synced(): Promise<boolean> {
    return this.informer.waitForSync();
  }

  async stop(): Promise<void> {
    this.ac.abort();
    await this.run;
  }
}

/** Whether `expected` occurs in `seen` in order (other states may come between). */
export function inOrder<T>(seen: readonly T[], expected: readonly ((s: T) => boolean)[]): { ok: boolean; matched: number } {
  let i = 0;
  for (const s of seen) if (i < expected.length && expected[i]?.(s)) i++;
  return { ok: i === expected.length, matched: i };
}

/**
 * The operator, in this process, for a whole test file on a dev cluster, with a StatusRecorder on the
 * KataConfig named `name`. Call at the top of a describe, after useDevCluster.
 */
export function useOperator(
  cluster: { readonly dev: DevCluster },
  name: string,
  options?: (dev: DevCluster) => Partial<OperatorOptions>,
): { readonly op: RunningOperator; readonly recorder: StatusRecorder } {
  const ref: { op?: RunningOperator; recorder?: StatusRecorder } = {};
  before(async () => {
    ref.op = await startOperator(cluster.dev, options?.(cluster.dev));
    ref.recorder = new StatusRecorder(cluster.dev.client, name);
    await ref.recorder.synced();
  });
  after(async () => {
    await ref.recorder?.stop();
    await ref.op?.stop();
  });
  return {
    get op(): RunningOperator {
      if (!ref.op) throw new Error('operator not started yet');
      return ref.op;
    },
    get recorder(): StatusRecorder {
      if (!ref.recorder) throw new Error('recorder not started yet');
      return ref.recorder;
    },
  };
}

const scraperTokens = new WeakMap<DevCluster, Promise<string>>();

/**
 * The operator's /metrics as a scraper gets it: over HTTPS, verified against the operator's CA, with the
 * token of a ServiceAccount bound to osc-metrics-reader (made once per dev cluster).
 */
export async function scrapeMetrics(dev: DevCluster, operator: Operator, token?: string): Promise<{ status: number; text: string }> {
  const endpoint = await waitFor(() => operator.manager.metricsEndpoint, { message: "the operator's metrics server listening" });
  if (!endpoint.secure) return { status: 200, text: await (await fetch(`http://${endpoint.address}/metrics`)).text() };
  let t = token;
  if (t === undefined) {
    let p = scraperTokens.get(dev);
    if (!p) {
      p = metricsScraperToken(dev.client, OPERATOR_NAMESPACE, 1);
      scraperTokens.set(dev, p);
    }
    t = await p;
  }
  const dispatcher = new Agent({ connect: { ca: operator.metricsCA } });
  try {
    const res = await undiciFetch(`https://${endpoint.address}/metrics`, {
      headers: t ? { authorization: `Bearer ${t}` } : {},
      dispatcher,
    });
    return { status: res.status, text: await res.text() };
  } finally {
    await dispatcher.close();
  }
}
