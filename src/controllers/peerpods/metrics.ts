import { Counter, Gauge, type Registry } from 'prom-client';
import type { ImageJobKind, JobPhase } from './desired.ts';

const JOB_STATES = ['running', 'completed', 'failed'] as const;
const JOB_KINDS: ImageJobKind[] = ['creation', 'deletion'];

/** Peer pods as Prometheus metrics: is the configuration usable, how many pod VMs, how the image jobs fare. */
export class PeerPodsMetrics {
  readonly enabled: Gauge;
  readonly configValid: Gauge;
  readonly configProblems: Gauge;
  readonly vmLimit: Gauge;
  readonly nodes: Gauge;
  readonly pods: Gauge;
  readonly imageJob: Gauge<'job' | 'state'>;
  readonly imageJobFailures: Counter<'job'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.enabled = new Gauge({ name: 'osc_peerpods_enabled', help: '1 while the KataConfig enables peer pods.', registers });
    this.configValid = new Gauge({
      name: 'osc_peerpods_config_valid',
      help: '1 when peer-pods-cm and peer-pods-secret are valid, 0 when not (or peer pods are off); see the PeerPodsConfigValid condition.',
      registers,
    });
    this.configProblems = new Gauge({
      name: 'osc_peerpods_config_problems',
      help: 'Problems found in peer-pods-cm and peer-pods-secret.',
      registers,
    });
    this.vmLimit = new Gauge({
      name: 'osc_peerpods_vm_limit',
      help: 'Peer pod VMs each kata node may run (PeerPodConfig spec.limit, the kata.peerpods.io/vm capacity).',
      registers,
    });
    this.nodes = new Gauge({
      name: 'osc_peerpods_nodes',
      help: 'Nodes that advertise kata.peerpods.io/vm.',
      registers,
    });
    this.pods = new Gauge({ name: 'osc_peerpods_pods', help: 'Pods using the kata-remote RuntimeClass.', registers });
    this.imageJob = new Gauge({
      name: 'osc_podvm_image_job',
      help: '1 for the state of the latest pod VM image job of each kind (running, completed, failed).',
      labelNames: ['job', 'state'],
      registers,
    });
    this.imageJobFailures = new Counter({
      name: 'osc_podvm_image_job_failures_total',
      help: 'Pod VM image jobs seen failed, by kind.',
      labelNames: ['job'],
      registers,
    });
    for (const job of JOB_KINDS) this.imageJobFailures.inc({ job }, 0);
    this.reset();
  }

  setImageJob(kind: ImageJobKind, phase: JobPhase | undefined): void {
    const state = phase === 'active' ? 'running' : phase === 'complete' ? 'completed' : phase;
    for (const s of JOB_STATES) this.imageJob.set({ job: kind, state: s }, s === state ? 1 : 0);
  }

  reset(): void {
    this.enabled.set(0);
    this.configValid.set(0);
    this.configProblems.set(0);
    this.vmLimit.set(0);
    this.nodes.set(0);
    for (const k of JOB_KINDS) this.setImageJob(k, undefined);
  }
}
