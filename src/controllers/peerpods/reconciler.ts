import type { Logger } from 'pino';
import {
  type AnyProviderSpec,
  CCO_NAMESPACE,
  CLOUD_CREDENTIAL_NAME,
  type CloudCredential,
  type CredentialsRequest,
  CredentialsRequests,
} from '../../api/cloudcredential.ts';
import { PEER_PODS_CCO_SECRET } from '../../api/credentials-text.ts';
import { type CaaUpdateStrategy, FEATURE_GATES_CONFIGMAP, parseFeatureGates } from '../../api/featuregates.ts';
import { type KataConfig, KataConfigs, PEERPODS_CONDITIONS } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, PEER_POD_CONFIG, PEER_PODS_CM, PEER_PODS_SECRET } from '../../api/names.ts';
import type { APIServer } from '../../api/openshift.ts';
import { type PeerPodConfig, PeerPodConfigs } from '../../api/peerpodconfig.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import {
  type ConfigMap,
  ConfigMaps,
  type DaemonSet,
  DaemonSets,
  type Job,
  Jobs,
  Namespaces,
  type Node,
  Nodes,
  type Pod,
  type Secret,
} from '../../kube/resources.ts';
import type { Condition, KubeObject } from '../../kube/types.ts';
import { cloudProvider, defaultCloud } from '../../peerpods/clouds/index.ts';
import type { Platform } from '../../platform/platform.ts';
import { Applier, type CacheLookup } from '../../runtime/applier.ts';
import { CLUSTER_APISERVER } from '../../runtime/clustertls.ts';
import { findCondition } from '../../runtime/conditions.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import { addFinalizer, removeFinalizer } from '../../runtime/finalizers.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { RuntimeMetrics } from '../../runtime/metrics.ts';
import { writeStatusIfChanged } from '../../runtime/status.ts';
import { DEFAULT_IMAGES, type ImageJobKind, imageJobName, jobPhase, PEERPODS_FINALIZER, peerPodsStatusShare } from './desired.ts';
import { conditionEvent } from './events.ts';
import type { PeerPodsMetrics } from './metrics.ts';
import type { ObservedCloudCredentials, PeerPodsObserved, PeerPodsPlanOptions } from './observed.ts';
import { planPeerPods } from './plan.ts';
import type { PeerPodsPlan } from './plan-types.ts';

export { kataUninstallStarted } from './plan-removal.ts';

export interface PeerPodsOptions extends PeerPodsPlanOptions {
  /** Whether the cluster serves the Cloud Credential Operator's API (OpenShift): osc then asks it for credentials. */
  cloudCredentials?: boolean;
  /** Whether the cluster serves the APIServer config (OpenShift): the adaptor then follows its TLS profile. */
  clusterTLSProfile?: boolean;
}

export const defaultPeerPodsOptions: Omit<PeerPodsOptions, 'namespace'> = {
  images: DEFAULT_IMAGES,
  imageJobBackoffLimit: 1,
  blockedRecheckMs: 15_000,
};

/** How soon a removal held by a lagging cache is planned again, should no cache event come first. */
export const CACHE_BEHIND_RECHECK_MS = 2_000;

export const REMOTE_PODS_INDEX = 'peerpods.runtimeClassName';
/** The field manager of what the peer pods controller writes (its KataConfig conditions too: peerPodsStatusShare). */
export const PEERPODS_FIELD_MANAGER = peerPodsStatusShare.fieldManager;

export interface PeerPodsContext {
  client: KubeClient;
  kataConfigs: Informer<KataConfig>;
  configMaps: Informer<ConfigMap>;
  secrets: Informer<Secret>;
  peerPodConfigs: Informer<PeerPodConfig>;
  daemonSets: Informer<DaemonSet>;
  jobs: Informer<Job>;
  nodes: Informer<Node>;
  /** Where the kata nodes are: the platform's selector and tolerations. */
  platform: Pick<Platform, 'kataNodeSelector' | 'kataNodeTolerations' | 'supportsPeerPods'>;
  /** Pods, indexed by runtime class under REMOTE_PODS_INDEX. */
  pods: Informer<Pod>;
  /** ConfigMap osc-feature-gates (caaUpdateStrategy). */
  featureGates?: Informer<ConfigMap>;
  /** Where the cluster has a TLS security profile: the APIServer named cluster. */
  apiServers?: Informer<APIServer>;
  /** Where a Cloud Credential Operator runs: osc's request, the Secret it names, the cluster's mode. */
  cloudCredentials?: {
    /** osc's requests, one cache per cloud's request name. */
    requests: readonly Informer<CredentialsRequest<AnyProviderSpec>>[];
    secrets: Informer<Secret>;
    config: Informer<CloudCredential>;
  };
  events: EventRecorder;
  metrics?: RuntimeMetrics;
  peerPodsMetrics?: PeerPodsMetrics;
  options: PeerPodsOptions;
  /** The clock the plan is given (tests set it). */
  now?: () => Date;
}

/**
 * Reconciles the peer-pod parts of the (single) KataConfig when it enables peer pods (docs/peerpods.md), in
 * three steps: observe (its caches, never a live read), plan (plan.ts: pure, given the observation and
 * now), apply (the runtime applier, then this controller's conditions, events and gauges). The InProgress
 * rollout belongs to the KataConfig controller; this one never touches it. A write that fails (a 409
 * included) fails the pass, and the work queue retries it.
 */
export class PeerPodsReconciler {
  private readonly ctx: PeerPodsContext;
  private readonly applier: Applier;
  private readonly failuresCounted = new Set<string>();
  private clusterUID: string | undefined;

  constructor(ctx: PeerPodsContext) {
    this.ctx = ctx;
    this.applier = new Applier({ client: ctx.client, fieldManager: PEERPODS_FIELD_MANAGER, metrics: ctx.metrics });
    this.applier.watch(ConfigMaps, ctx.configMaps);
    this.applier.watch(PeerPodConfigs, ctx.peerPodConfigs);
    this.applier.watch(DaemonSets, ctx.daemonSets);
    this.applier.watch(Jobs, ctx.jobs);
    this.applier.watch(Nodes, ctx.nodes);
    for (const requests of ctx.cloudCredentials?.requests ?? []) this.applier.watch(CredentialsRequests, requests);
  }
  /** Calls `fn` when a write of this controller's ended unshown (Applier.onUnshownExpired): a pass must look again. */
  onUnshownExpired(fn: () => void): () => void {
    return this.applier.onUnshownExpired(fn);
  }

  private get ns(): string {
    return this.ctx.options.namespace;
  }

  private cached<T extends KubeObject>(informer: Informer<T>, name: string): T | undefined {
    return informer.get(`${this.ns}/${name}`);
  }

  /**
   * What the caches show, for the plan. The nodes, where the kata nodes are and the kata-remote pods are
   * read only when the plan asks: most passes (peer pods off, and a KataConfig status write on every node's
   * progress) need none of them.
   */
  observe(key: string): PeerPodsObserved {
    const { ctx } = this;
    const configMap = this.cached(ctx.configMaps, PEER_PODS_CM);
    const creationJob = this.cached(ctx.jobs, imageJobName('creation'));
    const deletionJob = this.cached(ctx.jobs, imageJobName('deletion'));
    let nodes: Node[] | undefined;
    let placement: PeerPodsObserved['placement'] | undefined;
    let remotePods: string[] | undefined;
    const allNodes = () => (nodes ??= ctx.nodes.list());
    const daemonSet = this.cached(ctx.daemonSets, CAA_DAEMONSET);
    const tlsProfile = ctx.apiServers?.get(CLUSTER_APISERVER)?.spec?.tlsSecurityProfile;
    return {
      key,
      kataConfigs: ctx.kataConfigs.list(),
      supportsPeerPods: ctx.platform.supportsPeerPods,
      get placement() {
        placement ??= {
          nodeSelector: ctx.platform.kataNodeSelector(allNodes()),
          tolerations: ctx.platform.kataNodeTolerations(allNodes()),
        };
        return placement;
      },
      get nodes() {
        return allNodes();
      },
      configMap,
      secret: this.cached(ctx.secrets, PEER_PODS_SECRET),
      peerPodConfig: this.cached(ctx.peerPodConfigs, PEER_POD_CONFIG),
      daemonSet,
      caaUpdateStrategy: this.caaUpdateStrategy(daemonSet),
      ...(tlsProfile ? { tlsProfile } : {}),
      creationJob,
      deletionJob,
      get remotePods() {
        return (remotePods ??= remotePodsOf(ctx.pods));
      },
      configMapAwaited: this.applier.awaits(ConfigMaps, PEER_PODS_CM, this.ns, configMap),
      jobsAwaited: {
        creation: this.applier.awaits(Jobs, imageJobName('creation'), this.ns, creationJob),
        deletion: this.applier.awaits(Jobs, imageJobName('deletion'), this.ns, deletionJob),
      },
      ...(ctx.cloudCredentials
        ? { cloudCredentials: this.observeCloudCredentials(ctx.cloudCredentials, configMap?.data?.CLOUD_PROVIDER) }
        : {}),
      ...(this.clusterUID ? { clusterUID: this.clusterUID } : {}),
      options: ctx.options,
    };
  }

  /** The gate's strategy; while its value cannot be read, the one the DaemonSet has (RollingUpdate when none). */
  private caaUpdateStrategy(ds: DaemonSet | undefined): CaaUpdateStrategy {
    const cm = this.ctx.featureGates ? this.cached(this.ctx.featureGates, FEATURE_GATES_CONFIGMAP) : undefined;
    const parsed = parseFeatureGates(cm?.data);
    if (!parsed.problems.some((p) => p.key === 'caaUpdateStrategy')) return parsed.gates.caaUpdateStrategy;
    return (ds?.spec?.updateStrategy as { type?: string } | undefined)?.type === 'OnDelete' ? 'OnDelete' : 'RollingUpdate';
  }

  /** osc's request for the cloud peer-pods-cm names (AWS's when it names none), and any other cloud's left over. */
  private observeCloudCredentials(
    cc: NonNullable<PeerPodsContext['cloudCredentials']>,
    cloud: string | undefined,
  ): ObservedCloudCredentials {
    const all = cc.requests.flatMap((r) => r.list());
    const issued = cloudProvider(cloud ?? defaultCloud().name)?.credentials;
    const request = all.find((r) => objectName(r) === issued?.requestName);
    const collectorRequest = all.find((r) => objectName(r) === issued?.collector.requestName);
    const others = all.filter((r) => r !== request && r !== collectorRequest);
    const secret = this.cached(cc.secrets, PEER_PODS_CCO_SECRET);
    const mode = cc.config.get(CLOUD_CREDENTIAL_NAME)?.spec?.credentialsMode ?? '';
    return {
      ...(request ? { request } : {}),
      ...(collectorRequest ? { collectorRequest } : {}),
      ...(others.length ? { others } : {}),
      ...(secret ? { secret } : {}),
      mode,
    };
  }

  async reconcile(key: string, log: Logger, signal: AbortSignal): Promise<ReconcileResult | undefined> {
    // The cluster's UID never changes: read once, when peer pods are first planned.
    if (this.clusterUID === undefined && this.ctx.configMaps.get(`${this.ns}/${PEER_PODS_CM}`)) {
      this.clusterUID = (await this.ctx.client.get(Namespaces, 'kube-system', undefined, signal)).metadata.uid ?? '';
    }
    const now = this.ctx.now?.() ?? new Date();
    const observed = this.observe(key);
    let plan = planPeerPods(observed, now);
    if (plan.readConfigMapLive) {
      // A completed image job whose image the cache does not show yet: the API server's copy decides.
      observed.configMap = await this.ctx.client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal);
      observed.configMapLive = true;
      plan = planPeerPods(observed, now);
    }
    if (plan.removeFinalizer) {
      const behind = await this.cacheBehind(signal);
      if (behind) {
        // The plan read a cache that lags: it is carried out without letting go of the finalizer, and planned
        // again once the cache shows what the live read did (its event), or after a short wait at the latest.
        log.info({ behind }, 'peer pods removal waits: the cache is behind the API server on the image jobs');
        plan.removeFinalizer = false;
        plan.requeueAfterMs = Math.min(plan.requeueAfterMs ?? CACHE_BEHIND_RECHECK_MS, CACHE_BEHIND_RECHECK_MS);
      }
    }
    await this.apply(key, plan, log, signal);
    return plan.requeueAfterMs !== undefined ? { requeueAfterMs: plan.requeueAfterMs } : undefined;
  }

  /**
   * Before the peer pods finalizer goes (the last moment osc can still delete the image it built), one live
   * read of both image jobs and peer-pods-cm: a cache behind any of them (a job a process started before a
   * restart, a watch down for a while) would let the removal end with a job running or an image still
   * recorded. Answers what differs, or undefined. Made only then: nothing while idle.
   */
  private async cacheBehind(signal: AbortSignal): Promise<string | undefined> {
    const { client } = this.ctx;
    const [creation, deletion, configMap] = await Promise.all([
      client.find(Jobs, imageJobName('creation'), this.ns, signal),
      client.find(Jobs, imageJobName('deletion'), this.ns, signal),
      client.find(ConfigMaps, PEER_PODS_CM, this.ns, signal),
    ]);
    const version = (o: KubeObject | undefined) => (o ? `${o.metadata.uid}/${o.metadata.resourceVersion}` : 'none');
    const pairs: [string, KubeObject | undefined, KubeObject | undefined][] = [
      [imageJobName('creation'), creation, this.cached(this.ctx.jobs, imageJobName('creation'))],
      [imageJobName('deletion'), deletion, this.cached(this.ctx.jobs, imageJobName('deletion'))],
      [PEER_PODS_CM, configMap, this.cached(this.ctx.configMaps, PEER_PODS_CM)],
    ];
    const behind = pairs.filter(([, live, cached]) => version(live) !== version(cached)).map(([name]) => name);
    return behind.length ? behind.join(', ') : undefined;
  }

  private readonly lookup: CacheLookup = (rt, name) => {
    const { ctx } = this;
    if (rt === ConfigMaps) return this.cached(ctx.configMaps, name);
    if (rt === PeerPodConfigs) return this.cached(ctx.peerPodConfigs, name);
    if (rt === DaemonSets) return this.cached(ctx.daemonSets, name);
    if (rt === Jobs) return this.cached(ctx.jobs, name);
    if (rt === KataConfigs) return ctx.kataConfigs.get(name);
    if (rt === CredentialsRequests) {
      for (const requests of ctx.cloudCredentials?.requests ?? []) {
        const found = requests.get(`${CCO_NAMESPACE}/${name}`);
        if (found) return found;
      }
      return undefined;
    }
    return ctx.nodes.get(name);
  };

  private async apply(key: string, plan: PeerPodsPlan, log: Logger, signal: AbortSignal): Promise<void> {
    const { ctx } = this;
    let kc = ctx.kataConfigs.get(key);
    if (kc && plan.addFinalizer) kc = await addFinalizer(ctx.client, KataConfigs, kc, PEERPODS_FINALIZER);
    const outcomes = await this.applier.run(plan.writes, this.lookup, signal);
    for (const note of plan.notes) {
      if (note.after && outcomes[plan.writes.indexOf(note.after)] !== 'written') continue;
      log[note.level](note.fields ?? {}, note.msg);
    }
    if (plan.peerPodConfigStatus) {
      const ppc = this.cached(ctx.peerPodConfigs, PEER_POD_CONFIG);
      try {
        if (ppc) await writeStatusIfChanged(ctx.client, PeerPodConfigs, ppc, plan.peerPodConfigStatus, ctx.metrics);
      } catch (e) {
        // Deleted since the cache showed it: no status to keep.
        if (!isNotFound(e)) throw e;
      }
    }
    // Gauges first: whoever sees the status change must find them agreeing.
    this.setGauges(plan);
    this.observePods();
    const written = kc && plan.conditions ? await this.writeConditions(kc, plan.conditions) : undefined;
    if (kc && plan.removeFinalizer) await removeFinalizer(ctx.client, KataConfigs, written ?? kc, PEERPODS_FINALIZER);
    for (const ev of plan.events) if (kc) await ctx.events.record(kc, ev.type, ev.reason, ev.action, ev.note);
  }

  private setGauges(plan: PeerPodsPlan): void {
    const m = this.ctx.peerPodsMetrics;
    for (const f of plan.failedJobs) {
      if (this.failuresCounted.has(f.uid)) continue;
      this.failuresCounted.add(f.uid);
      m?.imageJobFailures.inc({ job: f.kind });
    }
    if (!m) return;
    if (plan.gauges === 'reset') m.reset();
    else if (plan.gauges) {
      m.enabled.set(1);
      m.configValid.set(plan.gauges.configValid ? 1 : 0);
      m.configProblems.set(plan.gauges.configProblems);
      m.vmLimit.set(plan.gauges.vmLimit);
      m.nodes.set(plan.gauges.nodes);
    }
    if (plan.observeJobs) {
      for (const kind of ['creation', 'deletion'] as ImageJobKind[]) {
        const job = this.cached(this.ctx.jobs, imageJobName(kind));
        m.setImageJob(kind, job ? jobPhase(job) : undefined);
      }
    }
  }

  /**
   * Applies this controller's conditions on the KataConfig (and only those: any other in the list is left
   * out), with an event for each change worth one. One it no longer applies, the server removes.
   */
  private async writeConditions(kc: KataConfig, conditions: Condition[]): Promise<KataConfig | undefined> {
    const before = kc.status?.conditions;
    const status = peerPodsStatusShare.owned({ conditions });
    const written = await this.applier.applyStatus(KataConfigs, kc, status, peerPodsStatusShare);
    if (!written) return undefined;
    for (const type of PEERPODS_CONDITIONS) {
      const ev = conditionEvent(findCondition(before, type), findCondition(conditions, type));
      if (ev) await this.ctx.events.record(written, ev.type, ev.reason, 'Reconcile', ev.note);
    }
    return written;
  }

  private observePods(): void {
    this.ctx.peerPodsMetrics?.pods.set(this.ctx.pods.byIndex(REMOTE_PODS_INDEX, KATA_REMOTE_RUNTIME_CLASS).length);
  }
}

const remotePodsOf = (pods: Informer<Pod>): string[] =>
  pods.byIndex(REMOTE_PODS_INDEX, KATA_REMOTE_RUNTIME_CLASS).map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
