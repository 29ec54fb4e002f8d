/**
 * The node side of must-gather: the journals support reads first (CRI-O, the kubelet, and kata's and QEMU's
 * own lines), which only the node has. As OpenShift's must-gather does, one short-lived privileged pod per
 * node runs `journalctl` in the host's root (`chroot /host`), in a namespace of its own that goes away with
 * everything in it afterwards; each pod's output, read through the pod log API, is the node's journal.
 * Each node has a deadline and its own error; values that look like credentials are scrubbed.
 */

import { randomBytes } from 'node:crypto';
import { objectName } from '../api/meta.ts';
import { REQUIRED_SCC_ANNOTATION } from '../api/scc.ts';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage } from '../kube/errors.ts';
import { type Namespace, Namespaces, type Node, type Pod, Pods } from '../kube/resources.ts';
import { kubeletErrorReason } from './logs.ts';
import { scrubLog } from './scrub.ts';

/**
 * The journals collected, each as its own section, as the documentation's troubleshooting chapter reads them:
 * the container runtime's unit (CRI-O's `crio`; `containerd` on a node whose kubelet reports containerd), which
 * also holds the lines of the kata shims it started (they run in its cgroup), and the kubelet's; the kata
 * runtime's own identifier `kata`; QEMU, whose warnings and errors reach the journal only through the kata runtime, as
 * `kata` lines carrying a `qemuPid` field; and `virtiofsd`, which shares the pod's files with its VM.
 */
export const NODE_JOURNALS = { units: ['crio', 'kubelet'], identifiers: ['kata', 'virtiofsd'], qemu: 'qemuPid=[0-9]+' } as const;

export const NODE_LOG_CONTAINER = 'gather';
/** The label every node-log pod carries (`app.kubernetes.io/component`). */
export const NODE_LOG_COMPONENT = 'must-gather-node-logs';

/** The container runtime's systemd unit on a node, from what its kubelet reports. */
export function runtimeUnitOf(node: Node | undefined): 'crio' | 'containerd' {
  return (node?.status?.nodeInfo?.containerRuntimeVersion ?? '').startsWith('containerd://') ? 'containerd' : 'crio';
}

/** `journalctl`'s selectors for each section of a node's journals, in the order they are printed. */
export function journalSections(node?: Node): string[] {
  const units = NODE_JOURNALS.units.map((u) => (u === 'crio' ? runtimeUnitOf(node) : u));
  return [
    ...units.map((u) => `-u ${u}`),
    '-t kata',
    `-t kata -g '${NODE_JOURNALS.qemu}'`,
    ...NODE_JOURNALS.identifiers.filter((t) => t !== 'kata').map((t) => `-t ${t}`),
  ];
}

/** The shell script the pod runs in the host's root: one section per journal, the last day of each. */
export function journalScript(node?: Node): string {
  return journalSections(node)
    .map((s) => `echo "=== journalctl ${s}"; journalctl --no-pager --since=-1d ${s} || echo "(journalctl failed: $?)"`)
    .join('; ');
}

/** The pod that reads one node's journals: privileged, on that node whatever its taints, never restarted. */
export function nodeLogPod(node: string, namespace: string, image: string, nodeObject?: Node): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `node-logs-${node}`.slice(0, 63).replace(/[-.]+$/, ''),
      namespace,
      labels: { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': NODE_LOG_COMPONENT },
      // Made by whoever runs must-gather (a cluster administrator): pinned to OpenShift's privileged SCC,
      // which is what it needs, so that no other SCC of higher priority is chosen for it.
      annotations: { [REQUIRED_SCC_ANNOTATION]: 'privileged' },
    },
    spec: {
      nodeName: node,
      restartPolicy: 'Never',
      hostPID: true,
      activeDeadlineSeconds: 300,
      tolerations: [{ operator: 'Exists' }],
      containers: [
        {
          name: NODE_LOG_CONTAINER,
          image,
          command: ['chroot', '/host', 'sh', '-c', journalScript(nodeObject)],
          securityContext: { privileged: true, runAsUser: 0 },
          volumeMounts: [{ name: 'host', mountPath: '/host', readOnly: true }],
        },
      ],
      volumes: [{ name: 'host', hostPath: { path: '/', type: 'Directory' } }],
    },
  } as Pod;
}

export interface NodeLogsResult {
  /** Node name -> its journals (scrubbed). */
  journals: Map<string, string>;
  /** Per node, why its journals are missing. */
  problems: string[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`;

const finished = (p: Pod | undefined) => p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed';

/**
 * Runs one node-log pod per node (all at once) and collects their output; each node gets `timeoutMs` from
 * the start. The namespace, and with it every pod, is deleted before this returns.
 */
export async function collectNodeLogs(
  client: KubeClient,
  nodes: Node[],
  opts: { image: string; timeoutMs?: number; pollMs?: number },
): Promise<NodeLogsResult> {
  // The dev cluster's simulated nodes answer too: their host side plays the pod and serves its journal.
  const result: NodeLogsResult = { journals: new Map(), problems: [] };
  if (nodes.length === 0) return result;
  const namespace = `osc-must-gather-${randomBytes(3).toString('hex')}`;
  const ns: Namespace = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: namespace,
      // Privileged pods: Pod Security admission must allow them here (on OpenShift the SCC check applies too).
      labels: { 'pod-security.kubernetes.io/enforce': 'privileged', 'security.openshift.io/scc.podSecurityLabelSync': 'false' },
    },
  };
  try {
    await client.create(Namespaces, ns);
  } catch (e) {
    result.problems.push(`node logs: cannot create namespace ${namespace} for the node-log pods: ${errorMessage(e)}`);
    return result;
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  try {
    await Promise.all(
      nodes.map(async (n) => {
        const node = objectName(n);
        try {
          const pod = await client.create(Pods, nodeLogPod(node, namespace, opts.image, n));
          const name = objectName(pod);
          let last: Pod | undefined = pod;
          while (!finished(last) && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
            last = await client.find(Pods, name, namespace);
          }
          if (!finished(last)) {
            const statuses = (
              last?.status as { containerStatuses?: { state?: { waiting?: { reason?: string; message?: string } } }[] } | undefined
            )?.containerStatuses;
            const waiting = statuses?.[0]?.state?.waiting;
            const why = waiting
              ? `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`
              : `phase ${last?.status?.phase ?? 'unknown'}`;
            result.problems.push(`node ${node}: its node-log pod did not finish within ${seconds(opts.timeoutMs ?? 120_000)} (${why})`);
            return;
          }
          const text = await client
            .request<string>('GET', `${client.path(Pods, namespace, name)}/log`, { query: { container: NODE_LOG_CONTAINER } })
            .catch((e) => Promise.reject(new Error(kubeletErrorReason(e, node))));
          result.journals.set(node, scrubLog(typeof text === 'string' ? text : String(text)));
          if (last?.status?.phase === 'Failed') result.problems.push(`node ${node}: its node-log pod failed; what it printed is kept`);
        } catch (e) {
          result.problems.push(`node ${node}: ${errorMessage(e)}`);
        }
      }),
    );
  } finally {
    await client.delete(Namespaces, namespace).catch(() => undefined);
  }
  return result;
}
