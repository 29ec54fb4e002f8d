import {
  confidentialTexts,
  KATA_CC_NVIDIA_GPU_RUNTIME_CLASS,
  KATA_CC_OVERHEAD,
  KATA_CC_RUNTIME_CLASS,
  KATA_NVIDIA_GPU_HANDLER,
  KATA_NVIDIA_GPU_OVERHEAD,
  KATA_NVIDIA_GPU_RUNTIME_CLASS,
  KATA_NVIDIA_GPU_SHIM,
  MINIMUM_OCP_VERSION,
  MINIMUM_OCP_VERSION_GPU,
  NVIDIA_CC_GPU_NODE_LABELS,
  NVIDIA_GPU_NODE_LABELS,
  NVIDIA_GPU_VM_PASSTHROUGH,
  NVIDIA_GPU_WORKLOAD_LABEL,
  type TeePlatform,
  UNSUPPORTED_OCP_VERSION,
} from '../../api/confidential.ts';
import { type FeatureGateProblem, type FeatureGates, featureGateTexts } from '../../api/featuregates.ts';
import { objectName } from '../../api/meta.ts';
import { checkVersion, type TeeDetection } from '../../api/tee.ts';
import type { Node } from '../../kube/resources.ts';
import { runtimeHandler } from '../../platform/index.ts';

/**
 * The RuntimeClasses osc offers beside `kata` and `kata-remote`: `kata-cc` on the TEE nodes when the
 * confidential gate is on, and the GPU classes on the NVIDIA GPU operator's nodes (pure). Which of them,
 * with which handler, overhead and node selector, and why a wanted one is refused.
 */

/** One RuntimeClass as osc makes it. */
export interface DesiredRuntimeClass {
  name: string;
  handler: string;
  overhead: Record<string, string>;
  nodeSelector: Record<string, string>;
}

export const EXTRA_RUNTIME_CLASSES: readonly string[] = [
  KATA_CC_RUNTIME_CLASS,
  KATA_NVIDIA_GPU_RUNTIME_CLASS,
  KATA_CC_NVIDIA_GPU_RUNTIME_CLASS,
];

/** A refusal that the InProgress condition reports (status True/Failed, or False/UnsupportedOCPVersion). */
export interface ConfidentialRefusal {
  status: 'True' | 'False';
  reason: 'Failed' | typeof UNSUPPORTED_OCP_VERSION;
  message: string;
}

export interface ExtraClassesInput {
  gates: FeatureGates;
  /** Keys of the gates ConfigMap whose value is wrong: what they govern stays as it is. */
  problems: readonly FeatureGateProblem[];
  namespace: string;
  tee: TeeDetection;
  /** The platform's name: handlers differ (OpenShift's extension vs kata-deploy's shims). */
  platform: string;
  /** The platform's selector of kata nodes, which every class narrows. */
  kataNodeSelector: Record<string, string>;
  nodes: readonly Node[];
  selected: ReadonlySet<string>;
  peerPods: boolean;
  /** OpenShift's release (ClusterVersion `version`), where the platform has one; undefined elsewhere. */
  clusterVersion?: { version: string | undefined };
  /** The classes the KataConfig offers now (status.runtimeClasses): a GPU class no longer wanted is said to go. */
  offered?: readonly string[];
}

export interface ExtraClasses {
  classes: DesiredRuntimeClass[];
  /** Classes neither made nor removed this pass: the gate governing them cannot be read. */
  frozen: string[];
  refusal?: ConfidentialRefusal;
  /** Worth an event, not a failed status. */
  warnings: string[];
}

const handlerFor = (platform: string, extensionHandler: string, shim: string) => runtimeHandler(platform, extensionHandler, shim);

// A walk over every node per pass: no allocation per node, and the labels (which rule out most) first.
const matches = (n: Node, labels: Readonly<Record<string, string>>) => {
  for (const k in labels) if (n.metadata.labels?.[k] !== labels[k]) return false;
  return true;
};

/** What the selected nodes say of GPUs in kata VMs. */
interface GpuNodes {
  /** Some selected node carries the GPU operator's labels for GPUs in VMs, confidential computing off. */
  plain: boolean;
  /** The selected nodes it prepared for confidential GPUs (which the TEE's label narrows). */
  confidential: Node[];
  /** The selected nodes labelled for GPUs in VMs, prepared or not, by name. */
  requesting: string[];
}

/**
 * One walk over the nodes for every GPU question of a pass (six walks before, a fifth of a 1,000-node pass's
 * time in a profile): most nodes carry no NVIDIA label and are passed over on their labels.
 */
function gpuNodes(input: ExtraClassesInput): GpuNodes {
  const out: GpuNodes = { plain: false, confidential: [], requesting: [] };
  for (const n of input.nodes) {
    const labels = n.metadata.labels;
    if (!labels) continue;
    const plain = matches(n, NVIDIA_GPU_NODE_LABELS);
    const confidential = !plain && matches(n, NVIDIA_CC_GPU_NODE_LABELS);
    const requesting = labels[NVIDIA_GPU_WORKLOAD_LABEL] === NVIDIA_GPU_VM_PASSTHROUGH;
    if ((!plain && !confidential && !requesting) || !input.selected.has(objectName(n))) continue;
    if (plain) out.plain = true;
    if (confidential) out.confidential.push(n);
    if (requesting) out.requesting.push(objectName(n));
  }
  return out;
}

/** Whether some selected node is prepared for GPUs in VMs, in either mode. */
const prepared = (gpu: GpuNodes) => gpu.plain || gpu.confidential.length > 0;

/** Whether a selected node is prepared for confidential GPUs and carries the TEE's label. */
const confidentialGpuOn = (gpu: GpuNodes, teeLabel: string) => gpu.confidential.some((n) => n.metadata.labels?.[teeLabel] === 'true');

function confidentialClass(tee: TeePlatform, input: ExtraClassesInput): DesiredRuntimeClass {
  return {
    name: KATA_CC_RUNTIME_CLASS,
    handler: handlerFor(input.platform, tee.handler, tee.shim),
    overhead: { ...KATA_CC_OVERHEAD, ...(tee.keySlots ? { [tee.keySlots]: '1' } : {}) },
    nodeSelector: { ...input.kataNodeSelector, [tee.label]: 'true' },
  };
}

/** The classes beyond kata and kata-remote, from the gates, the TEE found and the GPU nodes. */
export function extraRuntimeClasses(input: ExtraClassesInput): ExtraClasses {
  const gpu = gpuNodes(input);
  const out = wantedClasses(input, gpu);
  out.warnings.push(...gpuWarnings(input, gpu, out));
  return out;
}

/**
 * What an administrator asked of GPUs that osc does not give: a node labelled for GPUs in VMs that the GPU
 * operator has not prepared (no GPU class without them), and a GPU class offered whose nodes are gone.
 */
function gpuWarnings(input: ExtraClassesInput, gpu: GpuNodes, out: ExtraClasses): string[] {
  const warnings: string[] = [];
  const made = new Set(out.classes.map((c) => c.name));
  if (!prepared(gpu) && gpu.requesting.length) warnings.push(confidentialTexts.noGpuNodes([...gpu.requesting].sort()));
  // Withdrawn for want of nodes (not for a gate turned off or a release too old: those say so themselves).
  const { tee } = input;
  const nodesOf: [string, boolean][] = [
    [KATA_NVIDIA_GPU_RUNTIME_CLASS, !gpu.plain],
    [KATA_CC_NVIDIA_GPU_RUNTIME_CLASS, input.gates.confidential && tee.kind === 'one' && !confidentialGpuOn(gpu, tee.tee.label)],
  ];
  for (const [rc, noNodes] of nodesOf)
    if (noNodes && input.offered?.includes(rc) && !made.has(rc) && !out.frozen.includes(rc))
      warnings.push(confidentialTexts.gpuClassWithdrawn(rc));
  return warnings;
}

function wantedClasses(input: ExtraClassesInput, gpu: GpuNodes): ExtraClasses {
  const classes: DesiredRuntimeClass[] = [];
  const warnings: string[] = [];
  const frozen: string[] = [];
  let refusal: ConfidentialRefusal | undefined;
  const gateProblem = input.problems[0];
  if (gateProblem) refusal = { status: 'True', reason: 'Failed', message: featureGateTexts.invalid(input.namespace, gateProblem) };

  // GPUs in kata VMs need no gate: the class exists where the GPU operator has prepared nodes, on an
  // OpenShift release that supports them.
  const gpuRelease = !input.clusterVersion || checkVersion(input.clusterVersion.version, MINIMUM_OCP_VERSION_GPU).ok;
  if (prepared(gpu) && !gpuRelease)
    warnings.push(confidentialTexts.unsupportedGpuVersion(input.clusterVersion?.version ?? '', MINIMUM_OCP_VERSION_GPU));
  if (gpuRelease && gpu.plain) {
    classes.push({
      name: KATA_NVIDIA_GPU_RUNTIME_CLASS,
      handler: handlerFor(input.platform, KATA_NVIDIA_GPU_HANDLER, KATA_NVIDIA_GPU_SHIM),
      overhead: { ...KATA_NVIDIA_GPU_OVERHEAD },
      nodeSelector: { ...input.kataNodeSelector, ...NVIDIA_GPU_NODE_LABELS },
    });
  }

  if (input.problems.some((p) => p.key === 'confidential')) {
    frozen.push(KATA_CC_RUNTIME_CLASS, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS);
    return { classes, frozen, ...(refusal ? { refusal } : {}), warnings };
  }
  if (!input.gates.confidential) return { classes, frozen, ...(refusal ? { refusal } : {}), warnings };

  // A refused setup (two TEE kinds, none, a release too old) changes nothing of what exists: a label flipped
  // for a moment must not take kata-cc away (and roll every node twice); the condition says what to fix.
  const refuse = (r: ConfidentialRefusal) => {
    refusal ??= r;
    frozen.push(KATA_CC_RUNTIME_CLASS, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS);
    return { classes, frozen, refusal, warnings };
  };
  // Peer pods are confidential in the cloud's VMs: bare-metal kata-cc is a bonus there, never a failure.
  if (input.clusterVersion && !input.peerPods) {
    const v = input.clusterVersion.version;
    const check = checkVersion(v, MINIMUM_OCP_VERSION);
    if (!check.ok) {
      const message =
        check.reason === 'below'
          ? confidentialTexts.unsupportedVersion(v ?? '', MINIMUM_OCP_VERSION)
          : check.reason === 'unreadable'
            ? confidentialTexts.unreadableVersion(v ?? '')
            : confidentialTexts.versionUnknown();
      return refuse({ status: 'False', reason: UNSUPPORTED_OCP_VERSION, message });
    }
  }
  const { tee } = input;
  if (tee.kind === 'multiple') return refuse({ status: 'True', reason: 'Failed', message: confidentialTexts.multipleTees(tee.found) });
  if (tee.kind === 'none') {
    if (input.peerPods) {
      warnings.push(confidentialTexts.noTeePeerPods());
      return { classes, frozen, ...(refusal ? { refusal } : {}), warnings };
    }
    return refuse({ status: 'True', reason: 'Failed', message: confidentialTexts.noTee() });
  }
  if (tee.withoutSlots.length && tee.tee.keySlots) warnings.push(confidentialTexts.noKeySlots(tee.withoutSlots, tee.tee.keySlots));
  classes.push(confidentialClass(tee.tee, input));
  const ccGpuLabels = { ...NVIDIA_CC_GPU_NODE_LABELS, [tee.tee.label]: 'true' };
  if (gpuRelease && tee.tee.gpuHandler && tee.tee.gpuShim && confidentialGpuOn(gpu, tee.tee.label)) {
    classes.push({
      name: KATA_CC_NVIDIA_GPU_RUNTIME_CLASS,
      handler: handlerFor(input.platform, tee.tee.gpuHandler, tee.tee.gpuShim),
      overhead: { ...KATA_CC_OVERHEAD, ...(tee.tee.keySlots ? { [tee.tee.keySlots]: '1' } : {}) },
      nodeSelector: { ...input.kataNodeSelector, ...ccGpuLabels },
    });
  }
  return { classes, frozen, ...(refusal ? { refusal } : {}), warnings };
}

/**
 * The handlers the nodes must keep for the extra classes: those wanted, and those of the extra classes osc
 * made that still exist (one waiting for its pods, or frozen by a gate osc cannot read, keeps its handler
 * on the nodes until it is gone).
 */
export function extraHandlers(
  wanted: readonly DesiredRuntimeClass[],
  existing: readonly { metadata: { name?: string; ownerReferences?: { kind: string }[] }; handler: string }[],
): string[] {
  const handlers = new Set(wanted.map((c) => c.handler));
  for (const rc of existing)
    if (EXTRA_RUNTIME_CLASSES.includes(objectName(rc)) && rc.metadata.ownerReferences?.some((r) => r.kind === 'KataConfig'))
      handlers.add(rc.handler);
  return [...handlers].sort();
}
