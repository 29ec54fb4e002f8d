/**
 * What the cluster must look like for a model, and how far a snapshot of it is from that: pure. Each
 * difference is one line; those about something osc made that should be gone are leaks. What every
 * platform shares (the KataConfig's status, the RuntimeClasses, the KataNodes, the monitor) is checked
 * here; how kata reaches the nodes is each platform's (the Machine Config Operator and peer pods on
 * OpenShift, expected-openshift.ts; kata-deploy on Kubernetes, expected-kubernetes.ts).
 */
import type { KataConfig } from '../../src/api/kataconfig.ts';
import type { Node } from '../../src/kube/resources.ts';
import { type KubernetesSnapshot, kubernetesDifferences } from './expected-kubernetes.ts';
import { type OpenShiftSnapshot, openshiftDifferences } from './expected-openshift.ts';
import { type Model, selected } from './scenario.ts';

export type { KubernetesSnapshot, OpenShiftSnapshot };

export interface Snapshot {
  kataConfig?: KataConfig;
  /** Names of the RuntimeClasses that exist among kata and kata-remote. */
  runtimeClasses: string[];
  nodes: Node[];
  monitor: boolean;
  /** The KataNodes: node name to phase. */
  kataNodes: Record<string, string | undefined>;
  /** Objects that name a KataConfig as owner while none exists ("kind/namespace/name"). */
  orphans: string[];
  /** The platform's own part (exactly one). */
  openshift?: OpenShiftSnapshot;
  kubernetes?: KubernetesSnapshot;
}

export interface Difference {
  what: string;
  leak: boolean;
}

/** Collects differences: `want` what must hold, `gone` what osc must have removed (a leak otherwise). */
export class Differences {
  readonly out: Difference[] = [];
  want(ok: boolean, what: string): void {
    if (!ok) this.out.push({ what, leak: false });
  }
  gone(absent: boolean, what: string): void {
    if (!absent) this.out.push({ what, leak: true });
  }
}

export const byName = new Intl.Collator('en', { numeric: true }).compare;

export function differences(m: Model, s: Snapshot): Difference[] {
  const d = new Differences();
  const { want, gone } = { want: d.want.bind(d), gone: d.gone.bind(d) };
  const sel = selected(m);
  if (m.installed) {
    const kc = s.kataConfig;
    want(!!kc && !kc.metadata.deletionTimestamp, 'the KataConfig exists');
    const ip = kc?.status?.conditions?.find((c) => c.type === 'InProgress');
    want(ip?.status === 'False' && ip.reason === '', `InProgress False (is ${ip?.status} ${ip?.reason} ${ip?.message ?? ''})`);
    const expectedNodes = { installed: sel, nodeCount: sel.length, readyNodeCount: sel.length };
    const kn = kc?.status?.kataNodes;
    want(
      JSON.stringify({ installed: kn?.installed ?? [], nodeCount: kn?.nodeCount, readyNodeCount: kn?.readyNodeCount }) ===
        JSON.stringify(expectedNodes) && Object.keys(kn ?? {}).every((k) => k in expectedNodes),
      `kataNodes ${JSON.stringify(expectedNodes)} (is ${JSON.stringify(kn)})`,
    );
    const rcs = m.peerPods ? ['kata', 'kata-remote'] : ['kata'];
    want(
      JSON.stringify([...(kc?.status?.runtimeClasses ?? [])].sort()) === JSON.stringify(rcs),
      `status.runtimeClasses ${rcs} (is ${kc?.status?.runtimeClasses})`,
    );
    want(s.runtimeClasses.includes('kata'), 'RuntimeClass kata');
    if (m.peerPods) want(s.runtimeClasses.includes('kata-remote'), 'RuntimeClass kata-remote');
    else gone(!s.runtimeClasses.includes('kata-remote'), 'RuntimeClass kata-remote');
    want(s.monitor, 'the kata monitor DaemonSet');
    for (const n of sel) want(s.kataNodes[n] === 'Installed', `KataNode ${n} Installed (is ${s.kataNodes[n] ?? 'absent'})`);
    for (const n of Object.keys(s.kataNodes)) if (!sel.includes(n)) gone(false, `KataNode ${n} (${s.kataNodes[n]})`);
  } else {
    gone(!s.kataConfig, 'the KataConfig');
    for (const rc of s.runtimeClasses) gone(false, `RuntimeClass ${rc}`);
    gone(!s.monitor, 'the kata monitor DaemonSet');
    for (const n of Object.keys(s.kataNodes)) gone(false, `KataNode ${n}`);
    for (const o of s.orphans) gone(false, `${o}, owned by a KataConfig that is gone`);
  }
  if (s.openshift) openshiftDifferences(m, s, s.openshift, d);
  if (s.kubernetes) kubernetesDifferences(m, s, s.kubernetes, d);
  if (!s.openshift && !s.kubernetes) want(false, 'a snapshot of the platform');
  return d.out;
}
