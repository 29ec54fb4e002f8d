/**
 * How each kind of fault is made on the dev cluster and the operator's replicas. A fault either strikes
 * and is over (a kill, a compaction, a clock step) or lasts a while (a partition, throttling, a slow link):
 * then `healed` settles when it is over, and the run does not start its next step before. Convergence is
 * timed from the strike either way. An etcd restore needs the run's snapshots and its administrator, so the
 * run makes it (run.ts, through the StrikeContext).
 */
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { NAMES } from '../../src/install/manifests.ts';
import type { ResourceType } from '../../src/kube/client.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { quickLeaderElection } from '../../src/runtime/leasetimings.ts';
import { MEMORY_LIMIT_BYTES } from './operator.ts';
import type { Replicas } from './replicas.ts';
import type { Fault } from './scenario.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const FlowSchemas: ResourceType = {
  group: 'flowcontrol.apiserver.k8s.io',
  version: 'v1',
  plural: 'flowschemas',
  kind: 'FlowSchema',
  namespaced: false,
};
const PriorityLevels: ResourceType = {
  group: 'flowcontrol.apiserver.k8s.io',
  version: 'v1',
  plural: 'prioritylevelconfigurations',
  kind: 'PriorityLevelConfiguration',
  namespaced: false,
};
const THROTTLE = 'osc-chaos-throttle';

/** How long the webhook stays unreachable: a few seconds, or past the API server's 10 s webhook timeout. */
export function webhookDownMs(f: Fault): number {
  return f.kind === 'webhookOutage' ? 12_000 + f.downMs * 3 : 2000 + f.downMs * 2;
}

export interface Struck {
  /** Settles once a lasting fault is over. */
  healed: Promise<void>;
  /** What was struck, for the progress line. */
  detail?: string;
}

/** What the run itself does for the faults that need its state. */
export interface StrikeContext {
  /** Restores etcd from one of the run's earlier snapshots (run.ts); answers which, for the progress line. */
  restoreEtcd(f: Fault): Promise<string>;
}

export async function strike(f: Fault, dev: DevCluster, set: Replicas, r: () => number, ctx: StrikeContext): Promise<Struck> {
  const done: Struck = { healed: Promise.resolve() };
  // Drawn whether or not a leader is known, so that the seed's later operations and faults do not depend
  // on this moment's leadership.
  const draw = r();
  const target = set.leader() ?? set.replicas[Math.floor(draw * set.replicas.length)];
  switch (f.kind) {
    case 'killOperator':
      await target?.process.kill(f.downMs);
      return { ...done, detail: target?.name };
    case 'restartApiServer':
      await dev.controlPlane.restartApiServer(f.downMs);
      return done;
    case 'compactEtcd':
      await dev.controlPlane.compactEtcd();
      // The watches in flight are at the head; the cut makes each resume from its own, now compacted, version.
      for (const x of set.replicas) x.apiProxy.cutAll();
      return done;
    case 'blackholeWatches':
      for (const x of set.replicas) x.apiProxy.blackholeAll();
      return done;
    case 'webhookDown':
    case 'webhookOutage':
      return done; // made around the operation: admission is what it breaks
    case 'partitionReplica': {
      if (!target) return done;
      // Past the lease: the standby takes over while the partitioned one must stop on its own.
      const holdMs = quickLeaderElection.leaseDurationMs + 5000 + f.downMs;
      target.apiProxy.setMode('blackhole');
      target.apiProxy.blackholeAll();
      const healed = sleep(holdMs).then(() => target.apiProxy.setMode('up'));
      return { healed, detail: `${target.name} for ${(holdMs / 1000).toFixed(0)}s` };
    }
    case 'stepClock': {
      const x = set.replicas[Math.floor(r() * set.replicas.length)];
      if (!x) return done;
      // To a new offset within ±5 minutes of true time: forward or back, by up to ten minutes at once.
      const to = Math.round((r() * 2 - 1) * 300_000);
      const by = to - x.process.clockOffset;
      x.process.stepClock(by);
      return { ...done, detail: `${x.name} by ${(by / 1000).toFixed(0)}s` };
    }
    case 'apiThrottled': {
      // API Priority and Fairness: a priority level with no seats that rejects, for the operator's ServiceAccount.
      const holdMs = 3000 + f.downMs * 2;
      await throttle(dev, true);
      const healed = sleep(holdMs).then(() => throttle(dev, false));
      return { healed, detail: `${(holdMs / 1000).toFixed(0)}s` };
    }
    case 'apiSlow': {
      const delayMs = 1000 + Math.round(f.downMs * 0.7);
      for (const x of set.replicas) x.apiProxy.delayMs = delayMs;
      const healed = sleep(10_000).then(() => {
        for (const x of set.replicas) x.apiProxy.delayMs = 0;
      });
      return { healed, detail: `+${delayMs}ms each way for 10s` };
    }
    case 'oomKill': {
      if (!target) return done;
      const kills = target.process.oomKills;
      const limit = target.process.rss();
      // A limit below what it holds: the watchdog (the kernel's OOM killer) kills it at its next look.
      target.process.setMemoryLimit(Math.max(1, Math.floor(limit / 2)));
      const deadline = performance.now() + 5000;
      while (target.process.oomKills === kills && performance.now() < deadline) await sleep(50);
      target.process.setMemoryLimit(Number.POSITIVE_INFINITY);
      // Back to the Deployment's limit once the new process runs (its start-up peak is not the fault).
      setTimeout(() => target.process.setMemoryLimit(MEMORY_LIMIT_BYTES), 1000).unref();
      return { ...done, detail: target.name };
    }
    case 'restoreEtcd':
      return { ...done, detail: await ctx.restoreEtcd(f) };
  }
}

async function throttle(dev: DevCluster, on: boolean): Promise<void> {
  const c = dev.client;
  if (!on) {
    await c.delete(FlowSchemas, THROTTLE).catch(() => false);
    await c.delete(PriorityLevels, THROTTLE).catch(() => false);
    return;
  }
  await c.apply(PriorityLevels, {
    metadata: { name: THROTTLE },
    spec: {
      type: 'Limited',
      limited: { nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } },
    },
  } as KubeObject);
  await c.apply(FlowSchemas, {
    metadata: { name: THROTTLE },
    spec: {
      matchingPrecedence: 500,
      priorityLevelConfiguration: { name: THROTTLE },
      distinguisherMethod: { type: 'ByUser' },
      rules: [
        {
          subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: NAMES.serviceAccount, namespace: OPERATOR_NAMESPACE } }],
          resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
          nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
        },
      ],
    },
  } as KubeObject);
}
