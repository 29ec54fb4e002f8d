/**
 * Leaked pod VMs on the dev cluster: the simulated adaptor makes a VM per kata-remote pod; pods
 * force-deleted while the adaptor is down, and an adaptor crash between creating a VM and recording it,
 * leave VMs behind. osc finds them through the cloud's inventory and deletes them after the grace period,
 * with an event and a metric per VM, and never touches a VM of a live pod. A deletion the cloud refuses is
 * the condition PodVMDeletionFailed, cleared once a change of peer-pods-cm lets the deletion through. The
 * adaptor-restart counter counts the adaptor pods an edit of peer-pods-cm restarts. The chaos run kills the
 * adaptor pods for real, loses whole nodes and re-creates pods under their names; a node that comes back
 * under its name gives the pods it takes over new VMs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import {
  CAA_DAEMONSET,
  KATA_REMOTE_RUNTIME_CLASS,
  OPERATOR_NAMESPACE,
  PEER_POD_VM_RESOURCE,
  PEER_PODS_CM,
  PEER_PODS_SECRET,
} from '../../src/api/names.ts';
import { LEAKED_VM_DELETED_EVENT, LEAKED_VM_DELETION_FAILED_EVENT, PODVM_DELETION_FAILED } from '../../src/api/podvm-leaks.ts';
import { CONFIG_HASH_ANNOTATION } from '../../src/controllers/peerpods/desired.ts';
import { CRASH_BEFORE_RECORD_ANNOTATION, FAIL_PODVM_DELETION_ANNOTATION, type SimulatedPodVMs } from '../../src/devcluster/podvms.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import {
  ConfigMaps,
  DaemonSets,
  Events,
  Namespaces,
  Nodes,
  type Pod,
  PodDisruptionBudgets,
  Pods,
  RuntimeClasses,
  Secrets,
} from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { podPartOfVMName, podVMNamePart } from '../../src/peerpods/leaks.ts';
import { type RunningOperator, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor, waitForDefaultServiceAccount } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const APP = 'leaks-demo';
const GRACE_MS = 2000;
/** An administrator's key the simulated AWS account knows: the adaptor runs pod VMs with it, and osc lists and deletes them with it over EC2's API. */
const KEY = { accessKeyId: 'AKIAOSCTESTKEY000002', secretAccessKey: 'osc/TestSecretAccessKey+LeaksTest0123' };

const pod = (name: string, annotations?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: APP, ...(annotations ? { annotations } : {}) },
  spec: { runtimeClassName: KATA_REMOTE_RUNTIME_CLASS, containers: [{ name: 'c', image: 'registry.access.redhat.com/ubi9/ubi:9.3' }] },
});

describe('leaked pod VMs are found and deleted', () => {
  const cluster = useDevCluster({ workers: 2, platform: 'AWS', rebootMs: 300, awsUsers: [KEY] });
  let running: RunningOperator;
  const c = () => cluster.dev.client;
  const vms = (): SimulatedPodVMs => {
    const v = cluster.dev.podVMs;
    if (!v) throw new Error('the dev cluster has no pod VMs');
    return v;
  };
  const metrics = () => running.operator.manager.metrics.registry.metrics();
  const kataConfig = () => c().get(KataConfigs, 'example-kataconfig');
  const vmsOf = (p: Pod) => [...vms().vms.values()].filter((vm) => vms().podOf(vm.id) === p.metadata.uid).map((vm) => vm.id);
  const events = async (reason: string) => (await c().list(Events, { namespace: 'default' })).items.filter((e) => e.reason === reason);

  before(async () => {
    running = await startOperator(cluster.dev, { leakedVMs: { endpoint: cluster.dev.cloudAPI, graceMs: GRACE_MS, intervalMs: 500 } });
    await c().create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: PEER_PODS_SECRET, namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey },
    });
    await c().create(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: PEER_PODS_CM, namespace: NS },
      data: {
        CLOUD_PROVIDER: 'aws',
        PODVM_AMI_ID: 'ami-0123456789abcdef0',
        AWS_REGION: 'us-east-2',
        AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
        AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
        AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
      },
    });
    await c().create(KataConfigs, {
      apiVersion: 'kataconfiguration.openshift.io/v1',
      kind: 'KataConfig',
      metadata: { name: 'example-kataconfig' },
      spec: { enablePeerPods: true },
    } as KataConfig);
    await waitFor(async () => (await c().find(RuntimeClasses, KATA_REMOTE_RUNTIME_CLASS)) !== undefined, {
      timeoutMs: 300_000,
      message: 'kata-remote installed',
    });
    await waitFor(async () => (await c().list(Nodes)).items.filter((n) => n.status?.allocatable?.[PEER_POD_VM_RESOURCE]).length === 2, {
      timeoutMs: 120_000,
      message: 'both workers advertise kata.peerpods.io/vm',
    });
    await c().create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP } });
    await waitForDefaultServiceAccount(c(), APP);
  });
  after(() => running?.stop());

  test('pods force-deleted while the adaptor is down, and a crash before record, leave VMs that osc removes', async () => {
    const names = ['keep-a', 'keep-b', 'gone-a', 'gone-b', 'gone-c'];
    for (const n of names) await c().create(Pods, pod(n));
    await c().create(Pods, pod('crashy', { [CRASH_BEFORE_RECORD_ANNOTATION]: 'true' }));
    const live = new Map<string, Pod>();
    await waitFor(
      async () => {
        for (const n of [...names, 'crashy']) live.set(n, await c().get(Pods, n, APP));
        return [...live.values()].every((p) => vms().recorded(p.metadata.uid ?? ''));
      },
      { timeoutMs: 120_000, message: 'the adaptor made a VM for every pod' },
    );
    const get = (n: string) => live.get(n) as Pod;
    const kept = [...vmsOf(get('keep-a')), ...vmsOf(get('keep-b'))];
    assert.equal(kept.length, 2);
    const crashyVMs = vmsOf(get('crashy'));
    assert.equal(crashyVMs.length, 2, 'the crash left a second VM for the crashy pod');
    const lost = crashyVMs.filter((id) => id !== vms().recorded(get('crashy').metadata.uid ?? ''));
    assert.equal(lost.length, 1);

    // The adaptor is down; three pods go at once, without a grace period.
    vms().setAdaptorDown(true);
    const leaked = ['gone-a', 'gone-b', 'gone-c'].flatMap((n) => vmsOf(get(n)));
    for (const n of ['gone-a', 'gone-b', 'gone-c']) await c().delete(Pods, n, { namespace: APP, gracePeriodSeconds: 0 });
    await waitFor(async () => (await c().list(Pods, { namespace: APP })).items.length === 3, { message: 'three pods gone' });
    // And the simulated adaptor saw them go while it was down (its watch may lag the API server): else it
    // would stop their sandboxes itself once back, and leave osc nothing to find.
    await waitFor(() => ['gone-a', 'gone-b', 'gone-c'].every((n) => !vms().recorded(get(n).metadata.uid ?? '')), {
      message: 'the adaptor saw the three pods go while down',
    });
    vms().setAdaptorDown(false);

    await waitFor(() => leaked.every((id) => !vms().vms.has(id)), { timeoutMs: 60_000, message: 'osc deleted the three leaked VMs' });
    // The crashy pod lives: both its VMs stay (which one the adaptor uses is its business).
    for (const id of [...kept, ...crashyVMs]) assert.ok(vms().vms.has(id), `VM ${id} of a live pod is kept`);

    // The crashy pod goes normally: the adaptor deletes the VM it recorded, osc the one it lost.
    await c().delete(Pods, 'crashy', { namespace: APP, gracePeriodSeconds: 0 });
    await waitFor(() => crashyVMs.every((id) => !vms().vms.has(id)), { timeoutMs: 60_000, message: 'the lost VM deleted too' });
    for (const id of kept) assert.ok(vms().vms.has(id), `VM ${id} of a live pod is kept`);
    assert.equal(vms().stats.deletedByOsc, 4);

    const deleted = await waitFor(async () => {
      const ev = await events(LEAKED_VM_DELETED_EVENT);
      return ev.length === 4 ? ev : undefined;
    });
    for (const id of [...leaked, ...lost]) {
      assert.ok(
        deleted.some((e) => (e.note ?? '').includes(id)),
        `an event names ${id}`,
      );
    }
    const m = await metrics();
    assert.match(m, /^osc_peerpods_leaked_vms_found_total\{cloud="aws"\} 4$/m);
    assert.match(m, /^osc_peerpods_leaked_vms_deleted_total\{cloud="aws"\} 4$/m);
    assert.equal(
      (await kataConfig()).status?.conditions?.find((x) => x.type === PODVM_DELETION_FAILED),
      undefined,
    );
  });

  test('a VM the cloud refuses to delete is a condition, not a retry loop, until peer-pods-cm changes', async () => {
    await c().patch(
      ConfigMaps,
      PEER_PODS_CM,
      { metadata: { annotations: { [FAIL_PODVM_DELETION_ANNOTATION]: 'UnauthorizedOperation' } } },
      {
        namespace: NS,
      },
    );
    await c().create(Pods, pod('gone-d'));
    const gone = await waitFor(async () => {
      const p = await c().get(Pods, 'gone-d', APP);
      return vms().recorded(p.metadata.uid ?? '') ? p : undefined;
    });
    const [vm = ''] = vmsOf(gone);
    vms().setAdaptorDown(true);
    await c().delete(Pods, 'gone-d', { namespace: APP, gracePeriodSeconds: 0 });
    await waitFor(async () => (await c().find(Pods, 'gone-d', APP)) === undefined);
    vms().setAdaptorDown(false);

    const condition = await waitFor(
      async () => (await kataConfig()).status?.conditions?.find((x) => x.type === PODVM_DELETION_FAILED && x.status === 'True'),
      { timeoutMs: 60_000, message: 'PodVMDeletionFailed' },
    );
    assert.match(condition.message ?? '', new RegExp(`1 leaked pod VM\\(s\\) could not be deleted: ${vm} \\(UnauthorizedOperation: `));
    assert.equal(vms().stats.refusedDeletions, 1);
    assert.ok(vms().vms.has(vm));
    const warnings = await events(LEAKED_VM_DELETION_FAILED_EVENT);
    assert.equal(warnings.length, 1);
    // Several collector passes later (each one lists the cloud), still one refusal: no silent retry loop.
    const lists = vms().stats.lists;
    await waitFor(() => vms().stats.lists >= lists + 3, { message: 'three more passes' });
    assert.equal(vms().stats.refusedDeletions, 1);

    // The cause removed (a change of peer-pods-cm): tried again, deleted, the condition gone.
    await c().patch(ConfigMaps, PEER_PODS_CM, { metadata: { annotations: { [FAIL_PODVM_DELETION_ANNOTATION]: null } } }, { namespace: NS });
    await waitFor(() => !vms().vms.has(vm), { timeoutMs: 60_000, message: 'the VM deleted once the cause is gone' });
    await waitFor(async () => (await kataConfig()).status?.conditions?.find((x) => x.type === PODVM_DELETION_FAILED) === undefined, {
      message: 'the condition removed',
    });
    assert.match(await metrics(), /^osc_peerpods_leaked_vm_delete_failures_total\{cloud="aws"\} 1$/m);
  });

  test('osc_peerpods_adaptor_restarts_total counts the adaptor pods an edit of peer-pods-cm restarts', async () => {
    const restarts = async () => Number(/^osc_peerpods_adaptor_restarts_total (\d+)$/m.exec(await metrics())?.[1]);
    const ds = () => c().get(DaemonSets, CAA_DAEMONSET, NS);
    const scheduled = await waitFor(async () => (await ds()).status?.currentNumberScheduled as number | undefined);
    assert.equal(scheduled, 2);
    const before = await restarts();
    const hash = (await ds()).spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
    await c().patch(ConfigMaps, PEER_PODS_CM, { data: { PROXY_TIMEOUT: '6m' } }, { namespace: NS });
    await waitFor(async () => (await ds()).spec.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] !== hash, {
      message: 'the adaptor pod template changed',
    });
    await waitFor(async () => (await restarts()) === before + 2, { message: 'two adaptor restarts counted' });
  });

  test('osc_setup_info and osc_kata_pods describe the installation, as the original exposes them', async () => {
    await waitFor(async () => /^osc_kata_pods\{runtimeclass="kata-remote"\} 2$/m.test(await metrics()), {
      message: 'osc_kata_pods counts keep-a and keep-b',
    });
    const m = await metrics();
    assert.match(m, /^osc_setup_info\{setup_type="peerpods",cloud_provider="aws"\} 1$/m);
    assert.match(m, /^osc_kata_pods\{runtimeclass="kata"\} 0$/m);
    assert.doesNotMatch(m, /runtimeclass="kata-cc"/, 'no series for a RuntimeClass that does not exist');
  });

  test('chaos: 60 faults (real adaptor kills, force-deletes while it is down, node loss, crashes before record), then 0 leaked VMs', async () => {
    let seed = 21;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const keep = [await c().get(Pods, 'keep-a', APP), await c().get(Pods, 'keep-b', APP)];
    const keptVMs = keep.flatMap(vmsOf);
    const keptNodes = new Set(keep.map((p) => p.spec?.nodeName));
    const before = { ...vms().stats };
    const faults = {
      created: 0,
      crashBeforeRecord: 0,
      forceDeletedWhileDown: 0,
      adaptorKills: 0,
      nodesLost: 0,
      podsLostWithNodes: 0,
      plainDeletes: 0,
      recreatedSameName: 0,
    };
    const live: string[] = [];
    let next = 0;
    const ignoreGone = (e: unknown) => {
      if (!isNotFound(e)) throw e;
    };
    const create = async (name = `chaos-${next++}`) => {
      const crash = rand() < 0.4;
      await c().create(Pods, pod(name, crash ? { [CRASH_BEFORE_RECORD_ANNOTATION]: 'true' } : undefined));
      live.push(name);
      faults.created++;
      if (crash) faults.crashBeforeRecord++;
    };
    const take = () => live.splice(Math.floor(rand() * live.length), 1)[0] as string;
    const nodeOf = async (name: string) => (await c().find(Pods, name, APP))?.spec?.nodeName;
    // Gone from the adaptor's own view too, so that it cannot see the deletion once back.
    const goneEverywhere = (name: string) =>
      waitFor(async () => (await c().find(Pods, name, APP)) === undefined && vms().pods.get(`${APP}/${name}`) === undefined);
    /** Kills a node's adaptor for real: its pod deleted at once (the DaemonSet starts another), until the adaptor is seen down. */
    const killAdaptor = async (node: string) => {
      const adaptors = (await c().list(Pods, { namespace: NS, labelSelector: `app=${CAA_DAEMONSET}` })).items;
      const victim = adaptors.find((a) => a.spec?.nodeName === node && !a.metadata.deletionTimestamp);
      if (!victim) return false;
      await c()
        .delete(Pods, victim.metadata.name ?? '', { namespace: NS, gracePeriodSeconds: 0 })
        .catch(ignoreGone);
      faults.adaptorKills++;
      // Down from when the simulation sees the kill until the DaemonSet's new pod runs: a deletion seen
      // meanwhile leaves its VM behind.
      await waitFor(() => !vms().seesAdaptorPod(victim.metadata.uid ?? ''), { message: 'the kill seen' });
      return true;
    };
    const kataNodes = async () =>
      (await c().list(Nodes)).items
        .filter((n) => n.status?.allocatable?.[PEER_POD_VM_RESOURCE] && !n.metadata.deletionTimestamp)
        .map((n) => n.metadata.name ?? '');
    const faultCount = () => faults.crashBeforeRecord + faults.forceDeletedWhileDown + faults.adaptorKills + faults.nodesLost;
    // A third worker, so that a node can be lost without the kept pods.
    await cluster.dev.addWorker();
    await waitFor(async () => (await kataNodes()).length === 3, { timeoutMs: 120_000, message: 'a third kata node' });
    while (faultCount() < 60) {
      const r = rand();
      if (r < 0.3 || live.length < 2) await create();
      else if (r < 0.6) {
        // Pods force-deleted while their node's adaptor is down: its pod killed first.
        const victims = [take(), ...(rand() < 0.5 && live.length > 1 ? [take()] : [])];
        const nodes = new Set((await Promise.all(victims.map(nodeOf))).filter((n): n is string => !!n));
        for (const n of nodes) await killAdaptor(n);
        for (const v of victims) await c().delete(Pods, v, { namespace: APP, gracePeriodSeconds: 0 }).catch(ignoreGone);
        for (const v of victims) await goneEverywhere(v);
        faults.forceDeletedWhileDown += victims.length;
        // A StatefulSet's pod comes back under its name: the VM its predecessor leaked is the new pod's by
        // name, kept until that pod goes too.
        for (const v of victims) {
          if (rand() >= 0.3) continue;
          await create(v);
          faults.recreatedSameName++;
        }
      } else if (r < 0.8) {
        // An adaptor killed, a pod made meanwhile.
        const nodes = await kataNodes();
        await killAdaptor(nodes[Math.floor(rand() * nodes.length)] ?? '');
        await create();
      } else if (r < 0.88 && faults.nodesLost < 3) {
        // A node lost (not one of the kept pods'): it goes with its adaptor, its pods stay until the pod
        // garbage collector deletes them (nothing deletes their VMs then), and a new machine takes its place,
        // under a name of its own.
        const nodes = (await kataNodes()).filter((n) => !keptNodes.has(n));
        const lost = nodes[Math.floor(rand() * nodes.length)];
        if (!lost) continue;
        const onIt = (await c().list(Pods, { namespace: APP })).items
          .filter((p) => p.spec?.nodeName === lost)
          .map((p) => p.metadata.name ?? '');
        for (const n of onIt) if (live.includes(n)) live.splice(live.indexOf(n), 1);
        await cluster.dev.removeNode(lost);
        await cluster.dev.addWorker();
        faults.nodesLost++;
        faults.podsLostWithNodes += onIt.length;
      } else {
        const v = take();
        await c().delete(Pods, v, { namespace: APP, gracePeriodSeconds: 0 }).catch(ignoreGone);
        await goneEverywhere(v);
        faults.plainDeletes++;
      }
    }
    const t0 = Date.now();
    /** Waits until `left` finds nothing left, and says what was left if it times out. */
    const until = async (what: string, timeoutMs: number, left: () => Promise<Record<string, string[]>>) => {
      let last: Record<string, string[]> = {};
      try {
        await waitFor(
          async () => {
            last = await left();
            return Object.values(last).every((l) => l.length === 0);
          },
          { timeoutMs, message: what },
        );
      } catch (e) {
        throw new Error(`${(e as Error).message}; left: ${JSON.stringify(last)}`);
      }
    };
    const appPods = async () => (await c().list(Pods, { namespace: APP })).items;
    // Kubernetes' part: the pods of the lost nodes stay, and keep their VMs, until the pod garbage collector
    // deletes them, 40 to 60 s after their node went (it waits that long for the node to come back).
    await until("the pod garbage collector to delete the lost nodes' pods", 180_000, async () => ({
      pods: (await appPods())
        .filter((p) => !live.includes(p.metadata.name ?? '') && !['keep-a', 'keep-b'].includes(p.metadata.name ?? ''))
        .map((p) => `${p.metadata.name} on ${p.spec?.nodeName}`),
    }));
    const podsGoneMs = Date.now() - t0;
    // osc's part: every live pod's VM exists and every VM no pod owns is gone. A VM is owned as osc owns it: by
    // the pod it was made for, or by a pod of the name its name holds (a re-created pod's predecessor's VM).
    const t1 = Date.now();
    await until('only VMs of live pods left', 300_000, async () => {
      const pods = await appPods();
      const uids = new Set(pods.map((p) => p.metadata.uid));
      const names = new Set(pods.map((p) => podVMNamePart(p.metadata.name ?? '')));
      return {
        podsWithoutVM: pods.filter((p) => !vms().vms.has(vms().recorded(p.metadata.uid ?? '') ?? '')).map((p) => p.metadata.name ?? ''),
        leakedVMs: [...vms().vms.values()]
          .filter((vm) => !uids.has(vms().podOf(vm.id)) && !names.has(podPartOfVMName(vm.name) ?? ''))
          .map((vm) => vm.name),
      };
    });
    const convergedMs = Date.now() - t1;
    for (const name of live) await c().delete(Pods, name, { namespace: APP, gracePeriodSeconds: 0 }).catch(ignoreGone);
    await waitFor(() => vms().vms.size === keptVMs.length, { timeoutMs: 120_000, message: 'every chaos VM gone' });
    assert.deepEqual([...vms().vms.keys()].sort(), [...keptVMs].sort(), 'the VMs of live pods were never touched');
    const made = vms().stats.created - before.created;
    const byOsc = vms().stats.deletedByOsc - before.deletedByOsc;
    const byAdaptor = vms().stats.deletedByAdaptor - before.deletedByAdaptor;
    assert.equal(byOsc + byAdaptor, made, 'every VM made was deleted by the adaptor or by osc');
    assert.equal(vms().stats.liveVMsDeletedByOsc, 0, 'osc never deleted a VM the adaptor held for a live pod');
    assert.ok(faults.nodesLost > 0 && faults.adaptorKills > 0 && faults.recreatedSameName > 0, JSON.stringify(faults));
    assert.ok(byOsc > 0, 'the faults leaked VMs that osc found');
    console.log(
      `# chaos: ${faultCount()} faults (${JSON.stringify(faults)}); VMs made ${made}, leaked and deleted by osc ${byOsc}, ` +
        `by the adaptor ${byAdaptor}; the lost nodes' pods deleted ${podsGoneMs} ms after the last fault, osc converged ${convergedMs} ms ` +
        `after that; leaked VMs left: ${vms().vms.size - keptVMs.length}`,
    );
  });

  test("a machine that comes back under a lost node's name takes over its pods: new VMs there, the old ones collected once the pods go", async () => {
    const keptNodes = new Set([await c().get(Pods, 'keep-a', APP), await c().get(Pods, 'keep-b', APP)].map((p) => p.spec?.nodeName));
    // A kata worker without the kept pods (the chaos added some; alone, this test adds one), done with its
    // configuration: a pod still Pending when the machine config daemon drains it is evicted whatever its budget.
    const free = async () => {
      const installed = new Set((await kataConfig()).status?.kataNodes?.installed ?? []);
      return (await c().list(Nodes)).items
        .filter((n) => n.status?.allocatable?.[PEER_POD_VM_RESOURCE] && !n.metadata.deletionTimestamp && !n.spec?.unschedulable)
        .map((n) => n.metadata.name ?? '')
        .find((n) => !keptNodes.has(n) && installed.has(n));
    };
    if (!(await free())) await cluster.dev.addWorker();
    const node = await waitFor(free, { timeoutMs: 120_000, message: 'a kata worker without the kept pods' });
    // A disruption budget keeps the pod where it is while the new machine is drained for its configuration.
    await c().create(PodDisruptionBudgets, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'held', namespace: APP },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'held' } } },
    } as KubeObject);
    const held0 = pod('held');
    held0.metadata.labels = { app: 'held' };
    if (held0.spec) held0.spec.nodeSelector = { 'kubernetes.io/hostname': node };
    await c().create(Pods, held0);
    const held = await waitFor(async () => {
      const p = await c().get(Pods, 'held', APP);
      return vms().recorded(p.metadata.uid ?? '') ? p : undefined;
    });
    const uid = held.metadata.uid ?? '';
    const first = vms().recorded(uid) ?? '';
    await waitFor(
      async () =>
        ((await c().get(PodDisruptionBudgets, 'held', APP)) as { status?: { disruptionsAllowed?: number } }).status?.disruptionsAllowed ===
        0,
      {
        message: 'the budget allows no disruption',
      },
    );

    // The node is lost with the adaptor's records on its disk; a machine of the same name registers at once,
    // before the pod garbage collector would delete the pod. It comes from a MachineSet that labels its nodes
    // for kata: a machine drained for its configuration would have the pod evicted before taking it over.
    await cluster.dev.removeNode(node);
    await cluster.dev.addWorker(node, { pool: 'kata-oc' });
    const second = await waitFor(
      () => {
        const vm = vms().recorded(uid);
        return vm && vm !== first ? vm : undefined;
      },
      { timeoutMs: 120_000, message: "the new machine's adaptor made the pod a VM of its own" },
    );
    assert.equal((await c().get(Pods, 'held', APP)).metadata.uid, uid, 'the same pod, taken over');
    // The old VM is named for the pod, which lives: osc keeps it, pass after pass.
    const lists = vms().stats.lists;
    await waitFor(() => vms().stats.lists >= lists + 3, { message: 'three more passes' });
    assert.ok(vms().vms.has(first), 'the VM left behind is kept while a pod of its name lives');
    assert.ok(vms().vms.has(second), "the pod's VM is kept");

    // The pod goes: osc collects the VM left behind (the adaptor, or osc if the adaptor is not up at that
    // moment, the other one).
    await c().delete(PodDisruptionBudgets, 'held', { namespace: APP });
    await c()
      .delete(Pods, 'held', { namespace: APP, gracePeriodSeconds: 0 })
      .catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    await waitFor(() => !vms().vms.has(first) && !vms().vms.has(second), { timeoutMs: 60_000, message: 'both VMs gone' });
    await waitFor(async () => (await events(LEAKED_VM_DELETED_EVENT)).some((e) => (e.note ?? '').includes(first)), {
      message: 'an event names the VM left behind, deleted by osc',
    });
    assert.equal(vms().stats.liveVMsDeletedByOsc, 0);
  });
});
