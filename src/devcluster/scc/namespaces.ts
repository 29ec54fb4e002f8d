import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import { MCS_ANNOTATION, SUPPLEMENTAL_GROUPS_ANNOTATION, UID_RANGE_ANNOTATION } from '../../api/scc.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import { type Namespace, Namespaces } from '../../kube/resources.ts';
import type { Informer } from '../../runtime/informer.ts';

// OpenShift's namespace security allocation controller: every namespace gets a block of 10,000 user IDs
// (also its supplemental groups) and an SELinux MCS label of its own, as annotations the restricted SCCs
// read. Blocks are handed out in order from 1000000000, as on OpenShift; one in use is never handed out twice.

const FIRST_UID = 1_000_000_000;
const BLOCK_SIZE = 10_000;
const BLOCKS = 100_000;

/** The n-th pair of MCS categories (c0..c1023, two of them), written larger first as OpenShift does. */
function mcsLevel(n: number): string {
  let index = n;
  for (let high = 1; high < 1024; high++) {
    if (index < high) return `s0:c${high},c${index}`;
    index -= high;
  }
  throw new Error('the MCS categories are exhausted');
}

export function allocationFor(block: number): Record<string, string> {
  const range = `${FIRST_UID + block * BLOCK_SIZE}/${BLOCK_SIZE}`;
  return { [UID_RANGE_ANNOTATION]: range, [SUPPLEMENTAL_GROUPS_ANNOTATION]: range, [MCS_ANNOTATION]: mcsLevel(block) };
}

const blockOf = (ns: Namespace): number | undefined => {
  const m = /^(\d+)\//.exec(ns.metadata.annotations?.[UID_RANGE_ANNOTATION] ?? '');
  return m ? (Number(m[1]) - FIRST_UID) / BLOCK_SIZE : undefined;
};

const allocated = (ns: Namespace | undefined) =>
  !!ns?.metadata.annotations?.[UID_RANGE_ANNOTATION] && !!ns.metadata.annotations[MCS_ANNOTATION];

export class NamespaceAllocator {
  private readonly used = new Set<number>();
  private next = 0;
  private readonly inFlight = new Map<string, Promise<Record<string, string | undefined>>>();

  private readonly client: KubeClient;
  private readonly namespaces: Informer<Namespace>;
  private readonly log: Logger;

  constructor(client: KubeClient, namespaces: Informer<Namespace>, log: Logger) {
    this.client = client;
    this.namespaces = namespaces;
    this.log = log;
    namespaces.addEventHandler({
      add: (ns) => this.onChange(ns),
      update: (_, ns) => this.onChange(ns),
    });
  }

  private onChange(ns: Namespace): void {
    const b = blockOf(ns);
    if (b !== undefined) this.used.add(b);
    else if (!ns.metadata.deletionTimestamp) void this.annotations(objectName(ns)).catch(() => undefined);
  }

  /**
   * The namespace's allocation, made now if the controller has not come to it yet (a pod may arrive in a
   * namespace created a moment before, where OpenShift's admission waits for the controller).
   */
  annotations(name: string): Promise<Record<string, string | undefined>> {
    const ns = this.namespaces.get(name);
    if (allocated(ns)) return Promise.resolve(ns?.metadata.annotations ?? {});
    let p = this.inFlight.get(name);
    if (!p) {
      p = this.allocate(name).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, p);
    }
    return p;
  }

  private async allocate(name: string): Promise<Record<string, string | undefined>> {
    const live = await this.client.find(Namespaces, name);
    if (!live) throw new Error(`namespace ${name} not found`);
    if (allocated(live)) return live.metadata.annotations ?? {};
    for (const ns of this.namespaces.list()) {
      const b = blockOf(ns);
      if (b !== undefined) this.used.add(b);
    }
    while (this.used.has(this.next)) this.next++;
    if (this.next >= BLOCKS) throw new Error('the namespace UID blocks are exhausted');
    const block = this.next;
    this.used.add(block);
    const annotations = allocationFor(block);
    try {
      const patched = await this.client.patch(Namespaces, name, { metadata: { annotations } });
      this.log.debug({ namespace: name, ...annotations }, 'namespace security allocation');
      return patched.metadata.annotations ?? annotations;
    } catch (e) {
      this.used.delete(block);
      throw new Error(`allocating the UID range of namespace ${name}: ${errorMessage(e)}`);
    }
  }
}
