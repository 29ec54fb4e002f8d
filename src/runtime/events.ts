import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../kube/client.ts';
import { errorMessage } from '../kube/errors.ts';
import { Events, type KubeEvent } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';

export type EventType = 'Normal' | 'Warning';

/** MicroTime, as events.k8s.io/v1 requires for eventTime. */
const microTime = (d: Date) => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/**
 * Records events.k8s.io/v1 Events about objects. Events about cluster-scoped objects go to the `default`
 * namespace (as client-go does), where `kubectl describe` finds them. An event that repeats (same object,
 * reason and note) becomes a series on the first one instead of a new object. Recording never throws:
 * events are best effort and must not fail a reconcile.
 */
export class EventRecorder {
  private readonly recent = new Map<string, { name: string; namespace: string; count: number }>();

  private readonly client: KubeClient;
  private readonly controller: string;
  private readonly instance: string;
  private readonly log: Logger | undefined;

  constructor(client: KubeClient, controller: string, instance: string, log?: Logger) {
    this.client = client;
    this.controller = controller;
    this.instance = instance;
    this.log = log;
  }

  async record(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): Promise<void> {
    const namespace = regarding.metadata.namespace || 'default';
    const dedupKey = `${regarding.metadata.uid}/${reason}/${note}`;
    const now = new Date();
    try {
      const seen = this.recent.get(dedupKey);
      if (seen) {
        seen.count++;
        await this.client.patch(
          Events,
          seen.name,
          { series: { count: seen.count, lastObservedTime: microTime(now) } },
          { namespace: seen.namespace, type: 'merge' },
        );
        return;
      }
      const name = `${regarding.metadata.name}.${randomBytes(8).toString('hex')}`;
      const event: KubeEvent = {
        metadata: { name, namespace },
        eventTime: microTime(now),
        reportingController: this.controller,
        reportingInstance: this.instance,
        action,
        reason,
        note: note.slice(0, 1024),
        type,
        regarding: {
          apiVersion: regarding.apiVersion,
          kind: regarding.kind,
          name: regarding.metadata.name,
          namespace: regarding.metadata.namespace,
          uid: regarding.metadata.uid,
        },
      };
      await this.client.create(Events, event);
      if (this.recent.size > 1000) this.recent.clear();
      this.recent.set(dedupKey, { name, namespace, count: 1 });
    } catch (e) {
      this.log?.warn({ err: errorMessage(e), reason }, 'could not record event');
    }
  }
}
