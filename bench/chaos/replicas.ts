/**
 * The operator as production runs it, for the chaos run: the ServiceAccount and least-privilege RBAC that
 * `osc install --distribution X` ships (not cluster-admin), and two replicas of `osc run --leader-elect`
 * under that one ServiceAccount, told apart by their pod names (their User-Agent in the audit log). Each
 * replica reaches the API server through a FaultProxy of its own (to partition one, or slow it), and the
 * API server reaches the webhooks through a front that, like a Service, sends each connection to a replica
 * whose /readyz answers 200 (polled as a readiness probe), round robin, and refuses it while none does.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tokenKubeconfigText } from '../../src/devcluster/controlplane/kubectl.ts';
import { freePort } from '../../src/devcluster/controlplane.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { FaultProxy } from '../../src/devcluster/faultproxy.ts';
import { isOptionalAPI } from '../../src/install/apply.ts';
import { manifestFiles, NAMES, toYaml } from '../../src/install/manifests.ts';
import type { PlatformName } from '../../src/platform/platform.ts';
import { quickLeaseFlags } from '../../test/support/cli.ts';
import { OperatorProcess } from './operator.ts';

/** What of `osc install` the chaos run applies: all but the Deployment (its replicas run here) and the
 * webhook registrations by Service (the replicas register theirs by URL, the front's). */
const SKIPPED_FILES = new Set(['30-operator.yaml', '40-webhooks.yaml']);
const READINESS_PERIOD_MS = 500;

export interface Replica {
  name: string;
  process: OperatorProcess;
  /** Its own way to the API server. */
  apiProxy: FaultProxy;
  webhookPort: number;
  healthPort: number;
  ready: boolean;
}

/** Applies the RBAC of `osc install --distribution` and answers a kubeconfig body maker for its ServiceAccount's token. */
export async function installLeastPrivilege(dev: DevCluster, distribution: PlatformName, namespace: string): Promise<string> {
  const files = (await manifestFiles({ distribution })).filter((f) => !SKIPPED_FILES.has(f.file));
  // As `osc install` does on plain Kubernetes: no ServiceMonitor where no Prometheus Operator serves its API.
  const objects = files.flatMap((f) => f.objects).filter((o) => distribution === 'openshift' || !isOptionalAPI(o));
  const applied = await dev.controlPlane.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: toYaml(objects),
  });
  if (applied.code !== 0) throw new Error(`applying osc's install manifests failed: ${applied.stderr}`);
  const token = await dev.controlPlane.kubectl(['create', 'token', NAMES.serviceAccount, '-n', namespace, '--duration=48h']);
  if (token.code !== 0) throw new Error(`no token for ${NAMES.serviceAccount}: ${token.stderr}`);
  return token.stdout.trim();
}

export class Replicas {
  readonly replicas: Replica[];
  /** The webhook Service's stand-in: the API server calls the webhooks here. */
  readonly front: FaultProxy;
  private readonly timer: NodeJS.Timeout;
  private rr = 0;

  private constructor(replicas: Replica[], front: FaultProxy) {
    this.replicas = replicas;
    this.front = front;
    front.route = () => {
      const ready = this.replicas.filter((r) => r.ready);
      if (!ready.length) return undefined;
      return ready[this.rr++ % ready.length]?.webhookPort;
    };
    this.timer = setInterval(() => void this.probe(), READINESS_PERIOD_MS);
    this.timer.unref();
  }

  static async start(opts: {
    dev: DevCluster;
    dir: string;
    token: string;
    namespace: string;
    names: string[];
    extraArgs?: string[];
  }): Promise<Replicas> {
    const { dev, dir } = opts;
    const cp = dev.controlPlane;
    const front = await FaultProxy.start({ port: 1 }); // every connection is routed (below)
    const replicas: Replica[] = [];
    const taken = new Set<number>();
    for (const name of opts.names) {
      const apiProxy = await FaultProxy.start({ port: Number(new URL(cp.apiserverUrl).port) });
      const kubeconfig = join(dir, `${name}.kubeconfig`);
      writeFileSync(kubeconfig, tokenKubeconfigText(apiProxy.url, cp.caPem, opts.token, { user: name, namespace: opts.namespace }), {
        mode: 0o600,
      });
      // Two calls may answer the same port (each closes it before answering): keep them all distinct.
      const webhookPort = await distinctPort(taken);
      const healthPort = await distinctPort(taken);
      const process = new OperatorProcess({
        name,
        logFile: join(dir, `${name}.log`),
        args: [
          ...['--kubeconfig', kubeconfig, '--namespace', opts.namespace, '--leader-elect', ...quickLeaseFlags()],
          ...['--metrics-bind-address', '0', '--health-probe-bind-address', `127.0.0.1:${healthPort}`],
          ...['--webhook-bind-address', `127.0.0.1:${webhookPort}`, '--webhook-url', front.url],
          ...(opts.extraArgs ?? []),
        ],
      });
      replicas.push({ name, process, apiProxy, webhookPort, healthPort, ready: false });
    }
    const set = new Replicas(replicas, front);
    for (const r of replicas) r.process.start();
    return set;
  }

  /** The kubelet's readiness probe, for each replica: /readyz within a second. */
  private async probe(): Promise<void> {
    await Promise.all(
      this.replicas.map(async (r) => {
        if (!r.process.running) {
          r.ready = false;
          return;
        }
        try {
          const res = await fetch(`http://127.0.0.1:${r.healthPort}/readyz`, { signal: AbortSignal.timeout(1000) });
          await res.arrayBuffer();
          r.ready = res.status === 200;
        } catch {
          r.ready = false;
        }
      }),
    );
  }

  /** Between two faults: each replica's crash-loop backoff forgotten (OperatorProcess.forgetBackoff). */
  betweenFaults(): void {
    for (const r of this.replicas) r.process.forgetBackoff();
  }

  /** The replica whose running process leads (undefined while none does). */
  leader(): Replica | undefined {
    return this.replicas.find((r) => r.process.running && r.process.leading);
  }

  get synced(): number {
    return this.replicas.reduce((n, r) => n + r.process.synced, 0);
  }

  sum(f: (p: OperatorProcess) => number): number {
    return this.replicas.reduce((n, r) => n + f(r.process), 0);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.process.stop().catch(() => {})));
    for (const r of this.replicas) await r.apiProxy.close();
    await this.front.close();
  }
}

async function distinctPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (taken.has(port)) continue;
    taken.add(port);
    return port;
  }
}
