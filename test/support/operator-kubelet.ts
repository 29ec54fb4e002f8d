/**
 * The operator's pods played by processes, as their kubelet would run them: kwok schedules the Deployment's
 * pods but runs no containers, so this runs one `osc run` per scheduled pod (which sources: the caller
 * decides, e.g. by the pod's image), reports the pod Ready once the process serves, stops the process
 * (SIGTERM) when the pod is deleted and reports its exit. A loopback proxy plays the webhook Service. The
 * dev cluster must be started with `callerPlayedPods: OPERATOR_PODS_QUERY`.
 */
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { type Pod, Pods } from '../../src/kube/resources.ts';
import { OscProcess, quickLeaseFlags } from './cli.ts';
import type { ServiceProxy } from './serviceproxy.ts';

const NS = OPERATOR_NAMESPACE;
export const OPERATOR_PODS = 'app.kubernetes.io/name=osc,app.kubernetes.io/component=operator';
/** For DevClusterOptions.callerPlayedPods: the operator's pods. */
export const OPERATOR_PODS_QUERY =
  '.metadata.labels["app.kubernetes.io/name"] == "osc" and .metadata.labels["app.kubernetes.io/component"] == "operator"';

export interface Replica {
  pod: string;
  node: string;
  /** The image of the pod's first container (what the process stands for). */
  image: string;
  proc: OscProcess;
  ready: boolean;
  terminating: boolean;
  exitReported: boolean;
  /** How often its process died and was started again, as a kubelet restarts a crashed container. */
  restarts: number;
}

export const alive = (r: Replica): boolean => r.proc.child.exitCode === null && r.proc.child.signalCode === null;
const webhookPort = (r: Replica) => Number(/"webhookPort":(\d+)/.exec(r.proc.stdout)?.[1] ?? 0);
const now = () => new Date().toISOString();

/** The `osc run` arguments of one replica, its webhooks registered at the Service the proxy plays. */
export function replicaArgs(kubeconfig: string, servicePort: number): string[] {
  return [
    // Replicas killed mid-upgrade: a crashed leader's lease is taken within seconds (quickLeaseFlags).
    ...['run', '--kubeconfig', kubeconfig, '--namespace', NS, '--leader-elect', ...quickLeaseFlags()],
    ...['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--webhook-bind-address', '127.0.0.1:0'],
    ...['--webhook-url', `https://127.0.0.1:${servicePort}`],
  ];
}

export class OperatorKubelet {
  readonly replicas = new Map<string, Replica>();
  private readonly stopped = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly dev: DevCluster;
  private readonly service: ServiceProxy;
  private readonly spawn: (pod: Pod, args: string[]) => OscProcess;
  /** While this says so for a replica, its pod is not reported Ready (its process runs all the same). */
  holdReady: (r: Replica) => boolean = () => false;

  constructor(
    dev: DevCluster,
    service: ServiceProxy,
    spawn: (pod: Pod, args: string[]) => OscProcess = (_pod, args) => new OscProcess(args),
  ) {
    this.dev = dev;
    this.service = service;
    this.spawn = spawn;
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped.signal.aborted) {
        await this.sync().catch((e) => console.log(`# kubelet sync: ${errorMessage(e)}`));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
    for (const r of this.replicas.values()) r.proc.kill('SIGTERM');
    await Promise.all([...this.replicas.values()].map((r) => r.proc.exited));
  }

  /** The replica whose running process leads. */
  leader(): Replica | undefined {
    return [...this.replicas.values()].find((r) => alive(r) && !r.terminating && r.proc.stdout.includes('"became leader"'));
  }

  /** The replicas whose pods run and are not terminating. */
  running(): Replica[] {
    return [...this.replicas.values()].filter((r) => alive(r) && !r.terminating);
  }

  private async setStatus(pod: Pod, status: Record<string, unknown>): Promise<void> {
    await this.dev.client.patch(
      Pods,
      pod.metadata.name ?? '',
      { status },
      { namespace: NS, subresource: 'status', type: 'strategic', fieldManager: 'kubelet' },
    );
  }

  private async sync(): Promise<void> {
    const pods = (await this.dev.client.list(Pods, { namespace: NS, labelSelector: OPERATOR_PODS })).items;
    const condition = (type: string, status: string) => ({ type, status, lastTransitionTime: now() });
    for (const pod of pods) {
      const name = pod.metadata.name ?? '';
      let r = this.replicas.get(name);
      if (!r && pod.spec?.nodeName && !pod.metadata.deletionTimestamp) {
        const proc = this.spawn(pod, replicaArgs(this.dev.kubeconfigPath, this.service.port));
        const image = (pod.spec.containers as { image?: string }[] | undefined)?.[0]?.image ?? '';
        r = { pod: name, node: pod.spec.nodeName, image, proc, ready: false, terminating: false, exitReported: false, restarts: 0 };
        this.replicas.set(name, r);
      }
      if (!r) continue;
      if (pod.metadata.deletionTimestamp && !r.terminating) {
        r.terminating = true;
        r.proc.kill('SIGTERM');
        await this.setStatus(pod, { conditions: [condition('Ready', 'False'), condition('ContainersReady', 'False')] });
      } else if (!r.terminating && !alive(r)) {
        // A crashed process: started again, its pod not Ready until the new one is.
        r.proc = this.spawn(pod, replicaArgs(this.dev.kubeconfigPath, this.service.port));
        r.restarts++;
        if (r.ready) {
          r.ready = false;
          await this.setStatus(pod, { conditions: [condition('Ready', 'False'), condition('ContainersReady', 'False')] });
        }
      } else if (!r.terminating && !r.ready && webhookPort(r) && r.proc.stdout.includes('"caches synced"') && !this.holdReady(r)) {
        r.ready = true;
        await this.setStatus(pod, { conditions: [condition('Ready', 'True'), condition('ContainersReady', 'True')] });
      }
      if (r.terminating && !alive(r) && !r.exitReported) {
        r.exitReported = true;
        await this.setStatus(pod, { phase: 'Succeeded', conditions: [condition('Ready', 'False'), condition('ContainersReady', 'False')] });
      }
    }
    // The endpoints controller: ready pods that are not terminating.
    this.service.setEndpoints([...this.replicas.values()].filter((r) => r.ready && !r.terminating && alive(r)).map(webhookPort));
  }
}
