import type { Logger } from 'pino';
import { CLUSTER_VERSION_NAME, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS, KATA_CC_RUNTIME_CLASS } from '../../api/confidential.ts';
import {
  FEATURE_GATES_CONFIGMAP,
  type FeatureGateProblem,
  featureGateTexts,
  type ParsedFeatureGates,
  parseFeatureGates,
} from '../../api/featuregates.ts';
import type { KataConfig } from '../../api/kataconfig.ts';
import type { ClusterVersion } from '../../api/openshift.ts';
import { detectTee, type TeeDetection } from '../../api/tee.ts';
import type { ConfigMap, Node, Pod } from '../../kube/resources.ts';
import { modeMatches } from '../../platform/index.ts';
import type { Platform } from '../../platform/platform.ts';
import type { EventRecorder } from '../../runtime/events.ts';
import type { Informer } from '../../runtime/informer.ts';
import { type ExtraClasses, extraRuntimeClasses } from './runtimeclasses.ts';

export interface ConfidentialDeps {
  featureGates: Informer<ConfigMap>;
  /** OpenShift's ClusterVersion `version` (watched by name); absent where the platform has no release. */
  clusterVersions?: Informer<ClusterVersion>;
  namespace: string;
  platform: Platform<unknown>;
  events: EventRecorder;
  log?: Logger;
}

/** One bad gate, as the events note it once: its key and value (or where it is). */
const problemId = (p: FeatureGateProblem) => `${p.key}=${p.binary ? '<binaryData>' : p.value}`;

export interface ConfidentialPass extends ExtraClasses {
  parsed: ParsedFeatureGates;
  tee: TeeDetection;
}

/** The OpenShift release a ClusterVersion names (its desired version): all a pass reads of it. */
export const releaseOf = (cv: ClusterVersion | undefined): string | undefined => cv?.status?.desired?.version || undefined;

/**
 * Whether a ClusterVersion update changes the release. The version operator rewrites its status (conditions,
 * history, available updates) while the release stays; each rewrite would be a pass over every node.
 */
export const releaseChanged = (a: ClusterVersion, b: ClusterVersion): boolean => releaseOf(a) !== releaseOf(b);

/**
 * What a KataConfig pass needs of the feature gates, the TEE and the cluster's release: the gates from
 * their ConfigMap's cache, the TEE from the selected nodes' labels, and (on OpenShift, with the
 * confidential gate on) the release from the ClusterVersion's cache. Notes each new warning or gate problem once
 * as an event, so that an administrator sees a bad edit where they look first.
 */
export class ConfidentialClasses {
  private readonly noted = new Set<string>();

  private readonly deps: ConfidentialDeps;

  constructor(deps: ConfidentialDeps) {
    this.deps = deps;
  }

  /** The gates as their ConfigMap now says. */
  gates(): ParsedFeatureGates {
    const cm = this.deps.featureGates.list().find((c) => c.metadata.name === FEATURE_GATES_CONFIGMAP);
    return parseFeatureGates(cm?.data, cm?.binaryData);
  }

  async pass(kc: KataConfig, nodes: readonly Node[], selected: ReadonlySet<string>, pods: readonly Pod[]) {
    const { platform, namespace, clusterVersions } = this.deps;
    const parsed = this.gates();
    // The TEE (a walk over the nodes, and over every pod for the key slots in use) only matters with the
    // gate on: a cluster that does not ask for confidential containers pays nothing per pass for them.
    const tee: TeeDetection = parsed.gates.confidential
      ? detectTee(nodes, selected, pods, new Set([KATA_CC_RUNTIME_CLASS, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS]))
      : { kind: 'none' };
    const release = releaseOf(clusterVersions?.get(CLUSTER_VERSION_NAME));
    const clusterVersion = clusterVersions ? { version: release } : undefined;
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
      offered: kc.status?.runtimeClasses ?? [],
      ...(clusterVersion ? { clusterVersion } : {}),
    });
    const modeMismatch =
      !modeMatches(parsed.gates.deploymentMode, platform.name) && !parsed.problems.some((p) => p.key === 'deploymentMode')
        ? [['FeatureGateMode', featureGateTexts.modeMismatch(parsed.gates.deploymentMode, platform.name)] as const]
        : [];
    const notes = [
      ...modeMismatch,
      ...parsed.problems.map((p) => ['FeatureGateInvalid', problemId(p)] as const),
      ...(parsed.unknown.length ? [['FeatureGateUnknown', featureGateTexts.unknown(namespace, parsed.unknown)] as const] : []),
      ...extra.warnings.map((w) => ['Confidential', w] as const),
    ];
    const current = new Set<string>();
    for (const [reason, key] of notes) {
      const id = `${reason}:${key}`;
      current.add(id);
      if (this.noted.has(id)) continue;
      this.noted.add(id);
      const problem = parsed.problems.find((p) => problemId(p) === key);
      const note = problem ? featureGateTexts.invalid(namespace, problem) : key;
      await this.deps.events.record(kc, 'Warning', reason, 'Reconcile', note);
    }
    // A problem fixed and made again is noted again.
    for (const id of this.noted) if (!current.has(id)) this.noted.delete(id);
    return { ...extra, parsed, tee } satisfies ConfidentialPass;
  }
}
