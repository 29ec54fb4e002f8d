import { confidentialTexts, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS, KATA_CC_RUNTIME_CLASS, type TeeKind, teePlatform } from './confidential.ts';
import {
  FEATURE_GATES_CONFIGMAP,
  type FeatureGateProblem,
  type FeatureGates,
  featureGateTexts,
  parseFeatureGates,
} from './featuregates.ts';
import { objectName } from './meta.ts';
import { detectTee, type TeeNode } from './tee.ts';

/**
 * The feature gates and the confidential computing picture in words, for `osc status`: the gates as the
 * operator reads them, the TEE its nodes have, and the key slots each TEE node has free.
 */
export interface ConfidentialSummary {
  gates: FeatureGates;
  /** The texts of the gate values osc cannot read (namespace-qualified). */
  gateProblems: string[];
  /** `none`, `multiple`, or the TEE's kind. */
  tee: 'none' | 'multiple' | TeeKind;
  /** With `multiple`: which TEEs, on which nodes. */
  teesFound?: { kind: TeeKind; nodes: string[] }[];
  /** With one TEE: its nodes. */
  teeNodes?: string[];
  /** Per TEE node: the key slots it advertises and those that pods of the confidential classes hold. */
  keySlots: { node: string; resource: string; allocatable: number; used: number }[];
}

export function gateProblemTexts(namespace: string, problems: readonly FeatureGateProblem[]): string[] {
  return problems.map((p) => featureGateTexts.invalid(namespace, p));
}

/**
 * The summary from the gates ConfigMap's data, the nodes (all of them: this shows what is there; the
 * operator looks at the selected ones) and the pods (for the key slots in use).
 */
export function summarizeConfidential(
  gatesData: Readonly<Record<string, string>> | undefined,
  nodes: readonly TeeNode[],
  pods: readonly { spec?: { nodeName?: string; runtimeClassName?: string }; status?: { phase?: string } }[],
  namespace: string,
  gatesBinaryData?: Readonly<Record<string, string>>,
): ConfidentialSummary {
  const parsed = parseFeatureGates(gatesData, gatesBinaryData);
  const all = new Set(nodes.map((n) => objectName(n)));
  const tee = detectTee(nodes, all, pods, new Set([KATA_CC_RUNTIME_CLASS, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS]));
  const base = { gates: parsed.gates, gateProblems: gateProblemTexts(namespace, parsed.problems) };
  if (tee.kind === 'none') return { ...base, tee: 'none', keySlots: [] };
  if (tee.kind === 'multiple') return { ...base, tee: 'multiple', teesFound: tee.found, keySlots: [] };
  const resource = tee.tee.keySlots;
  return {
    ...base,
    tee: tee.tee.kind,
    teeNodes: tee.nodes,
    keySlots: resource ? tee.slots.map((k) => ({ node: k.node, resource, allocatable: k.allocatable, used: k.used })) : [],
  };
}

/**
 * What a KataConfig created now would get of confidential containers, for the console's create form: a
 * note when it gets kata-cc, a warning when the gate asks for something the nodes cannot give.
 */
export function confidentialOutlook(s: ConfidentialSummary, namespace: string): { level: 'note' | 'warning'; text: string } {
  if (s.gateProblems.length)
    return { level: 'warning', text: 'a feature gate cannot be read (below): the KataConfig will report Failed until it is fixed' };
  if (!s.gates.confidential)
    return {
      level: 'note',
      text: `confidential containers are off: kata-cc is offered once the confidential feature gate is "true" in ConfigMap ${namespace}/${FEATURE_GATES_CONFIGMAP}`,
    };
  if (s.tee === 'none') return { level: 'warning', text: `${confidentialTexts.noTee()}: the KataConfig will report Failed` };
  if (s.tee === 'multiple')
    return { level: 'warning', text: `${confidentialTexts.multipleTees(s.teesFound ?? [])}, or the KataConfig will report Failed` };
  return {
    level: 'note',
    text: `kata-cc (${teePlatform(s.tee).title}) will be offered on ${(s.teeNodes ?? []).join(', ')}, where kata is installed: a pod VM per pod, each taking one key slot`,
  };
}

/** Whether any node carries a TEE label (then the pods are worth reading for the key slots). */
export const anyTeeNode = (nodes: readonly TeeNode[]): boolean =>
  detectTee(nodes, new Set(nodes.map((n) => objectName(n)))).kind !== 'none';

/** Lines to print under the KataConfigs. */
export function renderConfidential(s: ConfidentialSummary): string {
  const lines = [`Feature gates: ${featureGateTexts.summary(s.gates)}`];
  for (const p of s.gateProblems) lines.push(`  ! ${p}`);
  if (s.tee === 'none') lines.push('TEE: none found on the nodes');
  else if (s.tee === 'multiple')
    lines.push(
      `TEE: several kinds (${(s.teesFound ?? []).map((f) => `${teePlatform(f.kind).title} on ${f.nodes.join(', ')}`).join('; ')}): only one per cluster is supported`,
    );
  else lines.push(`TEE: ${teePlatform(s.tee).title}`);
  if (s.keySlots.length) {
    lines.push('Key slots (used/free per node):');
    const width = Math.max(...s.keySlots.map((k) => k.node.length));
    for (const k of s.keySlots)
      lines.push(
        `  ${k.node.padEnd(width)}  ${k.used} used, ${Math.max(0, k.allocatable - k.used)} free of ${k.allocatable} ${k.resource}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
