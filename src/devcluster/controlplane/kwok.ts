import { stringify } from 'yaml';
import type { KubeClient } from '../../kube/client.ts';
import { Leases, Nodes } from '../../kube/resources.ts';

/**
 * kwok plays the kubelet of every dev-cluster node: it renews each node's Lease (the heartbeat the
 * controller-manager's node lifecycle controller watches) and walks pods through their lifecycle. Its
 * stages are chosen so that the simulators keep what they own:
 *
 * - a node is initialised (conditions Ready etc., as a kubelet reports them when it starts) while its
 *   Ready condition is absent or Unknown: when it registers, and when its kubelet comes back after the
 *   controller-manager gave up on it. kwok's stock stage re-initialises any node that is not Ready, which
 *   would end a simulated reboot (Ready False) the moment it starts;
 * - there is no status heartbeat stage: like a current kubelet, a node's liveness is its Lease, and
 *   rewriting conditions periodically would race with the reboot's writes;
 * - pods scheduled to a node run (Running, with an IP from the pod network), Job pods complete, and a
 *   deleted pod is removed; pods whose work a simulator does (`simulatedJobs`) are left running for it.
 */

/**
 * The label that puts a node under kwok's management. A label, not an annotation: kwok watches with it as
 * a server-side selector, so removing it from a node reaches kwok as the node going away, and kwok stops
 * renewing its Lease (a kubelet that died); putting it back is the kubelet starting again.
 */
export const KWOK_NODE_LABEL = 'kwok.x-k8s.io/node';
export const KWOK_NODE_VALUE = 'fake';
export const KWOK_MANAGED = { [KWOK_NODE_LABEL]: KWOK_NODE_VALUE } as const;
const NODE_LEASE_NAMESPACE = 'kube-node-lease';

/** OpenShift's default cluster network: pod IPs come from here, far from the service and node networks. */
export const POD_CIDR = '10.128.0.1/14';

const stage = (name: string, kind: 'Node' | 'Pod', selector: unknown, next: unknown, delayMs?: number) => ({
  apiVersion: 'kwok.x-k8s.io/v1alpha1',
  kind: 'Stage',
  metadata: { name },
  spec: {
    resourceRef: { apiGroup: 'v1', kind },
    selector,
    ...(delayMs ? { delay: { durationMilliseconds: delayMs } } : {}),
    next,
  },
});

const expr = (key: string, operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', values?: string[]) => ({
  key,
  operator,
  ...(values ? { values } : {}),
});

const READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status';

/** The conditions a kubelet reports once it runs, with its own reasons and messages. */
const NODE_CONDITIONS: [type: string, status: string, reason: string, message: string][] = [
  ['MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'],
  ['DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'],
  ['PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'],
  ['Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'],
];

const nodeInitializeTemplate = [
  '{{ $now := Now }}',
  'conditions:',
  ...NODE_CONDITIONS.flatMap(([type, status, reason, message]) => [
    `- type: ${type}`,
    `  status: "${status}"`,
    `  reason: ${reason}`,
    `  message: ${JSON.stringify(message)}`,
    '  lastHeartbeatTime: {{ $now | Quote }}',
    '  lastTransitionTime: {{ $now | Quote }}',
  ]),
  'phase: Running',
  // The port kwok serves the kubelet API on (logs): the API server reaches every node's "kubelet" there.
  '{{ with NodePort }}',
  'daemonEndpoints:',
  '  kubeletEndpoint:',
  '    Port: {{ . }}',
  '{{ end }}',
].join('\n');

/** A started pod as the kubelet reports it; `ready` false: its containers run but have not passed readiness. */
const podRunningTemplate = (ready: boolean) => `{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodReadyToStartContainers
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "${ready ? 'True' : 'False'}"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "${ready ? 'True' : 'False'}"
  type: ContainersReady
{{ range .spec.readinessGates }}
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: {{ .conditionType | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: ${ready}
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
`;

/** A container's exit as the kubelet reports it; `succeeded` false is exit code 1 (Error). */
export const podExitTemplate = (succeeded: boolean) => `{{ $now := Now }}
{{ $root := . }}
containerStatuses:
{{ range $index, $item := .spec.containers }}
- image: {{ $item.image | Quote }}
  name: {{ $item.name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: ${succeeded ? 0 : 1}
      finishedAt: {{ $now | Quote }}
      reason: ${succeeded ? 'Completed' : 'Error'}
      startedAt: {{ $now | Quote }}
{{ end }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: Ready
  reason: PodCompleted
- lastTransitionTime: {{ $now | Quote }}
  status: "False"
  type: ContainersReady
  reason: PodCompleted
phase: ${succeeded ? 'Succeeded' : 'Failed'}
`;

/** What the kubelet reports once every container of a pod exited 0 (the pod-complete stage's status, for a simulator that plays the process). */
export function exitedPodStatus(pod: { spec?: { containers?: { name: string; image?: string }[] } }, now = new Date()) {
  const at = now.toISOString();
  return {
    phase: 'Succeeded',
    conditions: [
      { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: at },
      { type: 'ContainersReady', status: 'False', reason: 'PodCompleted', lastTransitionTime: at },
    ],
    containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      ready: false,
      started: false,
      restartCount: 0,
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at, finishedAt: at } },
    })),
  };
}

/**
 * kwok's own settings: more of its work in parallel than its default of 4, so that thousands of nodes are
 * initialised and their Leases renewed on time.
 *
 * kwok fills in its defaults only when no KwokConfiguration is given: every option given here is the whole
 * of it, and a missing one is zero. Zero workers for the pods of a newly managed node would leave a pod
 * that was bound before kwok held the node's Lease (skipped then, as on a node another kwok runs) waiting
 * for kwok's next relist, minutes later: a node that joins as a DaemonSet's pod is bound to it.
 */
const kwokConfiguration = {
  apiVersion: 'config.kwok.x-k8s.io/v1alpha1',
  kind: 'KwokConfiguration',
  metadata: { name: 'osc-dev' },
  options: {
    nodePlayStageParallelism: 16,
    podPlayStageParallelism: 16,
    nodeLeaseParallelism: 16,
    // kwok's defaults, which this configuration would otherwise set to zero (above).
    podsOnNodeSyncParallelism: 4,
    enablePodsOnNodeSyncListPager: true,
    // The kubelet API's log endpoint, which must-gather's node-log pods are read through.
    enableDebuggingHandlers: true,
  },
};

export interface KwokStageOptions {
  /** Job names whose pods a simulator finishes itself (it does their work while they run). */
  simulatedJobs?: readonly string[];
  /** How long a Job's pod runs before it completes; default 100ms. */
  jobRunMs?: number;
  /**
   * A jq query that is `true` for pods whose process a simulator plays (the kata-deploy installer): kwok
   * starts them Running but not Ready, never completes them, and removes a deleted one only once its
   * container has exited (phase Succeeded or Failed), as a kubelet waits for the process to end.
   */
  hostSimulatedPods?: string;
  /**
   * A jq query that is `true` for pods whose sandbox a simulator creates (peer pods: the cloud-api-adaptor
   * makes a VM first): kwok runs them only once their PodReadyToStartContainers condition is True, as a
   * kubelet starts containers only in a sandbox that exists; until then the simulator reports them.
   */
  sandboxGatedPods?: string;
}

/** True for a pod whose sandbox exists (the kubelet's PodReadyToStartContainers condition). */
const SANDBOX_READY = '[.status.conditions[]? | select(.type == "PodReadyToStartContainers" and .status == "True")] | length > 0';

/** The stages, as kwok's --config file (YAML documents). */
export function kwokStages(opts: KwokStageOptions = {}): string {
  const notDeleted = expr('.metadata.deletionTimestamp', 'DoesNotExist');
  const q = opts.hostSimulatedPods;
  const notSimulated = q ? [expr(q, 'NotIn', ['true'])] : [];
  const gated = opts.sandboxGatedPods ? [expr(`((${opts.sandboxGatedPods}) | not) or (${SANDBOX_READY})`, 'In', ['true'])] : [];
  const docs = [
    stage(
      'node-initialize',
      'Node',
      { matchExpressions: [expr(READY_STATUS, 'NotIn', ['True', 'False'])] },
      { statusTemplate: nodeInitializeTemplate },
    ),
    stage(
      'pod-ready',
      'Pod',
      {
        matchExpressions: [
          notDeleted,
          expr('.status.phase', 'In', ['Pending']),
          expr(READY_STATUS, 'NotIn', ['True']),
          ...notSimulated,
          ...gated,
        ],
      },
      { statusTemplate: podRunningTemplate(true) },
    ),
    stage(
      'pod-complete',
      'Pod',
      {
        matchExpressions: [
          notDeleted,
          expr('.status.phase', 'In', ['Running']),
          expr('.metadata.ownerReferences.[].kind', 'In', ['Job']),
          ...notSimulated,
          ...(opts.simulatedJobs?.length ? [expr('.metadata.labels["job-name"]', 'NotIn', [...opts.simulatedJobs])] : []),
        ],
      },
      { statusTemplate: podExitTemplate(true) },
      opts.jobRunMs ?? 100,
    ),
    stage('pod-delete', 'Pod', { matchExpressions: [expr('.metadata.deletionTimestamp', 'Exists'), ...notSimulated] }, { delete: true }),
    ...(q
      ? [
          stage(
            'simulated-pod-start',
            'Pod',
            { matchExpressions: [notDeleted, expr('.status.phase', 'In', ['Pending']), expr(q, 'In', ['true'])] },
            { statusTemplate: podRunningTemplate(false) },
          ),
          stage(
            'simulated-pod-delete',
            'Pod',
            {
              matchExpressions: [
                expr('.metadata.deletionTimestamp', 'Exists'),
                expr(q, 'In', ['true']),
                expr('.status.phase', 'In', ['Succeeded', 'Failed']),
              ],
            },
            { delete: true },
          ),
        ]
      : []),
  ];
  return [kwokConfiguration, ...docs].map((d) => stringify(d, { lineWidth: 0 })).join('---\n');
}

/**
 * Drops the Leases of the nodes kwok manages, for a kwok started again to take at once. A kubelet's lease
 * holder is its node, the same after a restart; kwok's is new each start, and the restarted kwok would
 * leave every node unmanaged (no pod started, no heartbeat) until the old process's leases expired. A
 * node kwok does not manage (its kubelet simulated dead) keeps its Lease, as it lapses.
 */
export async function dropManagedNodeLeases(client: KubeClient): Promise<void> {
  const managed = await client.list(Nodes, { labelSelector: `${KWOK_NODE_LABEL}=${KWOK_NODE_VALUE}` });
  for (const n of managed.items) await client.delete(Leases, n.metadata.name ?? '', { namespace: NODE_LEASE_NAMESPACE });
}
