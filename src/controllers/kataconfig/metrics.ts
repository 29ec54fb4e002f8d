import { Gauge, type Registry } from 'prom-client';
import { KATA_NODE_LISTS, type KataNodes } from '../../api/kataconfig.ts';
import type { InProgressState } from './state.ts';

const STATES = KATA_NODE_LISTS.map((l) => l.list);
const REASONS = ['Installing', 'Updating', 'Uninstalling', 'Failed', 'BlockedByExistingKataPods'] as const;

/** Kata state as Prometheus gauges: what an alert on a stuck or failed rollout needs. */
export class KataMetrics {
  readonly nodes: Gauge<'state'>;
  readonly selected: Gauge;
  readonly inProgress: Gauge<'reason'>;
  readonly runtimeClass: Gauge<'runtime_class'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.nodes = new Gauge({
      name: 'osc_kata_nodes',
      help: 'Nodes per kata state (KataConfig status.kataNodes lists).',
      labelNames: ['state'],
      registers,
    });
    this.selected = new Gauge({
      name: 'osc_kata_selected_nodes',
      help: 'Nodes selected for kata (status.kataNodes.nodeCount).',
      registers,
    });
    this.inProgress = new Gauge({
      name: 'osc_kataconfig_in_progress',
      help: '1 for the reason of the KataConfig InProgress condition while it is True (or BlockedByExistingKataPods), else 0.',
      labelNames: ['reason'],
      registers,
    });
    this.runtimeClass = new Gauge({
      name: 'osc_runtime_class_available',
      help: '1 when the RuntimeClass was created by osc and workloads can use it.',
      labelNames: ['runtime_class'],
      registers,
    });
    this.reset();
  }

  observe(kataNodes: KataNodes, state: InProgressState, runtimeClasses: readonly string[]): void {
    for (const s of STATES) this.nodes.set({ state: s }, kataNodes[s]?.length ?? 0);
    this.selected.set(kataNodes.nodeCount);
    for (const r of REASONS) this.inProgress.set({ reason: r }, state.reason === r ? 1 : 0);
    for (const rc of ['kata', 'kata-remote']) this.runtimeClass.set({ runtime_class: rc }, runtimeClasses.includes(rc) ? 1 : 0);
  }

  reset(): void {
    this.observe({ nodeCount: 0, readyNodeCount: 0 }, { status: 'False', reason: '', message: '' }, []);
  }
}
