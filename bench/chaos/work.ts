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
}

export interface WorkTracker {
  /** The figures so far (the nodes still in the cluster included). */
  totals(): WorkTotals;
  /** From now on, changes are the store going back (an etcd restore), not work. */
  pause(): void;
  /** The cluster as the caches show it now is the new baseline; changes count again. */
  resume(): void;
}

/** OpenShift: reboots (a new boot id) without a change of the node's current configuration. */
export function trackReboots(dev: DevCluster): WorkTracker {
  const track = new Map<string, { boot?: string; config?: string; reboots: number; configChanges: number }>();
  let reboots = 0;
  let needless = 0;
  let mcCreates = 0;
  let mcRewrites = 0;
  let paused = false;
  const baseline = (n: Node) => ({
    boot: n.status?.nodeInfo?.bootID,
    config: n.metadata.annotations?.[MCO_CURRENT_CONFIG],
    reboots: 0,
    configChanges: 0,
  });
  const settle = (t: { reboots: number; configChanges: number }) => {
    reboots += t.reboots;
    needless += Math.max(0, t.reboots - t.configChanges);
    t.reboots = 0;
    t.configChanges = 0;
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
        if (config !== t.config) t.configChanges++;
        if (boot && t.boot && boot !== t.boot) t.reboots++;
      }
      t.boot = boot;
      t.config = config;
    },
    delete: (n) => {
      const t = track.get(n.metadata.name ?? '');
      if (t) settle(t);
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
    totals: () => {
      for (const t of track.values()) settle(t);
      return { runs: reboots, needless, machineConfigCreates: mcCreates, machineConfigRewrites: mcRewrites };
    },
    pause: () => {
      paused = true;
    },
    resume: () => {
      for (const t of track.values()) settle(t);
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
  const state = new Map<string, { config?: string; kata: boolean }>();
  const counted = new Set<string>();
  let runs = 0;
  let needless = 0;
  let paused = false;
  const of = (node: string) => {
    let s = state.get(node);
    if (!s) state.set(node, (s = { kata: false }));
    return s;
  };
  const onPod = (p: Pod) => {
    const run = readyRun(p);
    const node = p.spec?.nodeName;
    if (!run || !node || counted.has(run)) return;
    counted.add(run);
    const s = of(node);
    const config = p.metadata.annotations?.[CONFIG_ANNOTATION];
    if (!paused) {
      runs++;
      if (s.kata && s.config === config) needless++;
    }
    s.config = config;
    s.kata = true;
  };
  installerPods.addEventHandler({ add: onPod, update: (_o, p) => onPod(p) });
  const onNode = (n: Node) => {
    // kata-deploy's cleanup removes its label (or sets it false): kata left the node.
    if (n.metadata.labels?.[KATA_RUNTIME_LABEL] !== 'true') of(n.metadata.name ?? '').kata = false;
  };
  nodes.addEventHandler({ add: onNode, update: (_o, n) => onNode(n), delete: (n) => state.delete(n.metadata.name ?? '') });
  return {
    totals: () => ({ runs, needless, machineConfigCreates: 0, machineConfigRewrites: 0 }),
    pause: () => {
      paused = true;
    },
    resume: () => {
      for (const p of installerPods.list()) onPod(p);
      for (const n of nodes.list()) onNode(n);
      paused = false;
    },
  };
}
