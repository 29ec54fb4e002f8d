/**
 * Work done twice, as the cluster shows it. On OpenShift a node's reboot is the costly work: one that
 * leaves the node's configuration (its machine config daemon's currentConfig) as it was is needless. On
 * Kubernetes it is a kata-deploy install run (an installer pod, or a restart of its container, turning
 * Ready): one that puts on a node the configuration its last install already put there, with kata still
 * on the node (kata-deploy's label never removed in between), is needless. The extension MachineConfig
 * created more often than the KataConfig was installed, or rewritten, is work done twice too.
 *
 * An etcd restore rolls objects back (a node's boot id, its annotations, a pod that had gone): what the
 * watches show then is the store going back, not work. The run pauses the trackers around a restore and
 * takes the cluster as it is afterwards as the new baseline.
 */
import { EXTENSION_MACHINE_CONFIG, MCO_CURRENT_CONFIG } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import { CONFIG_ANNOTATION, KATA_RUNTIME_LABEL } from '../../src/platform/kubernetes/katadeploy.ts';
import type { Informer } from '../../src/runtime/informer.ts';

export interface WorkTotals {
  /** Reboots (OpenShift) or kata-deploy install runs (Kubernetes). */
  runs: number;
  /** Of those, the ones that changed nothing. */
  needless: number;
  machineConfigCreates: number;
  machineConfigRewrites: number;
  /** Where the needless ones were: the node and the steps of its runs and configuration changes. */
  needlessDetail: string[];
  /**
   * Kubernetes: install runs of a second installer pod the DaemonSet controller made on a node whose pod was
   * still there and not being deleted (after an API server restart lost its create's answer, it creates
   * again): Kubernetes' own duplicate, not work osc asked for, counted apart from the needless ones.
   */
  duplicatePodRuns: string[];
  /**
   * Reboots under way when an etcd restore came: the new boot reported, the configuration it applied not
   * yet written. The restore rolls the node's annotations back, so whether they changed it cannot be told.
   */
  unjudged: string[];
}

export interface WorkTracker {
  /** The chaos step under way, recorded with each run so that a needless one can be traced to its fault. */
  atStep(step: number): void;
  /** The figures so far (the nodes still in the cluster included). */
  totals(): WorkTotals;
  /** From now on, changes are the store going back (an etcd restore), not work. */
  pause(): void;
  /** The cluster as the caches show it now is the new baseline; changes count again. */
  resume(): void;
}

/** OpenShift: reboots (a new boot id) without a change of the node's current configuration. */
export function trackReboots(dev: DevCluster): WorkTracker {
  type Track = { boot?: string; config?: string; reboots: number[]; configChanges: number[] };
  const track = new Map<string, Track>();
  let reboots = 0;
  let needless = 0;
  let step = 0;
  const needlessDetail: string[] = [];
  const unjudged: string[] = [];
  let mcCreates = 0;
  let mcRewrites = 0;
  let paused = false;
  const baseline = (n: Node): Track => ({
    boot: n.status?.nodeInfo?.bootID,
    config: n.metadata.annotations?.[MCO_CURRENT_CONFIG],
    reboots: [],
    configChanges: [],
  });
  const settle = (node: string, t: Track) => {
    reboots += t.reboots.length;
    const over = t.reboots.length - t.configChanges.length;
    if (over > 0) {
      needless += over;
      needlessDetail.push(
        `${node}: ${t.reboots.length} reboot(s) at step(s) ${t.reboots.join(', ')}; ${t.configChanges.length} configuration change(s)${t.configChanges.length ? ` at step(s) ${t.configChanges.join(', ')}` : ''}`,
      );
    }
    t.reboots = [];
    t.configChanges = [];
  };
  dev.informers.nodes.addEventHandler({
    add: (n) => {
      if (!track.has(n.metadata.name ?? '')) track.set(n.metadata.name ?? '', baseline(n));
    },
    update: (_o, n) => {
      const t = track.get(n.metadata.name ?? '');
      if (!t) return;
      const boot = n.status?.nodeInfo?.bootID;
      const config = n.metadata.annotations?.[MCO_CURRENT_CONFIG];
      if (!paused) {
        if (config !== t.config) t.configChanges.push(step);
        if (boot && t.boot && boot !== t.boot) t.reboots.push(step);
      }
      t.boot = boot;
      t.config = config;
    },
    delete: (n) => {
      const t = track.get(n.metadata.name ?? '');
      if (t) settle(n.metadata.name ?? '', t);
      track.delete(n.metadata.name ?? '');
    },
  });
  dev.informers.machineConfigs.addEventHandler({
    add: (mc) => {
      if (!paused && mc.metadata.name === EXTENSION_MACHINE_CONFIG) mcCreates++;
    },
    update: (o, n) => {
      if (!paused && n.metadata.name === EXTENSION_MACHINE_CONFIG && n.metadata.generation !== o.metadata.generation) mcRewrites++;
    },
  });
  return {
    atStep: (i) => {
      step = i;
    },
    totals: () => {
      for (const [node, t] of track) settle(node, t);
      return {
        runs: reboots,
        needless,
        machineConfigCreates: mcCreates,
        machineConfigRewrites: mcRewrites,
        needlessDetail,
        duplicatePodRuns: [],
        unjudged,
      };
    },
    pause: () => {
      // A node whose last reboot's configuration is not written yet: that reboot is counted, not judged.
      for (const [node, t] of track) {
        const open = t.reboots.length - t.configChanges.length;
        if (open <= 0) continue;
        const steps = t.reboots.splice(t.reboots.length - open, open);
        reboots += steps.length;
        unjudged.push(`${node}: reboot(s) at step(s) ${steps.join(', ')}`);
      }
      paused = true;
    },
    resume: () => {
      for (const [node, t] of track) settle(node, t);
      track.clear();
      for (const n of dev.informers.nodes.list()) track.set(n.metadata.name ?? '', baseline(n));
      paused = false;
    },
  };
}

const readyRun = (p: Pod): string | undefined => {
  const c = (p.status?.containerStatuses as { ready?: boolean; restartCount?: number }[] | undefined)?.[0];
  return c?.ready && !p.metadata.deletionTimestamp ? `${p.metadata.uid}/${c.restartCount ?? 0}` : undefined;
};

/**
 * Kubernetes: install runs (each installer pod, or restart of its container, that turns Ready) that put
 * the configuration the node already ran, kata never having left it since.
 */
export function trackReinstalls(nodes: Informer<Node>, installerPods: Informer<Pod>): WorkTracker {
  /** Per node: the configuration its last install run put, whether kata is still there, and that run (for the detail). */
  const state = new Map<string, { config?: string; kata: boolean; lastRun?: string }>();
  const counted = new Set<string>();
  let runs = 0;
  let needless = 0;
  let paused = false;
  let step = 0;
  const needlessDetail: string[] = [];
  const duplicatePodRuns: string[] = [];
  const of = (node: string) => {
    let s = state.get(node);
    if (!s) state.set(node, (s = { kata: false }));
    return s;
  };
  /** When each installer pod was seen going (its deletion asked for, or its object gone), by pod name: the detail of a needless run. */
  const going = new Map<string, { node: string; what: string }>();
  const podsOn = (node: string): string => {
    const here = installerPods.list().filter((q) => q.spec?.nodeName === node);
    const gone = [...going].filter(([name, g]) => g.node === node && !here.some((q) => q.metadata.name === name)).slice(-3);
    const now = here.map(
      (q) =>
        `${q.metadata.name} (created ${q.metadata.creationTimestamp ?? '?'}${readyRun(q) ? ', Ready' : ''}${q.metadata.deletionTimestamp ? `, deleting: ${going.get(q.metadata.name ?? '')?.what ?? q.metadata.deletionTimestamp}` : ''})`,
    );
    return `installer pods on the node now: ${now.join(', ') || 'none'}; the last gone: ${gone.map(([n, g]) => `${n} ${g.what}`).join(', ') || 'none'}`;
  };
  const onGoing = (p: Pod, how: string) => {
    const name = p.metadata.name ?? '';
    if (!going.has(name)) going.set(name, { node: p.spec?.nodeName ?? '', what: `${how} at step ${step} (${new Date().toISOString()})` });
  };
  const onPod = (p: Pod) => {
    if (p.metadata.deletionTimestamp) onGoing(p, 'deletion seen');
    const run = readyRun(p);
    const node = p.spec?.nodeName;
    if (!run || !node || counted.has(run)) return;
    counted.add(run);
    const s = of(node);
    const config = p.metadata.annotations?.[CONFIG_ANNOTATION];
    if (!paused) {
      runs++;
      if (s.kata && s.config === config) {
        const detail = `${node}: an install run at step ${step} put the configuration it already ran (${run} of pod ${p.metadata.name}; the last run there: ${s.lastRun ?? 'unknown'}; ${podsOn(node)})`;
        const twin = installerPods
          .list()
          .some((q) => q.spec?.nodeName === node && q.metadata.uid !== p.metadata.uid && !q.metadata.deletionTimestamp);
        if (twin) duplicatePodRuns.push(detail);
        else {
          needless++;
          needlessDetail.push(detail);
        }
      }
    }
    s.config = config;
    s.kata = true;
    s.lastRun = `${run} of pod ${p.metadata.name} at step ${step}`;
  };
  installerPods.addEventHandler({ add: onPod, update: (_o, p) => onPod(p), delete: (p) => onGoing(p, 'deleted') });
  const onNode = (n: Node) => {
    // kata-deploy's cleanup removes its label (or sets it false): kata left the node.
    if (n.metadata.labels?.[KATA_RUNTIME_LABEL] !== 'true') of(n.metadata.name ?? '').kata = false;
  };
  nodes.addEventHandler({ add: onNode, update: (_o, n) => onNode(n), delete: (n) => state.delete(n.metadata.name ?? '') });
  return {
    atStep: (i) => {
      step = i;
    },
    totals: () => ({ runs, needless, machineConfigCreates: 0, machineConfigRewrites: 0, needlessDetail, duplicatePodRuns, unjudged: [] }),
    pause: () => {
      paused = true;
    },
    resume: () => {
      // As on OpenShift, the cluster as the restore left it is the new baseline, not what the hosts ran before:
      // a node's configuration is the one its Ready installer pod records, where one came back with the
      // restore. A node with none has no record of what it runs (the pod that ran its last install is gone,
      // and the DaemonSet makes another, whose install kata-deploy runs whatever the host has): its next run
      // is not judged.
      state.clear();
      for (const n of nodes.list()) of(n.metadata.name ?? '').kata = n.metadata.labels?.[KATA_RUNTIME_LABEL] === 'true';
      for (const p of installerPods.list()) {
        const run = readyRun(p);
        const node = p.spec?.nodeName;
        if (!run || !node) continue;
        counted.add(run);
        const s = of(node);
        s.config = p.metadata.annotations?.[CONFIG_ANNOTATION];
        s.lastRun = `${run} of pod ${p.metadata.name}, as the restore at step ${step} left it`;
      }
      paused = false;
    },
  };
}
