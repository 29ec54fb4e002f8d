/**
 * What the cluster must look like for a model, and how far a snapshot of it is from that: pure. Each
 * difference is one line; those about something osc made that should be gone are leaks.
 */
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { KATA_NODE_ROLE_LABEL, MCO_CURRENT_CONFIG, MCO_STATE, PEER_POD_VM_RESOURCE } from '../../src/api/names.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import { PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import type { Node } from '../../src/kube/resources.ts';
import { type Model, selected } from './scenario.ts';

export interface Snapshot {
  kataConfig?: KataConfig;
  /** Names of the RuntimeClasses that exist among kata and kata-remote. */
  runtimeClasses: string[];
  machineConfig: boolean;
  kataPool?: MachineConfigPool;
  workerPool?: MachineConfigPool;
  /** kata-crio-config's log level, when it exists. */
  crioLogLevel?: string;
  nodes: Node[];
  monitor: boolean;
  caaDaemonSet: boolean;
  peerPodConfig: boolean;
  /** Jobs in the operator's namespace (image creation and deletion). */
  jobs: string[];
  /** PODVM_AMI_ID in peer-pods-cm. */
  amiId: string;
  /** The pod VM images the simulated cloud holds. */
  cloudImages: string[];
  /** Objects that name a KataConfig as owner while none exists ("kind/namespace/name"). */
  orphans: string[];
}

export interface Difference {
  what: string;
  leak: boolean;
}

const poolUpdated = (p: MachineConfigPool | undefined) =>
  !!p &&
  p.status?.observedGeneration === p.metadata.generation &&
  p.status?.configuration?.name === p.spec.configuration?.name &&
  !!p.status?.conditions?.some((c) => c.type === 'Updated' && c.status === 'True');

const byName = new Intl.Collator('en', { numeric: true }).compare;

export function differences(m: Model, s: Snapshot): Difference[] {
  const out: Difference[] = [];
  const want = (ok: boolean, what: string) => {
    if (!ok) out.push({ what, leak: false });
  };
  const gone = (absent: boolean, what: string) => {
    if (!absent) out.push({ what, leak: true });
  };
  const sel = selected(m);
  const workers = s.nodes.filter((n) => n.metadata.labels?.['node-role.kubernetes.io/worker'] !== undefined);
  want(
    JSON.stringify(workers.map((n) => n.metadata.name ?? '').sort(byName)) === JSON.stringify([...m.workers].sort(byName)),
    `workers ${JSON.stringify(m.workers)}`,
  );
  const kataLabelled = workers
    .filter((n) => n.metadata.labels?.[KATA_NODE_ROLE_LABEL] !== undefined)
    .map((n) => n.metadata.name ?? '')
    .sort(byName);
  const workerConfig = s.workerPool?.spec.configuration?.name;
  const kataConfig = s.kataPool?.spec.configuration?.name;
  for (const n of workers) {
    const name = n.metadata.name ?? '';
    const state = n.metadata.annotations?.[MCO_STATE];
    const current = n.metadata.annotations?.[MCO_CURRENT_CONFIG];
    want(state === 'Done', `${name}: MCO state Done (is ${state})`);
    if (m.installed && sel.includes(name)) want(!!kataConfig && current === kataConfig, `${name} runs the kata-oc pool's configuration`);
    else want(!!workerConfig && current === workerConfig, `${name} runs the worker pool's configuration (is ${current})`);
    if (!m.peerPods) gone(n.status?.capacity?.[PEER_POD_VM_RESOURCE] === undefined, `${name}: ${PEER_POD_VM_RESOURCE} capacity`);
  }
  want(poolUpdated(s.workerPool), 'worker pool Updated');

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
    want(s.machineConfig, 'the extension MachineConfig');
    want(poolUpdated(s.kataPool), 'kata-oc pool Updated');
    want(
      s.kataPool?.status?.machineCount === sel.length,
      `kata-oc pool has ${sel.length} machines (has ${s.kataPool?.status?.machineCount})`,
    );
    want(JSON.stringify(kataLabelled) === JSON.stringify(sel), `kata-oc role label on ${sel} (is on ${kataLabelled})`);
    if (m.logLevel === 'info') gone(s.crioLogLevel === undefined, 'kata-crio-config (logLevel info)');
    else want(s.crioLogLevel === m.logLevel, `kata-crio-config logLevel ${m.logLevel} (is ${s.crioLogLevel})`);
    want(s.monitor, 'the kata monitor DaemonSet');
  } else {
    gone(!s.kataConfig, 'the KataConfig');
    for (const rc of s.runtimeClasses) gone(false, `RuntimeClass ${rc}`);
    gone(!s.machineConfig, 'the extension MachineConfig');
    gone(!s.kataPool, 'the kata-oc pool');
    gone(s.crioLogLevel === undefined, 'kata-crio-config');
    gone(kataLabelled.length === 0, `kata-oc role label on ${kataLabelled}`);
    gone(!s.monitor, 'the kata monitor DaemonSet');
    for (const o of s.orphans) gone(false, `${o}, owned by a KataConfig that is gone`);
  }

  const ppConditions = (s.kataConfig?.status?.conditions ?? []).filter((c) => /^(PeerPods|PodVMImage)/.test(c.type));
  const finalizer = !!s.kataConfig?.metadata.finalizers?.includes(PEERPODS_FINALIZER);
  if (m.peerPods) {
    want(s.caaDaemonSet, 'the cloud-api-adaptor DaemonSet');
    want(s.peerPodConfig, 'the PeerPodConfig');
    want(finalizer, 'the peer pods finalizer');
    const valid = ppConditions.find((c) => c.type === 'PeerPodsConfigValid');
    want(valid?.status === 'True', `PeerPodsConfigValid True (is ${valid?.status} ${valid?.message ?? ''})`);
    want(
      /^ami-/.test(s.amiId) && s.cloudImages.length === 1 && s.cloudImages[0] === s.amiId,
      `one pod VM image, in PODVM_AMI_ID (${s.amiId}; cloud ${s.cloudImages})`,
    );
    gone(!s.jobs.includes('osc-podvm-image-deletion'), 'the image deletion Job');
  } else {
    gone(!s.caaDaemonSet, 'the cloud-api-adaptor DaemonSet');
    gone(!s.peerPodConfig, 'the PeerPodConfig');
    gone(!finalizer, 'the peer pods finalizer');
    gone(ppConditions.length === 0, `peer pods conditions ${ppConditions.map((c) => c.type)}`);
    gone(s.amiId === '', `PODVM_AMI_ID ${s.amiId}`);
    gone(s.cloudImages.length === 0, `pod VM images ${s.cloudImages}`);
    for (const j of s.jobs) gone(false, `Job ${j}`);
  }
  return out;
}
