/**
 * The etcd restore fault: backups taken as the run goes, one of them restored (the administrator then applies
 * the intent again: admin.ts). osc must converge from whatever the backup held to that intent: its informers
 * list again after 410 Gone and its own records (annotations, its Lease) are the backup's. The simulators
 * keep their memory (the machine config daemons' updates under way, kata-deploy's hosts, the cloud's
 * images), as the real hosts and cloud would.
 *
 * One record osc cannot rebuild from the cluster: PODVM_AMI_ID, the pod VM image it built. After a restore
 * it is the backup's, while the cloud kept what was built or deleted since. osc does not look for its images
 * in the cloud, so the administrator does what docs/peerpods.md's restore steps say, and the run counts it:
 * images the restored PODVM_AMI_ID does not name are deleted from the cloud, and a PODVM_AMI_ID naming an
 * image that is gone is emptied (osc builds a new one if peer pods are on).
 */
import { join } from 'node:path';
import { OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ConfigMaps } from '../../src/kube/resources.ts';

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
