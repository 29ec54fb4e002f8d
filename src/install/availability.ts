/**
 * What keeps the operator answering while nodes are drained (docs/security.md, "Availability"): the replica
 * count, how the replicas spread, their disruption budget and their priority class, for every manifest form.
 */
import type { KubeObject } from '../kube/types.ts';
import { platformCluster } from '../platform/index.ts';
import type { PlatformName } from '../platform/platform.ts';

export const DISRUPTION_BUDGET = 'osc-controller-manager';
/** osc's own priority class, where the system ones may be reserved (plain Kubernetes). */
export const OWN_PRIORITY_CLASS = 'osc-operator-critical';

/**
 * Replicas by default. The webhooks fail closed (a KataConfig create or a kata-remote pod is refused while
 * nothing answers), and a kata install drains worker nodes, which may evict the operator itself: with two
 * replicas spread over two nodes and a disruption budget, one pod always answers (docs/security.md).
 */
export const DEFAULT_REPLICAS = 2;

/**
 * The priority class of the operator pods, by platform. OpenShift lets the openshift-* namespaces use
 * system-cluster-critical, as its own operators do, so that a full node evicts others first (its descriptor's
 * systemPriorityClass). Plain Kubernetes may reserve the system-* classes for kube-system (a ResourceQuota
 * scoped to them, as some managed clusters set), so osc brings a class of its own there, at the highest value
 * a non-system class may have.
 */
export const operatorPriorityClass = (platform: PlatformName): string =>
  platformCluster(platform).systemPriorityClass ?? OWN_PRIORITY_CLASS;

/**
 * Replicas on different nodes where the cluster allows, so that draining one node leaves one running;
 * preferred, not required, so that a one-node cluster still runs them all.
 */
export function spreadOverNodes(podLabels: Record<string, string>): Record<string, unknown> {
  return {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 100, podAffinityTerm: { labelSelector: { matchLabels: { ...podLabels } }, topologyKey: 'kubernetes.io/hostname' } },
      ],
    },
  };
}

/**
 * A drain (kubectl drain, the Machine Config Operator) evicts one replica at a time and waits for its
 * replacement to be ready. Only for more than one replica: over a single one it would block every drain of
 * its node.
 */
export function disruptionBudget(namespace: string, podLabels: Record<string, string>, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: DISRUPTION_BUDGET, namespace, labels },
    spec: { minAvailable: 1, selector: { matchLabels: { ...podLabels } } },
  } as KubeObject;
}

export function ownPriorityClass(labels: Record<string, string>): KubeObject {
  return {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: OWN_PRIORITY_CLASS, labels },
    value: 1_000_000_000,
    globalDefault: false,
    preemptionPolicy: 'PreemptLowerPriority',
    description:
      'The OpenShift sandboxed containers operator (osc): its admission webhooks fail closed, so it runs before ordinary workloads.',
  } as KubeObject;
}
