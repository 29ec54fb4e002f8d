/**
 * The host side of must-gather's node-log pods on kwok nodes. On a real node such a pod runs `journalctl`
 * in the host's root and its output is read back through the kubelet's log endpoint. kwok plays the
 * kubelet: it serves a pod's log from a file named by a `Logs` object (kwok.x-k8s.io). So, for each
 * node-log pod kwok has started, the player writes what the pod's script prints on that node (its
 * `journalctl` commands run against the node's simulated journal), names the file in a `Logs` object, waits until the API server serves it, and
 * then ends the pod as the kubelet would once the script exits.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ResourceType } from '../../api/meta.ts';
import { objectName } from '../../api/meta.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { type Pod, Pods } from '../../kube/resources.ts';
import type { KubeObject } from '../../kube/types.ts';
import { NODE_LOG_COMPONENT, NODE_LOG_CONTAINER } from '../../mustgather/nodelogs.ts';
import { Informer } from '../../runtime/informer.ts';
import { type NodeJournal, runJournalScript } from '../journal.ts';
import { exitedPodStatus } from './kwok.ts';

/** kwok's Logs: which file serves a pod's container log. */
export const KwokLogs: ResourceType<KubeObject & { spec?: unknown }> = {
  group: 'kwok.x-k8s.io',
  version: 'v1alpha1',
  plural: 'logs',
  kind: 'Logs',
  namespaced: true,
};

/** The CustomResourceDefinition kwok reads Logs from (`--enable-crds=Logs`). */
export const KWOK_LOGS_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'logs.kwok.x-k8s.io' },
  spec: {
    group: 'kwok.x-k8s.io',
    scope: 'Namespaced',
    names: { plural: 'logs', singular: 'logs', kind: 'Logs', listKind: 'LogsList' },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

/** How long the player waits for kwok to serve a log it was just told about. */
const SERVE_TIMEOUT_MS = 30_000;

export class NodeLogsPlayer {
  private readonly informer: Informer<Pod>;
  private readonly playing = new Set<string>();
  private readonly client: KubeClient;
  private readonly journal: NodeJournal;
  private readonly log: Logger | undefined;

  constructor(client: KubeClient, journal: NodeJournal, log?: Logger) {
    this.client = client;
    this.journal = journal;
    this.log = log;
    this.informer = new Informer(client, Pods, { labelSelector: `app.kubernetes.io/component=${NODE_LOG_COMPONENT}`, log });
    const consider = (p: Pod) => {
      if (p.status?.phase !== 'Running' || !p.spec?.nodeName || p.metadata.deletionTimestamp) return;
      const key = `${p.metadata.namespace}/${p.metadata.name}`;
      if (this.playing.has(key)) return;
      this.playing.add(key);
      this.play(p)
        .catch((e) => this.log?.warn({ pod: key, err: String(e) }, 'node-log pod not answered'))
        .finally(() => this.playing.delete(key));
    };
    this.informer.addEventHandler({ add: consider, update: (_o, p) => consider(p) });
  }

  run(signal: AbortSignal): Promise<void> {
    return this.informer.run(signal);
  }

  private async play(pod: Pod): Promise<void> {
    const name = objectName(pod);
    const namespace = pod.metadata.namespace ?? '';
    const node = pod.spec?.nodeName ?? '';
    // The host runs the pod's script: whatever it asks journalctl for, from this node's journal.
    const command = pod.spec?.containers.find((c) => c.name === NODE_LOG_CONTAINER)?.command as string[] | undefined;
    const lines = runJournalScript(command?.at(-1) ?? '', node, this.journal.entries(node));
    // The container runtime's log format, which kwok reads: time, stream, full-line tag, text.
    const stamp = new Date().toISOString();
    const file = join(this.journal.dir, `gather-${namespace}-${name}.log`);
    writeFileSync(file, lines.map((l) => `${stamp} stdout F ${l}\n`).join(''));
    const logs = { metadata: { name, namespace }, spec: { logs: [{ containers: [NODE_LOG_CONTAINER], logsFile: file }] } };
    await this.client.create(KwokLogs, logs as KubeObject).catch((e) => {
      if ((e as { status?: number }).status !== 409) throw e;
    });
    // kwok learns of the Logs object through its own watch: the pod ends only once its log can be read.
    const path = `${this.client.path(Pods, namespace, name)}/log`;
    const deadline = Date.now() + SERVE_TIMEOUT_MS;
    for (;;) {
      try {
        await this.client.request('GET', path, { query: { container: NODE_LOG_CONTAINER } });
        break;
      } catch (e) {
        if (isNotFound(e) && !(await this.client.find(Pods, name, namespace))) return;
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await this.client
      .patch(Pods, name, { status: exitedPodStatus(pod) }, { namespace, subresource: 'status', type: 'strategic', fieldManager: 'kubelet' })
      .catch((e) => {
        if (!isNotFound(e)) throw e;
      });
  }
}
