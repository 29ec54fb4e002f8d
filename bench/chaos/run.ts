/**
 * The chaos run: on the dev cluster, operations an administrator does (install, logLevel, nodes joining and
 * leaving, selector edits, uninstall, peer pods on and off), each struck at a random moment by a fault
 * (the operator SIGKILLed, the API server restarted, etcd compacted under the watches, the operator's
 * connections black-holed, the webhook unreachable); after each, the cluster must converge to exactly the
 * state the model says. Seeded: the same seed replays the same operations, faults and timings.
 *
 * The operator runs as production runs it (replicas.ts): two replicas with leader election, as the
 * ServiceAccount and least-privilege RBAC `osc install` ships; each reaches the API server through a
 * FaultProxy of its own (for the black holes, cuts, partitions and slow links), and the API server reaches
 * the webhooks through a front that sends each connection to a ready replica. The audit log tells the
 * operator's requests (and their 409s, 429s and 5xx) apart, and each replica's by its User-Agent: from it
 * comes the check that no two leaders ever wrote.
 */

import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { DevCluster } from '../../src/devcluster/devcluster.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { errorMessage } from '../../src/kube/errors.ts';
import { Nodes, Pods } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { INSTALLER_NAME } from '../../src/platform/kubernetes/katadeploy.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { ADMIN_AWS_KEY, act, configurePeerPods, reapplyIntent } from './admin.ts';
import { rbacGaps, readAudit } from './audit.ts';
import { type Difference, differences } from './expected.ts';
import { type StrikeContext, strike, webhookDownMs } from './faults.ts';
import { installLeastPrivilege, Replicas } from './replicas.ts';
import { Backups, reconcilePodVMImages } from './restore.ts';
import {
  applyOperation,
  CHAOS_LABEL,
  type ChaosPlatform,
  describeOperation,
  FAULT_KINDS,
  type FaultKind,
  faultPlan,
  initialModel,
  type Model,
  nextOperation,
  type Operation,
  rng,
} from './scenario.ts';
import { takeSnapshot } from './snapshot.ts';
import { trackReboots, trackReinstalls, type WorkTracker } from './work.ts';

export interface ChaosOptions {
  faults: number;
  seed: number;
  workers?: number;
  /** How long the cluster may take to converge after a fault. */
  convergeTimeoutMs?: number;
  /** Start no new step after this long (the figures then cover the faults injected so far). */
  budgetMs?: number;
  /** The latest a fault strikes after its operation starts. */
  maxFaultDelayMs?: number;
  /** The kinds of fault to inject (default all). */
  kinds?: readonly FaultKind[];
  /** The platform osc runs on, and its RBAC the one `osc install --distribution` ships (default openshift). */
  distribution?: ChaosPlatform;
  log?: Logger;
  /** One line per step (progress). */
  progress?: (line: string) => void;
}

export interface StepResult {
  step: number;
  operation: string;
  fault: FaultKind;
  /** Which replica the fault struck, and how hard. */
  detail?: string;
  converged: boolean;
  /**
   * From the fault to convergence: from its strike, or for a webhook outage from the webhook's return (the
   * administrator's operation cannot be made before; its duration is the fault's, not recovery).
   */
  convergeMs: number;
  /** From the strike, whatever the fault. */
  fromStrikeMs: number;
  /** What was still wrong at the deadline. */
  left: Difference[];
}

export interface ChaosReport {
  platform: ChaosPlatform;
  seed: number;
  faults: number;
  faultsByKind: Record<string, number>;
  converged: number;
  convergeP50Ms: number;
  convergeP99Ms: number;
  convergeMaxMs: number;
  /** Objects osc made that should be gone, at the end of steps that did not converge and at the end of the run. */
  leaks: string[];
  /**
   * Work done twice: on OpenShift node reboots that did not change the node's configuration, on Kubernetes
   * kata-deploy install runs that put on a node the configuration it already ran (work.ts).
   */
  needlessRuns: number;
  /** Each needless run's node and the steps it came in (work.ts). */
  needlessDetail: string[];
  /** Kubernetes: runs of a second installer pod the DaemonSet controller made beside a live one (work.ts), not counted as needless. */
  duplicatePodRuns: string[];
  /** Reboots under way at an etcd restore, whose need cannot be told (work.ts). */
  unjudgedRuns: string[];
  /** Reboots (OpenShift) or kata-deploy install runs (Kubernetes). */
  runs: number;
  /** etcd restores. */
  restores: number;
  /**
   * After them, pod VM images no restored PODVM_AMI_ID named (deleted by the administrator: osc has no other
   * record of them), and restored PODVM_AMI_IDs naming an image gone (emptied by the administrator).
   */
  imagesOrphanedByRestores: number;
  amiIdsDanglingAfterRestores: number;
  /** The extension MachineConfig created more often than the KataConfig was installed, or rewritten. */
  machineConfigCreates: number;
  machineConfigRewrites: number;
  installs: number;
  operatorRequests: number;
  operator5xx: number;
  operator409: number;
  operator429: number;
  /** Requests answered 403 (also while an API server that just restarted fills its authorizer's caches). */
  operator403: number;
  /** Forbidden requests the shipped RBAC indeed does not allow (asked of the API server after the run). Must be none. */
  rbacGaps: string[];
  /** Each replica's share of the operator's requests (by User-Agent). */
  requestsByReplica: Record<string, number>;
  /** Writes by a replica that did not hold the lease at the time (the audit log): must be none. */
  doubleLeaderWrites: string[];
  /** Times a replica became leader, and lost the lease (and stopped). */
  leaderships: number;
  leadershipsLost: number;
  oomKills: number;
  /** The largest resident memory a replica reached, in MiB. */
  peakRssMiB: number;
  relistsOnGone: number;
  silentWatchesDetected: number;
  operatorUnexpectedExits: number;
  webhookRefusals: number;
  steps: StepResult[];
  elapsedS: number;
}

const NS = OPERATOR_NAMESPACE;
const KC = 'chaos';
const OPERATOR_USER = `system:serviceaccount:${NS}:${NAMES.serviceAccount}`;
const REPLICAS = ['osc-controller-manager-chaos-a', 'osc-controller-manager-chaos-b'];
/** The faults that restart kube-apiserver, and how far apart they are kept (client-go forgets its backoff after 2 minutes). */
const API_RESTARTS: ReadonlySet<FaultKind> = new Set(['restartApiServer', 'restoreEtcd']);
const API_RESTART_SPACING_MS = 120_000;
/** A step not converged this long after its fault says what is still wrong (where the time goes). */
const SLOW_MS = 30_000;
const clock = () => new Date().toISOString().slice(11, 19);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitUntil(fn: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await sleep(100);
  }
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number;
};

export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const progress = opts.progress ?? (() => {});
  const r = rng(opts.seed);
  const dir = mkdtempSync(join(tmpdir(), 'osc-chaos-'));
  const auditLog = join(dir, 'audit.log');
  writeFileSync(
    join(dir, 'audit-policy.yaml'),
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived, ResponseStarted]',
      'rules:',
      // The Lease's bodies: a write that names no holder is a release (the lease is nobody's until taken).
      '- level: Request',
      `  users: ["${OPERATOR_USER}"]`,
      '  verbs: [update, patch]',
      '  resources: [{group: coordination.k8s.io, resources: [leases]}]',
      '- level: Metadata',
      `  users: ["${OPERATOR_USER}"]`,
      // Where a step's time goes when the cluster, not osc, is slow (a Job's pod made, bound, started late).
      '- level: Metadata',
      '  verbs: [create, update, patch, delete]',
      '  resources: [{group: "", resources: [pods, pods/binding, pods/status]}, {group: batch, resources: [jobs, jobs/status]}]',
      '- level: None',
      '',
    ].join('\n'),
  );
  const platform = opts.distribution ?? 'openshift';
  const apiserverArgs = [
    `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
    `--audit-log-path=${auditLog}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    // Watches are served from etcd: a compaction then reaches them as 410 Gone, as it does through the
    // watch cache once the cache's window has moved past a watcher's resource version.
    '--watch-cache=false',
  ];
  // The dev cluster's log and the control plane's logs stay in the run's directory (kept with OSC_CHAOS_KEEP=1).
  const devLog = opts.log ? undefined : createWriteStream(join(dir, 'devcluster.log'));
  const dev = await DevCluster.start({
    workers: opts.workers ?? 3,
    log: opts.log ?? createLogger({ level: 'info', destination: devLog }),
    logDir: dir,
    apiserverArgs,
    ...(platform === 'kubernetes'
      ? {
          distribution: 'kubernetes' as const,
          kataDeploy: { installMs: 500, cleanupMs: 300, restartBackoffMs: 1000 },
          // kata-deploy's identity comes with `osc install --distribution kubernetes` (below), not the dev cluster.
          kataDeployIdentity: false,
        }
      : {
          rebootMs: 300,
          pickupDelayMs: 100,
          platform: 'AWS' as const,
          // The administrator's IAM user whose key peer-pods-secret holds (below).
          awsUsers: [ADMIN_AWS_KEY],
          podvmImageJobMs: 300,
        }),
  });
  const c = dev.client;
  const stopInformers = new AbortController();
  let replicas: Replicas | undefined;
  try {
    // The operator's identity and RBAC as `osc install` ships them, and (OpenShift) the peer pods configuration.
    const token = await installLeastPrivilege(dev, platform, NS);
    if (platform === 'openshift') await configurePeerPods(dev);
    await c.patch(Nodes, 'worker-0', { metadata: { labels: { [CHAOS_LABEL]: 'kata' } } });

    // The leaked pod VM collector asks the dev cluster's cloud API, as `osc start` points it there.
    const extraArgs: string[] = [];
    if (platform === 'openshift') {
      const ca = join(dir, 'cloud-api-ca.pem');
      writeFileSync(ca, dev.cloudAPI.ca);
      extraArgs.push('--cloud-api-endpoint', dev.cloudAPI.url, '--cloud-api-ca-file', ca);
    }
    replicas = await Replicas.start({ dev, dir, token, namespace: NS, names: REPLICAS, extraArgs });
    const set = replicas;
    // Admission holds from the first KataConfig on once the leader has registered the webhooks.
    await waitUntil(() => !!set.leader() && set.replicas.every((x) => x.ready), 120_000, 'a leader, and both replicas ready');
    const webhookFront = set.front;

    // Work done twice (work.ts); the harness's own informers, which an etcd restore makes list again.
    const watched: Informer<KubeObject>[] = [dev.informers.nodes as Informer<KubeObject>];
    let work: WorkTracker;
    if (platform === 'kubernetes') {
      const installerPods = new Informer(c, Pods, { namespace: NS, labelSelector: `name=${INSTALLER_NAME}` });
      void installerPods.run(stopInformers.signal);
      await installerPods.waitForSync(stopInformers.signal);
      watched.push(installerPods as Informer<KubeObject>);
      work = trackReinstalls(dev.informers.nodes, installerPods);
    } else {
      work = trackReboots(dev);
    }

    const snapshot = () => takeSnapshot(dev, KC);

    /** Waits until the cluster matches the model; answers what is still wrong at the deadline (empty: converged). */
    const converge = async (m: Model, timeoutMs: number, slow: (left: Difference[]) => void): Promise<Difference[]> => {
      const deadline = Date.now() + timeoutMs;
      let reportAt = Date.now() + SLOW_MS;
      let last: Difference[] = [{ what: 'not checked yet', leak: false }];
      for (;;) {
        try {
          last = differences(m, await snapshot());
          if (last.length === 0) return last;
        } catch (e) {
          last = [{ what: `snapshot failed: ${errorMessage(e)}`, leak: false }];
        }
        if (Date.now() > deadline) return last;
        if (Date.now() > reportAt) {
          slow(last);
          reportAt = Infinity;
        }
        await sleep(500);
      }
    };

    let webhookRefusals = 0;
    /** The administrator's action, retried while admission or the API server refuses it (as a user retries). */
    const retrying = async (what: string, fn: () => Promise<void>, timeoutMs = 120_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          await fn();
          return;
        } catch (e) {
          if (/webhook/i.test(errorMessage(e))) webhookRefusals++;
          if (Date.now() > deadline) throw new Error(`${what} still failing after ${timeoutMs / 1000}s: ${errorMessage(e)}`);
          await sleep(500);
        }
      }
    };
    const perform = (op: Operation) => retrying(describeOperation(op), () => act(dev, op, KC));
    let workerSeq = opts.workers ?? 3;
    const nextWorker = () => `worker-${workerSeq++}`;
    let model = initialModel(opts.workers ?? 3, platform);
    const plan = faultPlan(r, opts.faults, opts.maxFaultDelayMs ?? 3000, opts.kinds ?? FAULT_KINDS);
    // The backups an etcd restore goes back to: one per step, as the step's operation starts (restore.ts).
    const backups = plan.some((f) => f.kind === 'restoreEtcd') ? new Backups(dev, dir) : undefined;
    let restores = 0;
    let lastApiRestart = Number.NEGATIVE_INFINITY;
    let imagesOrphaned = 0;
    let imagesDangling = 0;
    const ctx: StrikeContext = {
      restoreEtcd: async (f) => {
        const b = backups?.oldest();
        if (!b) throw new Error('no etcd backup to restore');
        const age = `${((Date.now() - b.at) / 1000).toFixed(0)}s`;
        work.pause();
        await dev.controlPlane.restoreEtcd(b.file, f.downMs);
        restores++;
        let images = '';
        if (platform === 'openshift') {
          const fixed = await reconcilePodVMImages(dev);
          imagesOrphaned += fixed.orphaned.length;
          if (fixed.dangling) imagesDangling++;
          if (fixed.orphaned.length || fixed.dangling)
            images = `; the administrator deleted ${fixed.orphaned.length} pod VM image(s) PODVM_AMI_ID no longer names${fixed.dangling ? `, emptied PODVM_AMI_ID naming ${fixed.dangling}, gone` : ''}`;
        }
        return `to step ${b.step}'s backup, ${age} old${images}`;
      },
    };
    const steps: StepResult[] = [];
    const leaks = new Set<string>();
    let installs = 0;
    const timeout = opts.convergeTimeoutMs ?? 360_000;
    progress(`# chaos: seed ${opts.seed}, ${opts.faults} faults, ${model.workers.length} workers, dir ${dir}`);

    for (const [i, fault] of plan.entries()) {
      work.atStep(i + 1);
      if (opts.budgetMs !== undefined && Date.now() - started > opts.budgetMs) {
        progress(`# time budget spent: stopping after ${i} of ${plan.length} faults`);
        break;
      }
      // The run packs faults seconds apart where production sees them minutes or days apart: a replica's
      // crash-loop backoff from the faults before (the kubelet forgets it after 10 minutes of running) would
      // measure that packing, not this fault.
      set.betweenFaults();
      // Likewise the dev cluster's own controllers (client-go reflectors in the controller manager, the
      // scheduler, kwok) back off up to 30 s over API server restarts less than two minutes apart (a Job's pod
      // then came a minute late): the two faults that restart the API server are kept two minutes apart.
      if (API_RESTARTS.has(fault.kind)) {
        const wait = lastApiRestart + API_RESTART_SPACING_MS - Date.now();
        if (wait > 0) progress(`    ${clock()} waiting ${(wait / 1000).toFixed(0)}s: two minutes since the last API server restart`);
        await sleep(Math.max(0, wait));
      }
      const op = nextOperation(model, r, nextWorker);
      if (op.kind === 'install') installs++;
      const t0 = Date.now();
      let injectedAt: number;
      let detail: string | undefined;
      let healed: Promise<void> = Promise.resolve();
      let webhookBackAt: number | undefined;
      if (fault.kind === 'webhookDown' || fault.kind === 'webhookOutage') {
        // The webhook unreachable (connections refused, or accepted and never answered) while the operation is made.
        const mode = fault.downMs % 2 === 0 ? 'refuse' : 'blackhole';
        webhookFront.setMode(mode);
        webhookFront.blackholeAll();
        injectedAt = Date.now();
        detail = `${mode} for ${(webhookDownMs(fault) / 1000).toFixed(0)}s`;
        healed = sleep(webhookDownMs(fault)).then(() => {
          webhookFront.setMode('up');
          webhookBackAt = Date.now();
        });
        await perform(op);
      } else {
        await perform(op);
        await backups?.take(i + 1);
        await sleep(Math.max(0, t0 + fault.afterMs - Date.now()));
        injectedAt = Date.now();
        const listedBefore = watched.map((x) => x.stats.lists);
        ({ healed, detail } = await strike(fault, dev, set, r, ctx));
        if (fault.kind === 'restoreEtcd') {
          // The administrator applies the intent again; the trackers take the restored cluster as their baseline
          // once the harness's own informers have listed it.
          const next = applyOperation(model, op);
          await retrying('applying the intent again after the restore', () => reapplyIntent(dev, next, KC), timeout);
          await waitUntil(
            // Each has listed since (after a 410 Gone, or asked to by the restore: KubeClient.relistAll).
            () => watched.every((x, i) => x.stats.lists > (listedBefore[i] ?? 0)),
            120_000,
            "the harness's informers to list the restored store",
          ).catch((e) => progress(`    ${errorMessage(e)}`));
          work.resume();
        }
      }
      model = applyOperation(model, op);
      const left = await converge(model, timeout, (l) =>
        progress(`    ${clock()} still converging after ${SLOW_MS / 1000}s: ${l.map((d) => d.what).join('; ')}`),
      );
      const convergedAt = Date.now();
      if (API_RESTARTS.has(fault.kind)) lastApiRestart = convergedAt;
      const fromStrikeMs = convergedAt - injectedAt;
      const webhook = fault.kind === 'webhookDown' || fault.kind === 'webhookOutage';
      const convergeMs = webhook ? Math.max(0, convergedAt - (webhookBackAt ?? convergedAt)) : fromStrikeMs;
      await healed;
      for (const d of left) if (d.leak) leaks.add(d.what);
      const step: StepResult = {
        step: i + 1,
        operation: describeOperation(op),
        fault: fault.kind,
        ...(detail ? { detail } : {}),
        converged: left.length === 0,
        convergeMs,
        fromStrikeMs,
        left,
      };
      steps.push(step);
      progress(
        `${String(i + 1).padStart(3)} ${clock()} ${step.operation.padEnd(36)} ${`${fault.kind}${detail ? ` (${detail})` : ''}`.padEnd(40)} ${step.converged ? `converged in ${(convergeMs / 1000).toFixed(1)}s${webhook ? ` after the webhook's return (${(fromStrikeMs / 1000).toFixed(1)}s from the fault)` : ''}` : `NOT CONVERGED: ${left.map((d) => d.what).join('; ')}`}`,
      );
    }
    // The end: everything uninstalled, and nothing of osc's left anywhere.
    if (model.installed) {
      await perform({ kind: 'uninstall' });
      model = applyOperation(model, { kind: 'uninstall' });
    }
    const finalLeft = await converge(model, timeout, () => {});
    for (const d of finalLeft) if (d.leak) leaks.add(d.what);
    if (finalLeft.length) progress(`final uninstall did not converge: ${finalLeft.map((d) => d.what).join('; ')}`);
    const done = work.totals();

    await set.stop();
    const audit = readAudit(auditLog, OPERATOR_USER);
    const peakRss = Math.max(...set.replicas.map((x) => x.process.peakRss));
    const byKind: Record<string, number> = {};
    for (const st of steps) byKind[st.fault] = (byKind[st.fault] ?? 0) + 1;
    const times = steps.filter((s) => s.converged).map((s) => s.convergeMs);
    return {
      platform,
      seed: opts.seed,
      faults: steps.length,
      faultsByKind: byKind,
      converged: steps.filter((s) => s.converged).length,
      convergeP50Ms: pct(times, 50),
      convergeP99Ms: pct(times, 99),
      convergeMaxMs: times.length ? Math.max(...times) : Number.NaN,
      leaks: [...leaks],
      needlessRuns: done.needless,
      needlessDetail: done.needlessDetail,
      duplicatePodRuns: done.duplicatePodRuns,
      unjudgedRuns: done.unjudged,
      runs: done.runs,
      restores,
      imagesOrphanedByRestores: imagesOrphaned,
      amiIdsDanglingAfterRestores: imagesDangling,
      machineConfigCreates: done.machineConfigCreates,
      machineConfigRewrites: done.machineConfigRewrites,
      installs,
      operatorRequests: audit.total,
      operator5xx: audit.s5xx,
      operator409: audit.s409,
      operator429: audit.s429,
      operator403: audit.s403,
      rbacGaps: await rbacGaps(c, OPERATOR_USER, audit.forbidden),
      requestsByReplica: audit.byReplica,
      doubleLeaderWrites: audit.doubleLeaderWrites,
      leaderships: set.sum((p) => p.counts.leaderships),
      leadershipsLost: set.sum((p) => p.counts.leadershipsLost),
      oomKills: set.sum((p) => p.oomKills),
      peakRssMiB: Math.round(peakRss / 1024 / 1024),
      relistsOnGone: set.sum((p) => p.counts.relistsOnGone),
      silentWatchesDetected: set.sum((p) => p.counts.silentWatches),
      operatorUnexpectedExits: set.sum((p) => p.unexpectedExits),
      webhookRefusals,
      steps,
      elapsedS: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    stopInformers.abort();
    await replicas?.stop().catch(() => {});
    await dev.stop();
    devLog?.end();
    if (!process.env.OSC_CHAOS_KEEP) rmSync(dir, { recursive: true, force: true });
  }
}
