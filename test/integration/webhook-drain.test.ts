/**
 * The admission webhooks fail closed, and a kata install drains worker nodes: draining the node of the
 * operator's leader, mid-install, must not leave them unanswered. The operator is installed as shipped
 * (`osc install`: its Deployment, disruption budget, anti-affinity); kwok schedules its pods but runs no
 * containers, so this test plays their kubelet: it runs one `osc run` process per scheduled pod, reports
 * the pod Ready once the process is, stops the process (SIGTERM) when the pod is deleted and reports its
 * exit. A loopback proxy plays the webhook Service: it sends each connection to a ready replica. Then
 * `kubectl drain` (the Eviction API, honouring disruption budgets) empties the leader's node while a
 * KataConfig dry-run create and a kata-remote pod dry-run create are sent over and over: every one must be
 * answered by the webhooks, and the install must complete. With one replica and no budget, the drain
 * leaves nothing to answer until the replacement pod's process is up, and this test fails.
 */

import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { type Pod, Pods, RuntimeClasses, ValidatingWebhookConfigurations } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { VALIDATING_WEBHOOK_CONFIGURATION } from '../../src/webhooks/setup.ts';
import { OscProcess, runOsc } from '../support/cli.ts';
import { useDevCluster } from '../support/operator.ts';
import { ServiceProxy } from '../support/serviceproxy.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const OPERATOR_PODS = 'app.kubernetes.io/name=osc,app.kubernetes.io/component=operator';
const cluster = useDevCluster({
  workers: 3,
  rebootMs: 1500,
  // The operator's pods: this test runs their processes and reports their status, as their kubelet would.
  callerPlayedPods: '.metadata.labels["app.kubernetes.io/name"] == "osc" and .metadata.labels["app.kubernetes.io/component"] == "operator"',
});

interface Replica {
  pod: string;
  node: string;
  proc: OscProcess;
  ready: boolean;
  terminating: boolean;
  exitReported: boolean;
}

const alive = (r: Replica) => r.proc.child.exitCode === null && r.proc.child.signalCode === null;
const webhookPort = (r: Replica) => Number(/"webhookPort":(\d+)/.exec(r.proc.stdout)?.[1] ?? 0);
const now = () => new Date().toISOString();

/** The kubelet of the operator's pods, for this test: processes for pods, pod status for processes. */
class OperatorKubelet {
  readonly replicas = new Map<string, Replica>();
  private readonly stopped = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly service: ServiceProxy;
  constructor(service: ServiceProxy) {
    this.service = service;
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

  private async setStatus(pod: Pod, status: Record<string, unknown>): Promise<void> {
    await cluster.dev.client.patch(
      Pods,
      pod.metadata.name ?? '',
      { status },
      {
        namespace: NS,
        subresource: 'status',
        type: 'strategic',
        fieldManager: 'kubelet',
      },
    );
  }

  private async sync(): Promise<void> {
    const pods = (await cluster.dev.client.list(Pods, { namespace: NS, labelSelector: OPERATOR_PODS })).items;
    const condition = (type: string, status: string) => ({ type, status, lastTransitionTime: now() });
    for (const pod of pods) {
      const name = pod.metadata.name ?? '';
      let r = this.replicas.get(name);
      if (!r && pod.spec?.nodeName && !pod.metadata.deletionTimestamp) {
        const proc = new OscProcess([
          ...['run', '--kubeconfig', cluster.dev.kubeconfigPath, '--namespace', NS, '--leader-elect'],
          ...['--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '0', '--webhook-bind-address', '127.0.0.1:0'],
          // Registered at the Service, as in a cluster; the proxy plays it.
          ...['--webhook-url', `https://127.0.0.1:${this.service.port}`],
        ]);
        r = { pod: name, node: pod.spec.nodeName, proc, ready: false, terminating: false, exitReported: false };
        this.replicas.set(name, r);
      }
      if (!r) continue;
      if (pod.metadata.deletionTimestamp && !r.terminating) {
        r.terminating = true;
        r.proc.kill('SIGTERM');
        await this.setStatus(pod, { conditions: [condition('Ready', 'False'), condition('ContainersReady', 'False')] });
      } else if (!r.terminating && !r.ready && webhookPort(r) && r.proc.stdout.includes('"caches synced"')) {
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

interface Probe {
  at: number;
  what: string;
  answered: boolean;
  message: string;
}

/** Asks both webhooks, over and over, until stopped: answered means allowed, or denied by the webhook itself. */
function probeWebhooks(): { stop(): Promise<Probe[]> } {
  const probes: Probe[] = [];
  const stopped = new AbortController();
  const client = cluster.dev.client;
  const ask = async (what: string, create: () => Promise<unknown>) => {
    const at = Date.now();
    try {
      await create();
      probes.push({ at, what, answered: true, message: 'allowed' });
    } catch (e) {
      const message = errorMessage(e);
      probes.push({ at, what, answered: /denied the request/.test(message), message });
    }
  };
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      await ask('KataConfig', () =>
        client.create(KataConfigs, { metadata: { name: 'second' }, spec: { checkNodeEligibility: false } } as KataConfig, { dryRun: true }),
      );
      await ask('kata-remote pod', () =>
        client.create(
          Pods,
          {
            metadata: { name: 'probe', namespace: 'default', annotations: { 'io.katacontainers.config.hypervisor.default_vcpus': 'two' } },
            spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'app', image: 'registry.example.com/app:1' }] },
          } as Pod,
          { namespace: 'default', dryRun: true },
        ),
      );
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await loop;
      return probes;
    },
  };
}

describe('the webhooks keep answering while the leader’s node is drained mid-install', () => {
  let service: ServiceProxy | undefined;
  let kubelet: OperatorKubelet | undefined;
  after(async () => {
    await kubelet?.stop();
    await service?.close();
  });
  const kubectl = (args: string[]) => cluster.dev.controlPlane.kubectl(args);

  test('drain the leader’s node during an install: every webhook call answered, the install completes', async () => {
    service = await ServiceProxy.start();
    kubelet = new OperatorKubelet(service);
    // The kata-remote RuntimeClass, so that a kata-remote pod gets past RuntimeClass admission to the webhook.
    await cluster.dev.client.create(RuntimeClasses, {
      metadata: { name: KATA_REMOTE_RUNTIME_CLASS },
      handler: 'kata-remote',
    } as KubeObject);
    const installed = await runOsc(['install', '--kubeconfig', cluster.dev.kubeconfigPath]);
    assert.equal(installed.code, 0, installed.stderr);
    kubelet.start();
    const k = kubelet;
    await waitFor(() => k.leader() && service?.ready.length === [...k.replicas.values()].length && service.ready.length > 0, {
      timeoutMs: 120_000,
      message: 'the replicas ready, one leading',
    });
    const replicas = (await cluster.dev.client.list(Pods, { namespace: NS, labelSelector: OPERATOR_PODS })).items;
    console.log(`# operator pods: ${replicas.map((p) => `${p.metadata.name} on ${p.spec?.nodeName}`).join(', ')}`);
    await waitFor(
      async () => {
        const w = (await cluster.dev.client.get(ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION)) as KubeObject & {
          webhooks?: { clientConfig?: { url?: string } }[];
        };
        return w.webhooks?.[0]?.clientConfig?.url?.startsWith(`https://127.0.0.1:${service?.port}/`);
      },
      { timeoutMs: 60_000, message: 'the webhooks registered at the Service' },
    );

    const probes = probeWebhooks();
    await cluster.dev.client.create(KataConfigs, {
      metadata: { name: 'example' },
      spec: { checkNodeEligibility: false, logLevel: 'info' },
    } as KataConfig);
    await waitFor(async () => (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.kataNodes?.installing?.length, {
      timeoutMs: 120_000,
      message: 'a node installing',
    });

    const leader = k.leader();
    assert.ok(leader);
    const drainStarted = Date.now();
    const drained = await kubectl([
      'drain',
      leader.node,
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      `--pod-selector=${OPERATOR_PODS}`,
      '--timeout=300s',
    ]);
    assert.equal(drained.code, 0, drained.stderr);
    console.log(`# drained ${leader.node} (the leader ${leader.pod}'s) in ${Date.now() - drainStarted} ms`);
    assert.equal(alive(leader), false, 'the drained leader stopped');
    await waitFor(() => k.leader(), { timeoutMs: 120_000, message: 'another replica leads' });
    assert.equal((await kubectl(['uncordon', leader.node])).code, 0);

    await waitFor(
      async () =>
        (await cluster.dev.client.find(KataConfigs, 'example'))?.status?.conditions?.find((c) => c.type === 'InProgress')?.status ===
        'False',
      { timeoutMs: 300_000, message: 'kata installed' },
    );
    const results = await probes.stop();
    assert.deepEqual((await cluster.dev.client.get(KataConfigs, 'example')).status?.kataNodes?.installed, [
      'worker-0',
      'worker-1',
      'worker-2',
    ]);

    const during = results.filter((p) => p.at >= drainStarted);
    assert.ok(during.length >= 10, `${during.length} probes from the drain on`);
    for (const what of ['KataConfig', 'kata-remote pod'])
      assert.ok(
        results.some((p) => p.what === what && p.answered && p.message !== 'allowed'),
        `the ${what} webhook denied what it must`,
      );
    const unanswered = results.filter((p) => !p.answered).map((p) => `${new Date(p.at).toISOString()} ${p.what}: ${p.message}`);
    console.log(`# ${results.length} probes, ${unanswered.length} unanswered; the Service refused ${service.stats.refused} connections`);
    assert.deepEqual(unanswered, [], 'webhook calls left unanswered');
  });
});
