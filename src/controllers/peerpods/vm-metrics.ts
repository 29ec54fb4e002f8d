import { Counter, type Registry } from 'prom-client';
import type { Pod } from '../../kube/resources.ts';
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

const REVISION_LABEL = 'controller-revision-hash';
const revisionOf = (p: Pod) => p.metadata.labels?.[REVISION_LABEL];

/**
 * Counts the adaptor pods replaced because the pod template changed: a new adaptor pod on a node whose
 * previous adaptor pod (gone, or going) ran another revision of the template. That is a restart of the
 * adaptor, whoever deleted the old pod (the DaemonSet controller under RollingUpdate, the administrator
 * under OnDelete). A pod killed and recreated with the same template, or lost with its node, is no
 * template restart and does not count.
 */
export function watchAdaptorRestarts(pods: Informer<Pod>, metrics: PodVMMetrics): void {
  /** The last adaptor pod seen going from each node, not yet matched with its replacement. */
  const goneFrom = new Map<string, { uid: string; rev: string }>();
  /** Pods already matched with their replacement (so that their deletion, seen later, is not matched again). */
  const matched = new Set<string>();
  const going = (p: Pod) => {
    const node = p.spec?.nodeName;
    const rev = revisionOf(p);
    const uid = p.metadata.uid ?? '';
    if (matched.has(uid)) return;
    if (node && rev) goneFrom.set(node, { uid, rev });
  };
  // A pod counts once it is on its node (a DaemonSet's pods are created unplaced, then scheduled).
  const placed = (p: Pod) => {
    const node = p.spec?.nodeName ?? '';
    const rev = revisionOf(p);
    if (!rev || p.metadata.deletionTimestamp) return;
    const terminating = pods
      .list()
      .find((o) => o.metadata.uid !== p.metadata.uid && o.spec?.nodeName === node && o.metadata.deletionTimestamp);
    const before = terminating ? { uid: terminating.metadata.uid ?? '', rev: revisionOf(terminating) ?? '' } : goneFrom.get(node);
    goneFrom.delete(node);
    if (!before) return;
    matched.add(before.uid);
    if (matched.size > 1000) matched.delete(matched.values().next().value ?? '');
    if (before.rev !== rev) metrics.adaptorRestarts.inc();
  };
  pods.addEventHandler({
    add: (p) => {
      if (p.spec?.nodeName) placed(p);
    },
    update: (before, after) => {
      if (!before.spec?.nodeName && after.spec?.nodeName) placed(after);
      if (!before.metadata.deletionTimestamp && after.metadata.deletionTimestamp) going(after);
    },
    delete: (p) => {
      going(p);
      matched.delete(p.metadata.uid ?? '');
    },
  });
}
