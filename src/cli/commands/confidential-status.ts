import { KATA_CC_NVIDIA_GPU_RUNTIME_CLASS, KATA_CC_RUNTIME_CLASS } from '../../api/confidential.ts';
import { type ConfidentialSummary, gateProblemTexts } from '../../api/confidential-summary.ts';
import { FEATURE_GATES_CONFIGMAP, parseFeatureGates } from '../../api/featuregates.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import { detectTee } from '../../controllers/kataconfig/tee.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ConfigMaps, type Node, Pods } from '../../kube/resources.ts';

/**
 * What `osc status` says of confidential containers: the gates as the operator reads them, the TEE the
 * nodes have (all nodes: status shows what is there, the operator looks at the selected ones) and the key
 * slots the confidential classes' pods hold on each TEE node.
 */
export async function readConfidential(
  client: KubeClient,
  nodes: readonly Node[],
  namespace = OPERATOR_NAMESPACE,
): Promise<ConfidentialSummary> {
  const cm = await client.find(ConfigMaps, FEATURE_GATES_CONFIGMAP, namespace);
  const parsed = parseFeatureGates(cm?.data);
  const all = new Set(nodes.map((n) => n.metadata.name ?? ''));
  const teeLabelled = detectTee(nodes, all);
  const pods = teeLabelled.kind === 'one' ? (await client.list(Pods)).items : [];
  const tee = detectTee(nodes, all, pods, new Set([KATA_CC_RUNTIME_CLASS, KATA_CC_NVIDIA_GPU_RUNTIME_CLASS]));
  const base = { gates: parsed.gates, gateProblems: gateProblemTexts(namespace, parsed.problems) };
  if (tee.kind === 'none') return { ...base, tee: 'none', keySlots: [] };
  if (tee.kind === 'multiple') return { ...base, tee: 'multiple', teesFound: tee.found, keySlots: [] };
  const resource = tee.tee.keySlots;
  return {
    ...base,
    tee: tee.tee.kind,
    keySlots: resource ? tee.slots.map((s) => ({ node: s.node, resource, allocatable: s.allocatable, used: s.used })) : [],
  };
}
