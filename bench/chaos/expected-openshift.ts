/**
 * What the model implies on OpenShift, pure: the Machine Config Operator's pools and each worker's
 * configuration, osc's extension MachineConfig and CRI-O configuration, and peer pods (the adaptor, the
 * PeerPodConfig, the pod VM image in the cloud and in peer-pods-cm).
 */
import { KATA_NODE_ROLE_LABEL, MCO_CURRENT_CONFIG, MCO_STATE, PEER_POD_VM_RESOURCE } from '../../src/api/names.ts';
import type { MachineConfigPool } from '../../src/api/openshift.ts';
import { PEERPODS_FINALIZER } from '../../src/controllers/peerpods/desired.ts';
import type { Differences, Snapshot } from './expected.ts';
import { type Model, selected } from './scenario.ts';

export interface OpenShiftSnapshot {
  machineConfig: boolean;
  kataPool?: MachineConfigPool;
  workerPool?: MachineConfigPool;
  /** kata-crio-config's log level, when it exists. */
  crioLogLevel?: string;
  caaDaemonSet: boolean;
  peerPodConfig: boolean;
  /** Jobs in the operator's namespace (image creation and deletion). */
  jobs: string[];
  /** PODVM_AMI_ID in peer-pods-cm. */
  amiId: string;
  /** The pod VM images the simulated cloud holds. */
  cloudImages: string[];
}

const poolUpdated = (p: MachineConfigPool | undefined) =>
  !!p &&
  p.status?.observedGeneration === p.metadata.generation &&
  p.status?.configuration?.name === p.spec.configuration?.name &&
  !!p.status?.conditions?.some((c) => c.type === 'Updated' && c.status === 'True');

const byName = new Intl.Collator('en', { numeric: true }).compare;

export function openshiftDifferences(m: Model, s: Snapshot, o: OpenShiftSnapshot, d: Differences): void {
  const want = d.want.bind(d);
  const gone = d.gone.bind(d);
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
  const workerConfig = o.workerPool?.spec.configuration?.name;
  const kataConfig = o.kataPool?.spec.configuration?.name;
  for (const n of workers) {
    const name = n.metadata.name ?? '';
    const state = n.metadata.annotations?.[MCO_STATE];
    const current = n.metadata.annotations?.[MCO_CURRENT_CONFIG];
    want(state === 'Done', `${name}: MCO state Done (is ${state})`);
    if (m.installed && sel.includes(name)) want(!!kataConfig && current === kataConfig, `${name} runs the kata-oc pool's configuration`);
    else want(!!workerConfig && current === workerConfig, `${name} runs the worker pool's configuration (is ${current})`);
    if (!m.peerPods) gone(n.status?.capacity?.[PEER_POD_VM_RESOURCE] === undefined, `${name}: ${PEER_POD_VM_RESOURCE} capacity`);
  }
  want(poolUpdated(o.workerPool), 'worker pool Updated');

  if (m.installed) {
    want(o.machineConfig, 'the extension MachineConfig');
    want(poolUpdated(o.kataPool), 'kata-oc pool Updated');
    want(
      o.kataPool?.status?.machineCount === sel.length,
      `kata-oc pool has ${sel.length} machines (has ${o.kataPool?.status?.machineCount})`,
    );
    want(JSON.stringify(kataLabelled) === JSON.stringify(sel), `kata-oc role label on ${sel} (is on ${kataLabelled})`);
    if (m.logLevel === 'info') gone(o.crioLogLevel === undefined, 'kata-crio-config (logLevel info)');
    else want(o.crioLogLevel === m.logLevel, `kata-crio-config logLevel ${m.logLevel} (is ${o.crioLogLevel})`);
  } else {
    gone(!o.machineConfig, 'the extension MachineConfig');
    gone(!o.kataPool, 'the kata-oc pool');
    gone(o.crioLogLevel === undefined, 'kata-crio-config');
    gone(kataLabelled.length === 0, `kata-oc role label on ${kataLabelled}`);
  }

  const ppConditions = (s.kataConfig?.status?.conditions ?? []).filter((c) => /^(PeerPods|PodVMImage)/.test(c.type));
  const finalizer = !!s.kataConfig?.metadata.finalizers?.includes(PEERPODS_FINALIZER);
  if (m.peerPods) {
    want(o.caaDaemonSet, 'the cloud-api-adaptor DaemonSet');
    want(o.peerPodConfig, 'the PeerPodConfig');
    want(finalizer, 'the peer pods finalizer');
    const valid = ppConditions.find((c) => c.type === 'PeerPodsConfigValid');
    want(valid?.status === 'True', `PeerPodsConfigValid True (is ${valid?.status} ${valid?.message ?? ''})`);
    want(
      /^ami-/.test(o.amiId) && o.cloudImages.length === 1 && o.cloudImages[0] === o.amiId,
      `one pod VM image, in PODVM_AMI_ID (${o.amiId}; cloud ${o.cloudImages})`,
    );
    gone(!o.jobs.includes('osc-podvm-image-deletion'), 'the image deletion Job');
  } else {
    gone(!o.caaDaemonSet, 'the cloud-api-adaptor DaemonSet');
    gone(!o.peerPodConfig, 'the PeerPodConfig');
    gone(!finalizer, 'the peer pods finalizer');
    gone(ppConditions.length === 0, `peer pods conditions ${ppConditions.map((c) => c.type)}`);
    gone(o.amiId === '', `PODVM_AMI_ID ${o.amiId}`);
    gone(o.cloudImages.length === 0, `pod VM images ${o.cloudImages}`);
    for (const j of o.jobs) gone(false, `Job ${j}`);
  }
}
