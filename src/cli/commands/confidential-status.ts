import { anyTeeNode, type ConfidentialSummary, summarizeConfidential } from '../../api/confidential-summary.ts';
import { FEATURE_GATES_CONFIGMAP } from '../../api/featuregates.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ConfigMaps, type Node, Pods } from '../../kube/resources.ts';

/**
 * What `osc status` says of confidential containers (api/confidential-summary.ts): the gates from their
 * ConfigMap, the TEE from the nodes, and, where a TEE node exists, the key slots the pods hold.
 */
export async function readConfidential(
  client: KubeClient,
  nodes: readonly Node[],
  namespace = OPERATOR_NAMESPACE,
): Promise<ConfidentialSummary> {
  const cm = await client.find(ConfigMaps, FEATURE_GATES_CONFIGMAP, namespace);
  const pods = anyTeeNode(nodes) ? (await client.list(Pods)).items : [];
  return summarizeConfidential(cm?.data, nodes, pods, namespace, cm?.binaryData);
}
