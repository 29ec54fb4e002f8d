import { isDeepStrictEqual } from 'node:util';
import { Counter, type Registry } from 'prom-client';
import type { DaemonSet } from '../../kube/resources.ts';
import type { Informer } from '../../runtime/informer.ts';

/**
 * Counters of what happens to the pod VMs and their adaptors, for alerts on leaks and on needless restarts:
 * leaked pod VMs found and deleted (src/controllers/peerpods/leaks*.ts), and the cloud-api-adaptor pods a
 * pod template change restarted (each restart cuts the running peer pods' tunnels to their VMs).
 */
export class PodVMMetrics {
  readonly leakedVMsFound: Counter<'cloud'>;
  readonly leakedVMsDeleted: Counter<'cloud'>;
  readonly leakedVMDeleteFailures: Counter<'cloud'>;
  readonly adaptorRestarts: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.leakedVMsFound = new Counter({
      name: 'osc_peerpods_leaked_vms_found_total',
      help: 'Pod VMs tagged with this cluster that no live peer pod owns, past the grace period (each counted once).',
      labelNames: ['cloud'],
      registers,
    });
    this.leakedVMsDeleted = new Counter({
      name: 'osc_peerpods_leaked_vms_deleted_total',
      help: 'Leaked pod VMs osc deleted.',
      labelNames: ['cloud'],
      registers,
    });
    this.leakedVMDeleteFailures = new Counter({
      name: 'osc_peerpods_leaked_vm_delete_failures_total',
      help: 'Deletions of leaked pod VMs the cloud refused or failed (see the PeerPodVMsLeaked condition).',
      labelNames: ['cloud'],
      registers,
    });
    this.adaptorRestarts = new Counter({
      name: 'osc_peerpods_adaptor_restarts_total',
      help: 'cloud-api-adaptor pods restarted by a change of the osc-caa-ds pod template (configuration or image).',
      registers,
    });
  }
}

/**
 * How many adaptor pods a DaemonSet update restarts: all it runs when the pod template changed under the
 * RollingUpdate strategy, none otherwise (OnDelete leaves running pods alone until deleted).
 */
export function adaptorRestarts(before: DaemonSet, after: DaemonSet): number {
  if ((after.spec?.updateStrategy as { type?: string } | undefined)?.type === 'OnDelete') return 0;
  if (isDeepStrictEqual(before.spec?.template, after.spec?.template)) return 0;
  const running = before.status?.currentNumberScheduled ?? before.status?.desiredNumberScheduled;
  return typeof running === 'number' ? running : 0;
}

/** Counts the restarts each update of the adaptor DaemonSet the cache shows causes. */
export function watchAdaptorRestarts(daemonSets: Informer<DaemonSet>, metrics: PodVMMetrics): void {
  daemonSets.addEventHandler({
    update: (before, after) => {
      const n = adaptorRestarts(before, after);
      if (n > 0) metrics.adaptorRestarts.inc(n);
    },
  });
}
