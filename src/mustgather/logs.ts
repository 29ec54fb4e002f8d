/**
 * What must-gather says and does about logs it cannot fetch the usual way: pods on nodes that run no
 * containers (the dev cluster's kwok nodes), kubelets the API server cannot reach, and an operator that
 * runs outside the cluster (its log is a file on the administrator's machine).
 */
import { open } from 'node:fs/promises';
import { ApiError, errorMessage } from '../kube/errors.ts';
import type { Node } from '../kube/resources.ts';

/** The label kwok manages its nodes by (the dev cluster's): no container runs on such a node. */
const KWOK_NODE_LABEL = 'kwok.x-k8s.io/node';

export const isSimulatedNode = (n: Node): boolean => n.metadata.labels?.[KWOK_NODE_LABEL] !== undefined;

/** At most this much of the operator's log file (its end): a dev cluster's debug log grows without bound. */
export const OPERATOR_LOG_BYTES = 8 * 1024 * 1024;

/** The last `maxBytes` of a file, from a line start. */
export async function readTail(path: string, maxBytes: number): Promise<string> {
  const f = await open(path, 'r');
  try {
    const { size } = await f.stat();
    const start = Math.max(0, size - maxBytes);
    const buf = Buffer.alloc(size - start);
    await f.read(buf, 0, buf.length, start);
    const text = buf.toString('utf8');
    return start === 0 ? text : text.slice(text.indexOf('\n') + 1);
  } finally {
    await f.close();
  }
}

/**
 * A failed `kubectl logs`, said plainly: the API server fetches a log from the node's kubelet, and when it
 * cannot reach it the raw answer is a dial or DNS error about the node's address.
 */
export function kubeletErrorReason(e: unknown, node: string): string {
  const message = errorMessage(e);
  const unreachable = /dial tcp|no such host|connection refused|i\/o timeout|no route to host/i.exec(message);
  if (!unreachable || (e instanceof ApiError && e.status < 500 && e.status !== 400)) return message;
  const detail =
    /(lookup .*?: no such host|connect: connection refused|i\/o timeout|no route to host)/i.exec(message)?.[1] ?? unreachable[0];
  return `the API server cannot reach the kubelet of node ${node || '(none)'} (${detail}), so it cannot read the log; check the node (oc get node ${node}, oc adm node-logs ${node})`;
}

export const operatorOutsideNote = (ns: string): string =>
  `No operator pod runs in namespace ${ns}, so there is no operator log to collect from the cluster.\n` +
  'The operator runs outside the cluster: with "osc start" its log is <home>/osc.log (.osc/osc.log in a checkout), and\n' +
  '"osc must-gather" collects it by itself when KUBECONFIG or --kubeconfig is that home\'s kubeconfig; with "osc run",\n' +
  'attach the log of that process.\n';

export const simulatedNodeReason = (node: string): string =>
  `node ${node} is simulated (kwok, the dev cluster): its containers never run, so they write no log (its journal is collected under nodes/)`;
