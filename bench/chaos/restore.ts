/**
 * The etcd restore fault: backups taken as the run goes, one of them restored, and the administrator's part
 * afterwards.
 *
 * A restore rolls every API object back to the backup, the administrator's own included: a KataConfig
 * created since is gone, one deleted since is back, as are node labels and the logLevel. What the
 * administrator wants has not changed, so, as a GitOps tool or an administrator following a recovery
 * runbook would, the run's administrator applies the intent again once the API server answers: the
 * KataConfig as the model says (created, its spec patched, or deleted; one the restore brought back while it
 * was being deleted is waited out first) and the chaos label on exactly the labelled workers. The machines
 * did not go back in time: the Node of a machine removed since is deleted (what a cloud's node lifecycle
 * controller does), and a machine that joined since registers its Node again (its kubelet restarted). osc
 * must then converge from whatever the backup held to that intent: its informers list again after 410 Gone
 * and its own records (annotations, its Lease) are the backup's. The simulators keep their memory (the
 * machine config daemons' updates under way, kata-deploy's hosts, the cloud's images), as the real hosts
 * and cloud would.
 *
 * One record osc cannot rebuild from the cluster: PODVM_AMI_ID, the pod VM image it built. After a restore
 * it is the backup's, while the cloud kept what was built or deleted since. osc does not look for its images
 * in the cloud, so the administrator does what docs/peerpods.md's restore steps say, and the run counts it:
 * images the restored PODVM_AMI_ID does not name are deleted from the cloud, and a PODVM_AMI_ID naming an
 * image that is gone is emptied (osc builds a new one if peer pods are on).
 */
import { join } from 'node:path';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { ConfigMaps, Nodes } from '../../src/kube/resources.ts';
import { CHAOS_LABEL, CHAOS_SELECTOR, type Model } from './scenario.ts';

export interface Backup {
  file: string;
  /** The step it was taken in. */
  step: number;
  /** When (ms since the epoch). */
  at: number;
}

/** etcd snapshots taken as the run goes, the last few kept. */
export class Backups {
  private readonly list: Backup[] = [];
  private readonly dev: DevCluster;
  private readonly dir: string;
  private readonly keep: number;

  constructor(dev: DevCluster, dir: string, keep = 3) {
    this.dev = dev;
    this.dir = dir;
    this.keep = keep;
  }

  async take(step: number): Promise<void> {
    const file = join(this.dir, `etcd-${step % (this.keep + 1)}.db`);
    await this.dev.controlPlane.snapshotEtcd(file);
    this.list.push({ file, step, at: Date.now() });
    if (this.list.length > this.keep) this.list.shift();
  }

  /** The oldest kept: steps, minutes, before. */
  oldest(): Backup | undefined {
    return this.list[0];
  }
}

const isWorker = (name: string) => /^worker-\d+$/.test(name);

/**
 * The administrator after the restore: machines as they are, labels and the KataConfig as the model says.
 * Throws while the restored KataConfig is still being deleted (the run retries, as a person would).
 */
export async function reapplyIntent(dev: DevCluster, m: Model, kcName: string): Promise<void> {
  const c = dev.client;
  const nodes = (await c.list(Nodes)).items.map((n) => n.metadata.name ?? '');
  for (const n of nodes.filter((x) => isWorker(x) && !m.workers.includes(x))) {
    await c.delete(Nodes, n).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  }
  for (const w of m.workers.filter((x) => !nodes.includes(x))) await dev.addWorker(w);
  for (const w of m.workers) await c.patch(Nodes, w, { metadata: { labels: { [CHAOS_LABEL]: m.labelled.includes(w) ? 'kata' : null } } });

  const kc = await c.find(KataConfigs, kcName);
  if (!m.installed) {
    if (kc && !kc.metadata.deletionTimestamp) await c.delete(KataConfigs, kcName);
    return;
  }
  if (kc?.metadata.deletionTimestamp) throw new Error('the restored KataConfig is still being deleted; waiting to create it again');
  const spec: KataConfig['spec'] = { logLevel: m.logLevel, enablePeerPods: m.peerPods };
  if (!kc) {
    await c.create(KataConfigs, {
      metadata: { name: kcName },
      spec: { ...spec, ...(m.selector ? { kataConfigPoolSelector: CHAOS_SELECTOR } : {}) },
    });
    return;
  }
  await c.patch(KataConfigs, kcName, { spec: { ...spec, kataConfigPoolSelector: m.selector ? CHAOS_SELECTOR : null } });
}

/**
 * The administrator's peer pods steps after a restore (OpenShift): answers the images deleted because no
 * PODVM_AMI_ID names them any more, and the image the restored PODVM_AMI_ID named that the cloud no longer has.
 */
export async function reconcilePodVMImages(dev: DevCluster): Promise<{ orphaned: string[]; dangling?: string }> {
  const cm = await dev.client.find(ConfigMaps, PEER_PODS_CM, OPERATOR_NAMESPACE);
  const recorded = cm?.data?.PODVM_AMI_ID ?? '';
  const images = dev.cloud.images;
  const orphaned = [...images.keys()].filter((i) => i !== recorded);
  for (const i of orphaned) images.delete(i);
  if (!recorded || images.has(recorded)) return { orphaned };
  await dev.client.patch(ConfigMaps, PEER_PODS_CM, { data: { PODVM_AMI_ID: '' } }, { namespace: OPERATOR_NAMESPACE });
  return { orphaned, dangling: recorded };
}
