/**
 * The benchmark's observer, in a process of its own so that its clock is not held up by the simulated
 * cluster's work: it watches nodes and the KataConfig and notes when each node entered a state
 * ("installing": MCO Working; "installed": Done on a kata-oc config) and when the KataConfig status first
 * listed it so. Reports the delays over IPC.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { type KataConfig, KataConfigs } from '../src/api/kataconfig.ts';
import { KATA_POOL, MCO_CURRENT_CONFIG, MCO_STATE } from '../src/api/names.ts';
import { KubeClient } from '../src/kube/client.ts';
import { type Node, Nodes } from '../src/kube/resources.ts';
import { Informer } from '../src/runtime/informer.ts';

const [kubeconfig, workersArg] = process.argv.slice(2);
if (!kubeconfig || !process.send) throw new Error('usage: forked with a kubeconfig path and a worker count');
const workers = Number(workersArg);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const client = new KubeClient(kc);
const nodeSeen = new Map<string, number>();
const statusSeen = new Map<string, number>();
const ac = new AbortController();

const nodes = new Informer<Node>(client, Nodes);
const onNode = (n: Node) => {
  const a = n.metadata.annotations ?? {};
  const name = n.metadata.name ?? '';
  const now = performance.now();
  if (a[MCO_STATE] === 'Working' && !nodeSeen.has(`installing/${name}`)) nodeSeen.set(`installing/${name}`, now);
  if (a[MCO_STATE] === 'Done' && a[MCO_CURRENT_CONFIG]?.startsWith(`rendered-${KATA_POOL}-`) && !nodeSeen.has(`installed/${name}`))
    nodeSeen.set(`installed/${name}`, now);
};
nodes.addEventHandler({ add: onNode, update: (_o, n) => onNode(n) });

let done = false;
const kcs = new Informer<KataConfig>(client, KataConfigs);
const onKc = (k: KataConfig) => {
  const now = performance.now();
  for (const list of ['installing', 'installed'] as const)
    for (const name of k.status?.kataNodes?.[list] ?? []) if (!statusSeen.has(`${list}/${name}`)) statusSeen.set(`${list}/${name}`, now);
  const c = k.status?.conditions?.find((x) => x.type === 'InProgress');
  if (!done && c?.status === 'False' && k.status?.kataNodes?.readyNodeCount === workers) {
    done = true;
    process.send?.({ done: true });
  }
};
kcs.addEventHandler({ add: onKc, update: (_o, n) => onKc(n) });
void nodes.run(ac.signal);
void kcs.run(ac.signal);
await Promise.all([nodes.waitForSync(), kcs.waitForSync()]);

process.on('message', async (msg: { cmd: string }) => {
  if (msg.cmd === 'report') {
    const delays: number[] = [];
    for (const [key, at] of nodeSeen) {
      const shown = statusSeen.get(key);
      // Two watch streams may deliver a few ms apart: a status cannot show a state before it happened.
      if (shown !== undefined) delays.push(Math.max(0, shown - at));
    }
    process.send?.({ delays });
  } else if (msg.cmd === 'stop') {
    ac.abort();
    await client.close();
    process.exit(0);
  }
});
process.send({ ready: true });
