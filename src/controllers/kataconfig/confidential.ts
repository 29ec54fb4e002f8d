import type { Logger } from 'pino';
import { CLUSTER_VERSION_NAME } from '../../api/confidential.ts';
import { FEATURE_GATES_CONFIGMAP, featureGateTexts, type ParsedFeatureGates, parseFeatureGates } from '../../api/featuregates.ts';
import type { KataConfig } from '../../api/kataconfig.ts';
import { ClusterVersions } from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import type { ConfigMap, Node, Pod } from '../../kube/resources.ts';
import type { Platform } from '../../platform/platform.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { Informer } from '../../runtime/informer.ts';
import { EXTRA_RUNTIME_CLASSES, type ExtraClasses, extraRuntimeClasses } from './runtimeclasses.ts';
import { detectTee, type TeeDetection } from './tee.ts';

export interface ConfidentialDeps {
  client: KubeClient;
  featureGates: Informer<ConfigMap>;
  namespace: string;
  platform: Platform<unknown>;
  events: EventRecorder;
  log?: Logger;
}

/** How long a read of the ClusterVersion serves: a cluster upgrade takes far longer. */
const VERSION_TTL_MS = 30_000;

export interface ConfidentialPass extends ExtraClasses {
  parsed: ParsedFeatureGates;
  tee: TeeDetection;
}

/**
 * What a KataConfig pass needs of the feature gates, the TEE and the cluster's release: the gates from
 * their ConfigMap's cache, the TEE from the selected nodes' labels, and (on OpenShift, with the
 * confidential gate on) the release, read at most every 30 s. Notes each new warning or gate problem once
 * as an event, so that an administrator sees a bad edit where they look first.
 */
export class ConfidentialClasses {
  private version: { value: string | undefined; until: number } | undefined;
  private readonly noted = new Set<string>();

  private readonly deps: ConfidentialDeps;

  constructor(deps: ConfidentialDeps) {
    this.deps = deps;
  }

  /** The gates as their ConfigMap now says. */
  gates(): ParsedFeatureGates {
    const cm = this.deps.featureGates.list().find((c) => c.metadata.name === FEATURE_GATES_CONFIGMAP);
    return parseFeatureGates(cm?.data);
  }

  async pass(kc: KataConfig, nodes: readonly Node[], selected: ReadonlySet<string>, pods: readonly Pod[], signal: AbortSignal) {
    const { platform, namespace } = this.deps;
    const parsed = this.gates();
    const tee = detectTee(nodes, selected, pods, new Set(EXTRA_RUNTIME_CLASSES));
    const checkRelease = platform.name === 'openshift' && parsed.gates.confidential && !kc.spec?.enablePeerPods;
    const clusterVersion = checkRelease ? { version: await this.clusterVersion(signal) } : undefined;
    const extra = extraRuntimeClasses({
      gates: parsed.gates,
      problems: parsed.problems,
      namespace,
      tee,
      platform: platform.name,
      kataNodeSelector: platform.kataNodeSelector(nodes),
      nodes,
      selected,
      peerPods: kc.spec?.enablePeerPods === true,
      ...(clusterVersion ? { clusterVersion } : {}),
    });
    const notes = [
      ...parsed.problems.map((p) => ['FeatureGateInvalid', `${p.key}=${p.value}`] as const),
      ...(parsed.unknown.length ? [['FeatureGateUnknown', featureGateTexts.unknown(namespace, parsed.unknown)] as const] : []),
      ...extra.warnings.map((w) => ['Confidential', w] as const),
    ];
    const current = new Set<string>();
    for (const [reason, key] of notes) {
      const id = `${reason}:${key}`;
      current.add(id);
      if (this.noted.has(id)) continue;
      this.noted.add(id);
      const problem = parsed.problems.find((p) => `${p.key}=${p.value}` === key);
      const note = problem ? featureGateTexts.invalid(namespace, problem) : key;
      await this.deps.events.record(kc, 'Warning', reason, 'Reconcile', note);
    }
    // A problem fixed and made again is noted again.
    for (const id of this.noted) if (!current.has(id)) this.noted.delete(id);
    return { ...extra, parsed, tee } satisfies ConfidentialPass;
  }

  private async clusterVersion(signal: AbortSignal): Promise<string | undefined> {
    if (this.version && this.version.until > Date.now()) return this.version.value;
    try {
      const cv = await this.deps.client.find(ClusterVersions, CLUSTER_VERSION_NAME, undefined, signal);
      const value = cv?.status?.desired?.version || undefined;
      this.version = { value, until: Date.now() + VERSION_TTL_MS };
      return value;
    } catch (e) {
      if (signal.aborted) throw e;
      this.deps.log?.warn({ err: errorMessage(e) }, 'cannot read the ClusterVersion');
      return undefined;
    }
  }
}
