/** A pod VM store for the cloud API endpoints alone, without the dev cluster's adaptor simulation. */
import type { PodVMStore } from '../../src/devcluster/cloudapi/ec2.ts';
import { podVMStats } from '../../src/devcluster/podvms.ts';
import type { PodVM } from '../../src/peerpods/leaks.ts';

export function podVMStore(): PodVMStore & { vms: Map<string, PodVM>; regions: Map<string, string> } {
  const vms = new Map<string, PodVM>();
  return {
    vms,
    regions: new Map(),
    stats: podVMStats(),
    delete: async (id: string) => {
      vms.delete(id);
    },
  };
}
