/**
 * The operator upgrade, N -> N+1, as an administrator does it: `osc install` of version N, a KataConfig
 * installed on every worker, then `osc install` of version N+1 (the same sources as another version, so its
 * operator image has another tag). The operator's pods are played by processes of the version their image
 * names (test/support/operator-kubelet.ts), so the Deployment's rolling update really replaces N's
 * processes by N+1's and leader election hands over between them. Measured across the upgrade: every change
 * to the objects an upgrade must leave alone, the nodes' cordons and reboots, the MCO's records, the
 * operands' pods, and how long the webhooks went unanswered.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { pino } from 'pino';
import { CCO_NAMESPACE, CredentialsRequests } from '../../src/api/cloudcredential.ts';
import { PEER_PODS_CCO_SECRET } from '../../src/api/credentials-text.ts';
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { KataNodes } from '../../src/api/katanode.ts';
import { KATA_REMOTE_RUNTIME_CLASS, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import { MachineConfigs } from '../../src/api/openshift.ts';
import type { DevCluster, DevClusterOptions } from '../../src/devcluster/devcluster.ts';
import { INSTALLED_BY, INSTALLED_BY_LABEL } from '../../src/install/apply.ts';
import { NAMES } from '../../src/install/manifests.ts';
import { ConfigMaps, DaemonSets, Deployments, Pods, Roles, RuntimeClasses, Secrets } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { OscProcess, runOsc } from './cli.ts';
import { alive, OPERATOR_PODS, OPERATOR_PODS_QUERY, OperatorKubelet, type Replica } from './operator-kubelet.ts';
import { ServiceProxy } from './serviceproxy.ts';
import { type Change, ChangeWatch, NodeWatch, replicaMetrics, scraperToken, sumOf, writesOf } from './upgrade.ts';
import { nextVersion, thisVersion, VersionTree } from './versions.ts';
import { waitFor } from './wait.ts';
import { longestGapMs, probeWebhooks } from './webhook-probe.ts';

const NS = OPERATOR_NAMESPACE;
/** A Role "an earlier version shipped": the install of N+1 must remove it. */
export const RETIRED_ROLE = 'osc-retired-role';

/** The MCO simulator's records of node updates: its log lines, kept in memory. */
export class MCORecords {
  readonly lines: string[] = [];
  readonly logger = pino({ level: 'info' }, { write: (line: string) => void this.lines.push(line) });
  count(msg: string, since = 0): number {
    return this.lines.slice(since).filter((l) => l.includes(`"msg":"${msg}"`)).length;
  }
}

export function upgradeClusterOptions(distribution: 'openshift' | 'kubernetes', mco: MCORecords): DevClusterOptions {
  return {
    distribution,
    workers: 3,
    rebootMs: 500,
    callerPlayedPods: OPERATOR_PODS_QUERY,
    log: mco.logger,
    // On AWS peer pods take the keys the Cloud Credential Operator mints for osc's request.
    ...(distribution === 'openshift' ? { platform: 'AWS' as const } : { kataDeployIdentity: false }),
  };
}

/** The adaptor image an N+1 that moves the cloud-api-adaptor ships. */
export const NEXT_CAA_IMAGE = 'registry.redhat.io/openshift-sandboxed-containers/osc-cloud-api-adaptor-rhel9:1.12.1';

const PEER_PODS_DATA: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
  PODVM_AMI_ID: '',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
};

export interface UpgradeFigures {
  cordons: number;
  reboots: number;
  mcoUpdates: number;
  mcoRecords: { updating: number; evicted: number; rebooting: number };
  rewrites: Change[];
  statusChanges: Change[];
  restartedPods: string[];
  webhookGapMs: number;
  /** The unanswered probes: when (ms after the install of N+1 began), which webhook, what the API server said. */
  unanswered: string[];
  rolloutMs: number;
  probes: number;
  newLeaderWrites: string[];
  installReport: string;
  /** What `osc install --dry-run=server` of N+1 said first. */
  dryRunReport: string;
  /** Whether the object N+1 no longer ships is gone after its install. */
  retiredRemoved: boolean;
  /** What was watched, e.g. `2 MachineConfig, 3 KataNode, ...`. */
  watched: string;
  /** Interrupted: the versions that led, in turn, while the rollout stood halfway. */
  leaders: string[];
  /** OpenShift: the key the CCO minted for peer pods, before and after the upgrade. */
  mintedKey: { before: string; after: string };
  /** The operand pods before the upgrade, by name. */
  podsBefore: string[];
}

type DS = KubeObject & { status?: { desiredNumberScheduled?: number; numberReady?: number; updatedNumberScheduled?: number } };

const dsReady = (d: DS) => (d.status?.desiredNumberScheduled ?? 0) > 0 && d.status?.numberReady === d.status?.desiredNumberScheduled;
const dsRolledOut = (d: DS) =>
  dsReady(d) &&
  d.status?.updatedNumberScheduled === d.status?.desiredNumberScheduled &&
  (d.status as { observedGeneration?: number } | undefined)?.observedGeneration === d.metadata.generation;

/** The access key id in the Secret the CCO minted for osc's request. */
async function mintedKey(client: DevCluster['client']): Promise<string> {
  const s = await client.find(Secrets, PEER_PODS_CCO_SECRET, NS);
  return Buffer.from(s?.data?.aws_access_key_id ?? '', 'base64').toString('utf8');
}

/** Runs the whole upgrade; answers the figures (the caller asserts them). */
export async function runUpgrade(
  dev: DevCluster,
  mco: MCORecords,
  distribution: 'openshift' | 'kubernetes',
  opts: { interrupt?: boolean; caaImage?: string } = {},
): Promise<UpgradeFigures> {
  const client = dev.client;
  const admin = dev.kubeconfigPath;
  const vN = thisVersion();
  const next = VersionTree.build(nextVersion(vN), opts.caaImage ? { caaImage: opts.caaImage } : {});
  const imageN = `quay.io/osc/osc-operator:v${vN}`;
  const service = await ServiceProxy.start();
  // Each pod runs the sources its image names: N's image this checkout, N+1's the copy.
  const kubelet = new OperatorKubelet(dev, service, (pod, args) => {
    const image = (pod.spec?.containers as { image?: string }[] | undefined)?.[0]?.image;
    return image === next.image ? new OscProcess(args, {}, next.root) : new OscProcess(args);
  });
  const distributionFlag = ['--distribution', distribution];
  let watch: ChangeWatch | undefined;
  let nodes: NodeWatch | undefined;
  let probes: ReturnType<typeof probeWebhooks> | undefined;
  try {
    // Version N.
    // The probe's kata-remote pod must get past RuntimeClass admission to the webhook, on either platform.
    await client.create(RuntimeClasses, { metadata: { name: KATA_REMOTE_RUNTIME_CLASS }, handler: 'kata-remote' } as KubeObject);
    const installedN = await runOsc(['install', '--kubeconfig', admin, ...distributionFlag]);
    assert.equal(installedN.code, 0, installedN.stderr);
    const depN = await client.get(Deployments, NAMES.deployment, NS);
    assert.equal((depN.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]?.image, imageN);
    kubelet.start();
    await waitFor(() => kubelet.leader() && service.ready.length === 2, {
      timeoutMs: 180_000,
      message: 'version N: 2 replicas ready, one leading',
    });
    const token = await scraperToken(dev);

    // No peer-pods-secret: osc asks the Cloud Credential Operator, which mints the keys (cco-secret).
    if (distribution === 'openshift')
      await client.create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data: PEER_PODS_DATA });
    await client.create(KataConfigs, {
      metadata: { name: 'cluster-kataconfig' },
      spec: { checkNodeEligibility: false, logLevel: 'info', ...(distribution === 'openshift' ? { enablePeerPods: true } : {}) },
    } as KataConfig);
    await waitFor(
      async () => {
        const kc = await client.find(KataConfigs, 'cluster-kataconfig');
        const done = kc?.status?.conditions?.find((c) => c.type === 'InProgress')?.status === 'False';
        if (!done || kc?.status?.kataNodes?.installed?.length !== 3) return false;
        const ds = (await client.list(DaemonSets, { namespace: NS })).items as DS[];
        if (distribution === 'openshift') {
          const ami = (await client.get(ConfigMaps, PEER_PODS_CM, NS)).data?.PODVM_AMI_ID ?? '';
          return ami.startsWith('ami-') && ds.length > 0 && ds.every(dsReady);
        }
        return true;
      },
      { timeoutMs: 400_000, message: 'version N: kata installed on 3 workers (and peer pods ready)' },
    );
    await settled(kubelet, token, 'version N');

    // What the upgrade must leave alone, watched from here on.
    watch = new ChangeWatch(client);
    // Every pod in the namespace but the operator's own (which the upgrade replaces).
    const operand = (o: KubeObject) =>
      !OPERATOR_PODS.split(',').every((kv) => {
        const [k = '', v] = kv.split('=');
        return o.metadata.labels?.[k] === v;
      });
    await watch.watch(KataConfigs);
    await watch.watch(KataNodes);
    await watch.watch(DaemonSets, { namespace: NS });
    await watch.watch(RuntimeClasses);
    await watch.watch(ConfigMaps, { namespace: NS, filter: (o) => o.metadata.name !== 'kube-root-ca.crt' });
    await watch.watch(Secrets, { namespace: NS });
    await watch.watch(Pods, { namespace: NS, filter: operand });
    if (distribution === 'openshift') {
      await watch.watch(MachineConfigs);
      await watch.watch(CredentialsRequests, { namespace: CCO_NAMESPACE });
    }
    const mintedBefore = distribution === 'openshift' ? await mintedKey(client) : '';
    nodes = new NodeWatch();
    await nodes.start(client);
    const podsBefore = new Map(
      (await client.list(Pods, { namespace: NS })).items.filter(operand).map((p) => [p.metadata.name ?? '', p.metadata.uid ?? '']),
    );
    const mcoMark = mco.lines.length;
    probes = probeWebhooks(client);

    // An object an earlier version shipped and N+1 does not: marked as osc install marks its own.
    await client.create(Roles, {
      metadata: { name: RETIRED_ROLE, namespace: NS, labels: { [INSTALLED_BY_LABEL]: INSTALLED_BY } },
      rules: [],
    } as KubeObject);
    // What N+1 would change, asked first; it writes nothing (the watches would see it).
    // Its generation: a spec change moves it (the status, which the controller-manager keeps writing, does not).
    const generation = (await client.get(Deployments, NAMES.deployment, NS)).metadata.generation;
    const dryRun = await next.run(['install', '--dry-run=server', '--kubeconfig', admin, ...distributionFlag]);
    assert.equal(dryRun.code, 0, `${dryRun.stdout}${dryRun.stderr}`);
    assert.equal(
      (await client.get(Deployments, NAMES.deployment, NS)).metadata.generation,
      generation,
      'the dry run changed the Deployment',
    );
    assert.ok(await client.find(Roles, RETIRED_ROLE, NS), 'the dry run removed an object');

    // Version N+1, through `osc install`. Interrupted: its first pod is held unready, so the rollout stops
    // halfway with both versions running and leader election deciding between them.
    if (opts.interrupt) kubelet.holdReady = (r) => r.image === next.image;
    const started = Date.now();
    const installed = await next.run(['install', '--kubeconfig', admin, ...distributionFlag]);
    assert.equal(installed.code, 0, `${installed.stdout}${installed.stderr}`);
    const leaders = opts.interrupt ? await interruptHalfway(kubelet, next.image, client) : [];
    kubelet.holdReady = () => false;
    let state = '';
    let saidAt = Date.now();
    const rolledOut = await waitFor(
      async () => {
        const dep = (await client.get(Deployments, NAMES.deployment, NS)) as KubeObject & {
          status?: { updatedReplicas?: number; replicas?: number; readyReplicas?: number };
        };
        const running = kubelet.running();
        const old = [...kubelet.replicas.values()].filter((r) => r.image !== next.image && alive(r));
        const ok =
          dep.status?.updatedReplicas === 2 &&
          dep.status.replicas === 2 &&
          dep.status.readyReplicas === 2 &&
          running.length === 2 &&
          running.every((r) => r.image === next.image && r.ready) &&
          old.length === 0 &&
          kubelet.leader()?.image === next.image;
        // Where the rollout stands, said when it stays there a while (and so in the log of a timeout).
        const now = `Deployment ${JSON.stringify(dep.status ?? {})}; replicas ${[...kubelet.replicas.values()]
          .map(
            (r) =>
              `${r.pod} ${r.image.replace(/^.*:/, '')}${r.ready ? ' ready' : ''}${r.terminating ? ' terminating' : ''}${alive(r) ? '' : ` exited ${r.proc.child.exitCode ?? r.proc.child.signalCode}`}`,
          )
          .join(', ')}; leader ${kubelet.leader()?.pod ?? 'none'}`;
        if (now !== state) saidAt = Date.now();
        else if (Date.now() - saidAt > 30_000) {
          console.log(`# rollout: ${now}`);
          saidAt = Date.now();
        }
        state = now;
        return ok ? Date.now() : undefined;
      },
      { timeoutMs: 300_000, message: 'version N+1 rolled out: 2 replicas of N+1 ready, one leading, N gone' },
    );
    await settled(kubelet, token, 'version N+1');
    // The operands N+1 rolls (an adaptor image it moves) have rolled before anything is counted.
    // Throws naming what has not rolled (a thrown error is "not yet", and the last one is in a timeout).
    await waitFor(
      async () => {
        const pending = ((await client.list(DaemonSets, { namespace: NS })).items as DS[]).filter((d) => !dsRolledOut(d));
        if (pending.length === 0) return true;
        const pods = (await client.list(Pods, { namespace: NS })).items.filter(operand);
        throw new Error(
          `${pending.map((d) => `${d.metadata.name} generation ${d.metadata.generation} status ${JSON.stringify(d.status)}`).join('; ')}; pods ${pods
            .map((p) => `${p.metadata.name} ${p.status?.phase}${p.metadata.deletionTimestamp ? ' deleting' : ''}`)
            .join(', ')}`,
        );
      },
      { timeoutMs: 300_000, message: "version N+1: every operand DaemonSet's pods updated and ready" },
    ).catch(async (e) => {
      // The DaemonSet controller's side of a rollout that stalled (its errors, at the default verbosity).
      const log = await readFile(dev.controlPlane.logFile('kube-controller-manager'), 'utf8').catch(() => '');
      console.log(
        `# kube-controller-manager on daemon sets:\n${log
          .split('\n')
          .filter((l) => l.includes('daemon'))
          .slice(-20)
          .join('\n')}`,
      );
      throw e;
    });
    const leader = kubelet.leader();
    assert.ok(leader);
    const newLeaderWrites = writesOf(await replicaMetrics(leader, token));
    const results = await probes.stop();
    const changes = await watch.stop();
    const nodeTotals = await nodes.stop();
    const podsAfter = new Map(
      (await client.list(Pods, { namespace: NS })).items.filter(operand).map((p) => [p.metadata.name ?? '', p.metadata.uid ?? '']),
    );
    const restartedPods = [...podsBefore].filter(([name, uid]) => podsAfter.get(name) !== uid).map(([name]) => name);
    const status = (c: Change) => c.kind === 'KataConfig' || c.kind === 'KataNode';
    return {
      cordons: nodeTotals.cordons,
      reboots: nodeTotals.reboots,
      mcoUpdates: nodeTotals.mcoUpdates,
      mcoRecords: {
        updating: mco.count('node updating: Working, cordoned, draining', mcoMark),
        evicted: mco.count('pod evicted', mcoMark),
        rebooting: mco.count('node drained; rebooting', mcoMark),
      },
      // A DaemonSet's or Job's status is its controller's to write (pods becoming ready late, say), never
      // osc's: a change of nothing else is no rewrite. A pod replaced shows in restartedPods.
      rewrites: changes.filter((c) => !status(c) && !(c.fields.length > 0 && c.fields.every((f) => f === 'status'))),
      statusChanges: changes.filter(status),
      restartedPods,
      webhookGapMs: longestGapMs(results),
      unanswered: results.filter((p) => !p.answered).map((p) => `+${p.at - started} ms ${p.what}: ${p.message}`),
      rolloutMs: rolledOut - started,
      probes: results.length,
      newLeaderWrites,
      installReport: installed.stdout,
      dryRunReport: dryRun.stdout,
      retiredRemoved: !(await client.find(Roles, RETIRED_ROLE, NS)),
      watched: watch.watched(),
      leaders,
      mintedKey: { before: mintedBefore, after: distribution === 'openshift' ? await mintedKey(client) : '' },
      podsBefore: [...podsBefore.keys()],
    };
  } finally {
    await Promise.allSettled([watch?.stop(), nodes?.stop(), probes?.stop()]);
    await kubelet.stop();
    await service.close();
    next.remove();
  }
}

/**
 * The rollout held halfway: N's two replicas and N+1's first run side by side. Crashes the replicas of the
 * leading version (their processes are started again, as a kubelet restarts crashed containers) until
 * leadership has gone from N to N+1 and back to N, so both versions have led the same cluster in turn.
 * Answers the versions that led, in order.
 */
async function interruptHalfway(kubelet: OperatorKubelet, newImage: string, client: DevCluster['client']): Promise<string[]> {
  const version = (r: Replica) => (r.image === newImage ? 'N+1' : 'N');
  await waitFor(
    async () => {
      const dep = (await client.get(Deployments, NAMES.deployment, NS)) as KubeObject & { status?: { updatedReplicas?: number } };
      const fresh = kubelet.running().filter((r) => r.image === newImage && r.proc.stdout.includes('"caches synced"'));
      return dep.status?.updatedReplicas === 1 && fresh.length === 1 && kubelet.running().length === 3;
    },
    { timeoutMs: 180_000, message: "the rollout halfway: N's two replicas and N+1's first, running" },
  );
  const leaders: string[] = [];
  for (let round = 0; round < 6; round++) {
    const leader = await waitFor(() => kubelet.leader(), { timeoutMs: 120_000, message: 'a leader' });
    if (leaders.at(-1) !== version(leader)) leaders.push(version(leader));
    if (leaders.join(' ').includes('N+1 N')) break;
    // Every replica of the leading version crashes at once: the other version's running replica takes the
    // lease once it expires, before the crashed ones are back.
    const crashed = kubelet.running().filter((r) => version(r) === version(leader));
    for (const r of crashed) r.proc.kill('SIGKILL');
    const before = new Set(crashed.map((r) => r.proc));
    await waitFor(
      () => {
        const l = kubelet.leader();
        return l && !before.has(l.proc);
      },
      { timeoutMs: 120_000, message: `a new leader after ${version(leader)}'s replicas crashed` },
    );
  }
  return leaders;
}

/**
 * The leading replica has reconciled with every controller at least once since it began to lead, and its
 * work queues are empty: whatever it was going to change, it has changed.
 */
async function settled(kubelet: OperatorKubelet, token: string, what: string): Promise<Replica> {
  return waitFor(
    async () => {
      const leader = kubelet.leader();
      if (!leader) return undefined;
      const controllers = JSON.parse(/"controllers":(\[[^\]]*\])/.exec(leader.proc.stdout)?.[1] ?? '[]') as string[];
      const m = await replicaMetrics(leader, token).catch(() => undefined);
      if (!m || !controllers.length) return undefined;
      // Every controller that was given work has done it; one given none (a queue of writes beside a pass,
      // with nothing to write) has nothing to settle. The KataConfig, peer pods and monitor controllers always
      // get their start-up keys.
      const reconciled = controllers.every(
        (c) =>
          sumOf(m, 'workqueue_adds_total', `name="${c}"`) === 0 || sumOf(m, 'controller_runtime_reconcile_total', `controller="${c}"`) > 0,
      );
      const idle = sumOf(m, 'workqueue_depth') === 0;
      return reconciled && idle ? leader : undefined;
    },
    { timeoutMs: 180_000, message: `${what}: the leader has reconciled with every controller and its queues are empty` },
  );
}

/** The figures, one line each, as the test prints them. */
export function describeFigures(f: UpgradeFigures): string {
  const list = (cs: Change[]) => (cs.length ? cs.map((c) => `${c.type} ${c.kind} ${c.name} [${c.fields.join(', ')}]`).join('; ') : 'none');
  return [
    `watched: ${f.watched}`,
    `cordons ${f.cordons}, reboots ${f.reboots}, MCO node annotation changes ${f.mcoUpdates}`,
    `MCO records: ${f.mcoRecords.updating} updates (cordon+drain), ${f.mcoRecords.evicted} evictions, ${f.mcoRecords.rebooting} reboots`,
    `rewrites (MachineConfigs, DaemonSets, ConfigMaps, Secrets, RuntimeClasses, operand pods): ${f.rewrites.length}: ${list(f.rewrites)}`,
    `KataConfig/KataNode changes: ${f.statusChanges.length}: ${list(f.statusChanges)}`,
    `operand pods restarted: ${f.restartedPods.length ? f.restartedPods.join(', ') : 'none'} (of ${f.podsBefore.length})`,
    ...(f.mintedKey.before ? [`the CCO-minted key: ${f.mintedKey.before === f.mintedKey.after ? 'unchanged' : 'changed'}`] : []),
    `webhooks: longest unanswered ${f.webhookGapMs} ms over ${f.probes} probes; operator Deployment rollout ${f.rolloutMs} ms`,
    ...f.unanswered.map((u) => `unanswered: ${u}`),
    `the new leader's writes (not its lease): ${f.newLeaderWrites.length ? f.newLeaderWrites.join('; ') : 'none'}`,
  ]
    .map((l) => `# ${l}`)
    .join('\n');
}

/** The report's object lines (`kind/name verb...`), the dry run's marker and the certificate's line left out. */
export function reportLines(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => /^[a-z0-9.]+\/\S+ /.test(l) && !l.startsWith('secret/osc-webhook-server-cert '))
    .map((l) => l.replace(/ \(dry run\)$/, ''));
}

/**
 * Checks the install report of N+1: the Deployment configured with its image (and nothing else of it),
 * the retired object removed, every other object unchanged, and the dry run said the same before.
 * `operatorManaged` are the objects the operator itself rewrites after an install (the webhook
 * configurations, where the replicas run outside the cluster and register by URL).
 */
export function checkReport(f: UpgradeFigures, operatorManaged: RegExp): void {
  const lines = reportLines(f.installReport);
  assert.deepEqual(reportLines(f.dryRunReport), lines, 'the dry run reports what the install then does');
  assert.ok(
    lines.includes('deployment.apps/osc-controller-manager configured (spec.template.spec.containers[manager].image)'),
    lines.join('\n'),
  );
  assert.ok(lines.includes(`role.rbac.authorization.k8s.io/${RETIRED_ROLE} removed: no longer shipped`), lines.join('\n'));
  assert.ok(f.retiredRemoved, 'the retired Role is gone');
  const others = lines.filter((l) => !l.startsWith('deployment.apps/') && !l.includes(RETIRED_ROLE) && !operatorManaged.test(l));
  assert.ok(others.length > 10, others.join('\n'));
  assert.deepEqual(
    others.filter((l) => !/ unchanged$/.test(l)),
    [],
    'objects N+1 ships as N did are unchanged',
  );
}
