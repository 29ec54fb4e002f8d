/**
 * must-gather (docs/troubleshooting.md): everything the operator owns or reads, in one archive an administrator can attach
 * to a support case. Secret values never leave the cluster: every Secret's keys are kept and its values
 * replaced with REDACTED.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { create as createTar } from 'tar';
import { stringify } from 'yaml';
import { type KataConfig, KataConfigs } from '../api/kataconfig.ts';
import { KataNodes } from '../api/katanode.ts';
import { objectName } from '../api/meta.ts';
import {
  EXTENSION_MACHINE_CONFIG,
  KATA_POOL,
  KATA_REMOTE_RUNTIME_CLASS,
  KATA_RUNTIME_CLASS,
  KATACONFIG_GROUP,
  OPERATOR_NAMESPACE,
} from '../api/names.ts';
import { ContainerRuntimeConfigs, Infrastructures, type MachineConfigPool, MachineConfigPools, MachineConfigs } from '../api/openshift.ts';
import { PeerPodConfigs } from '../api/peerpodconfig.ts';
import { defaultImage } from '../api/release.ts';
import { renderStatus, summarize } from '../api/summary.ts';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import { ApiError, errorMessage } from '../kube/errors.ts';
import {
  ConfigMaps,
  CustomResourceDefinitions,
  DaemonSets,
  Deployments,
  Events,
  Jobs,
  Leases,
  MutatingWebhookConfigurations,
  type Node,
  Nodes,
  type Pod,
  Pods,
  RuntimeClasses,
  type Secret,
  Secrets,
  ServiceAccounts,
  Services,
  ValidatingWebhookConfigurations,
} from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import { MUTATING_WEBHOOK_CONFIGURATION, VALIDATING_WEBHOOK_CONFIGURATION } from '../webhooks/setup.ts';
import { isSimulatedNode, kubeletErrorReason, OPERATOR_LOG_BYTES, operatorOutsideNote, readTail, simulatedNodeReason } from './logs.ts';
import { collectNodeLogs } from './nodelogs.ts';
import { scrubLog } from './scrub.ts';

export const REDACTED = 'REDACTED';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A copy of a Secret with its keys and every value replaced (a last-applied annotation would repeat them). */
export function redactSecret(s: Secret): Secret {
  const redact = (m: Record<string, string> | undefined) => (m ? Object.fromEntries(Object.keys(m).map((k) => [k, REDACTED])) : undefined);
  const annotations = { ...s.metadata.annotations };
  delete annotations[LAST_APPLIED];
  const out: Secret = {
    ...s,
    metadata: { ...s.metadata, ...(Object.keys(annotations).length ? { annotations } : { annotations: undefined }) },
  };
  if (s.data) out.data = redact(s.data);
  if (s.stringData) out.stringData = redact(s.stringData);
  return out;
}

/**
 * managedFields say who wrote what, which nobody reads in a support case, and they double the size.
 * apiVersion and kind go first, as kubectl prints them.
 */
function tidy<T extends KubeObject>(o: T): T {
  const { apiVersion, kind, metadata, ...rest } = o;
  const { managedFields: _, ...meta } = metadata ?? {};
  return { apiVersion, kind, metadata: meta, ...rest } as T;
}

/** What matters of a node: kata labels, the Machine Config Operator's annotations, conditions, capacity. */
export function nodeView(n: Node): KubeObject & Record<string, unknown> {
  const annotations = Object.fromEntries(
    Object.entries(n.metadata.annotations ?? {}).filter(
      ([k]) => k.startsWith('machineconfiguration.openshift.io/') || k.startsWith('osc.dev/') || k.includes('kata'),
    ),
  );
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.metadata.name,
      labels: n.metadata.labels,
      annotations,
      creationTimestamp: n.metadata.creationTimestamp,
      ...(n.metadata.deletionTimestamp ? { deletionTimestamp: n.metadata.deletionTimestamp } : {}),
    },
    spec: { unschedulable: n.spec?.unschedulable ?? false, taints: n.spec?.taints ?? [] },
    status: {
      conditions: n.status?.conditions,
      capacity: n.status?.capacity,
      allocatable: n.status?.allocatable,
      nodeInfo: n.status?.nodeInfo,
    },
  };
}

const asList = (items: KubeObject[]) => stringify({ apiVersion: 'v1', kind: 'List', items }, { lineWidth: 0 });

export interface MustGatherOptions {
  /** Where the archive goes; default the current directory. */
  destDir?: string;
  /** The log file of an operator that runs outside the cluster (osc start's <home>/osc.log): collected, scrubbed. */
  operatorLog?: string;
  /** Read the selected nodes' journals with a privileged pod each (default true). */
  nodeLogs?: boolean;
  /** The node-log pods' image (needs only chroot and sh); default the operator pod's, else osc's release image. */
  nodeLogImage?: string;
  /** How long the node-log pods have, together; default 120s. */
  nodeLogTimeoutMs?: number;
  namespace?: string;
  now?: Date;
}

export interface MustGatherResult {
  archive: string;
  /** Paths inside the archive. */
  files: string[];
  /** What could not be collected, and why. */
  problems: string[];
}

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-');

/** Collects, writes the archive `must-gather-<time>.tar.gz` into destDir, and says what is in it. */
export async function mustGather(client: KubeClient, opts: MustGatherOptions = {}): Promise<MustGatherResult> {
  const ns = opts.namespace ?? OPERATOR_NAMESPACE;
  const now = opts.now ?? new Date();
  const root = `must-gather-${stamp(now)}`;
  const staging = await mkdtemp(join(tmpdir(), 'osc-must-gather-'));
  const files: string[] = [];
  const problems: string[] = [];

  const put = async (path: string, text: string) => {
    const abs = join(staging, root, path);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, text);
    files.push(`${root}/${path}`);
  };
  /** Runs one collection; a missing API (404) or a refusal (403) is noted, not fatal. */
  const attempt = async <T>(what: string, fn: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await fn();
    } catch (e) {
      const why = e instanceof ApiError && e.status === 404 ? 'not found (API not served in this cluster)' : errorMessage(e);
      problems.push(`${what}: ${why}`);
      return undefined;
    }
  };
  const list = async <T extends KubeObject>(
    rt: ResourceType<T>,
    path: string,
    o: { namespace?: string; filter?: (x: T) => boolean } = {},
  ) => {
    const got = await attempt(`${rt.plural}${o.namespace ? ` in ${o.namespace}` : ''}`, () => client.list(rt, { namespace: o.namespace }));
    if (!got) return [] as T[];
    const items = got.items.filter(o.filter ?? (() => true)).map(tidy);
    await put(path, asList(items));
    return items;
  };

  try {
    // The KataConfig and its CRD.
    const kataConfigs = await list(KataConfigs, 'cluster-scoped/kataconfigs.yaml');
    // Each node's kata configuration: assigned, active, last known good, and the error.
    const kataNodes = await list(KataNodes, 'cluster-scoped/katanodes.yaml');
    const crds: KubeObject[] = [];
    for (const name of [
      `kataconfigs.${KATACONFIG_GROUP}`,
      `${KataNodes.plural}.${KataNodes.group}`,
      `${PeerPodConfigs.plural}.${PeerPodConfigs.group}`,
    ]) {
      const crd = await attempt(`customresourcedefinition ${name}`, () => client.find(CustomResourceDefinitions, name));
      if (crd) crds.push(tidy(crd));
    }
    await put('cluster-scoped/customresourcedefinitions.yaml', asList(crds));

    // The Machine Config Operator's view: pools, our MachineConfigs and the rendered ones the pools use.
    // Plain Kubernetes has none (kata-deploy's DaemonSet and its pods are in the operator namespace below).
    const groups = await attempt('API groups', () => client.request<{ groups?: { name: string }[] }>('GET', '/apis'));
    const openshift = !groups || (groups.groups ?? []).some((g) => g.name === MachineConfigPools.group);
    const collectMachineConfigs = async () => {
      const pools = await list(MachineConfigPools, 'cluster-scoped/machineconfigpools.yaml');
      const rendered = new Set(
        (pools as MachineConfigPool[]).flatMap((p) => [p.spec.configuration?.name, p.status?.configuration?.name]).filter((x) => !!x),
      );
      await list(MachineConfigs, 'cluster-scoped/machineconfigs.yaml', {
        filter: (mc) => {
          const name = objectName(mc);
          return name === EXTENSION_MACHINE_CONFIG || name.startsWith(`rendered-${KATA_POOL}-`) || rendered.has(name);
        },
      });
      await list(ContainerRuntimeConfigs, 'cluster-scoped/containerruntimeconfigs.yaml');
      const infra = await attempt('infrastructure cluster', () => client.find(Infrastructures, 'cluster'));
      if (infra) await put('cluster-scoped/infrastructure.yaml', stringify(tidy(infra), { lineWidth: 0 }));
    };
    if (openshift) await collectMachineConfigs();
    else
      await put(
        'cluster-scoped/PLATFORM.txt',
        'Plain Kubernetes: no Machine Config Operator. Kata reaches the nodes through kata-deploy (docs/kubernetes.md).\n',
      );

    // Nodes: labels, MCO annotations, conditions.
    const nodes = await attempt('nodes', () => client.list(Nodes));
    if (nodes) await put('cluster-scoped/nodes.yaml', asList(nodes.items.map(nodeView)));

    await list(RuntimeClasses, 'cluster-scoped/runtimeclasses.yaml');
    const webhooks: KubeObject[] = [];
    for (const [rt, name] of [
      [ValidatingWebhookConfigurations, VALIDATING_WEBHOOK_CONFIGURATION],
      [MutatingWebhookConfigurations, MUTATING_WEBHOOK_CONFIGURATION],
    ] as const) {
      const w = await attempt(`${rt.plural} ${name}`, () => client.find(rt, name));
      if (w) webhooks.push(tidy({ apiVersion: `${rt.group}/${rt.version}`, kind: rt.kind, ...w }));
    }
    await put('cluster-scoped/webhookconfigurations.yaml', asList(webhooks));

    // Pods anywhere that use a kata runtime class (what blocks an uninstall).
    const classes = new Set([KATA_RUNTIME_CLASS, KATA_REMOTE_RUNTIME_CLASS, ...kataConfigs.flatMap((k) => k.status?.runtimeClasses ?? [])]);
    const pods = await attempt('pods in all namespaces', () => client.list(Pods));
    if (pods) {
      const kataPods = pods.items
        .filter((p) => classes.has(p.spec?.runtimeClassName ?? ''))
        .map((p: Pod) => ({
          namespace: p.metadata.namespace,
          name: p.metadata.name,
          runtimeClassName: p.spec?.runtimeClassName,
          nodeName: p.spec?.nodeName ?? null,
          phase: p.status?.phase ?? null,
          deletionTimestamp: p.metadata.deletionTimestamp ?? null,
        }));
      await put('cluster-scoped/kata-pods.yaml', stringify({ kataPods }, { lineWidth: 0 }));
    }

    // Events: cluster-scoped objects' events land in default; the operator's own in its namespace.
    for (const evNs of ['default', ns]) await list(Events, `namespaces/${evNs}/events.yaml`, { namespace: evNs });

    // The operator namespace.
    const base = `namespaces/${ns}`;
    await list(ConfigMaps, `${base}/configmaps.yaml`, { namespace: ns });
    const secrets = await attempt(`secrets in ${ns}`, () => client.list(Secrets, { namespace: ns }));
    if (secrets) await put(`${base}/secrets.yaml`, asList(secrets.items.map((s) => tidy(redactSecret(s)))));
    for (const [rt, file] of [
      [DaemonSets, 'daemonsets'],
      [Jobs, 'jobs'],
      [Deployments, 'deployments'],
      [Services, 'services'],
      [ServiceAccounts, 'serviceaccounts'],
      [Leases, 'leases'],
    ] as const) {
      await list(rt as ResourceType, `${base}/${file}.yaml`, { namespace: ns });
    }
    const nsPods = await list(Pods, `${base}/pods.yaml`, { namespace: ns });
    if (crds.some((c) => c.metadata.name?.startsWith(`${PeerPodConfigs.plural}.`))) {
      await list(PeerPodConfigs, `${base}/peerpodconfigs.yaml`, { namespace: ns });
    }

    // Operator logs: its pod's, or the log of an operator running outside the cluster (osc start).
    const operatorPods = nsPods.filter((p) => p.metadata.labels?.['app.kubernetes.io/component'] === 'operator');
    if (opts.operatorLog) {
      const text = await attempt(`the operator's log ${opts.operatorLog}`, () => readTail(opts.operatorLog ?? '', OPERATOR_LOG_BYTES));
      if (text !== undefined) await put('logs/operator/osc.log', scrubLog(text));
    } else if (operatorPods.length === 0) {
      await put('logs/NOTE.txt', operatorOutsideNote(ns));
    }
    const simulated = new Set((nodes?.items ?? []).filter(isSimulatedNode).map((n) => n.metadata.name));
    for (const pod of nsPods) {
      const node = pod.spec?.nodeName ?? '';
      const containers = ((pod.spec?.containers ?? []) as { name: string }[]).map((c) => c.name);
      for (const container of containers) {
        const what = `logs of ${ns}/${pod.metadata.name}/${container}`;
        if (simulated.has(node)) {
          problems.push(`${what}: ${simulatedNodeReason(node)}`);
          continue;
        }
        const text = await attempt(what, () =>
          client
            .request<string>('GET', `${client.path(Pods, ns, pod.metadata.name)}/log`, { query: { container, tailLines: 5000 } })
            .catch((e) => Promise.reject(new Error(kubeletErrorReason(e, node)))),
        );
        // Scrubbed: a log line may carry a credential (src/mustgather/scrub.ts), and the bundle travels.
        if (text !== undefined)
          await put(`logs/${pod.metadata.name}/${container}.log`, scrubLog(typeof text === 'string' ? text : String(text)));
      }
    }

    // The journals of the nodes kata was selected for (those with a KataNode).
    if (opts.nodeLogs !== false) {
      const selected = new Set(kataNodes.map((k) => k.metadata.name));
      const image =
        opts.nodeLogImage ?? (operatorPods[0]?.spec?.containers as { image?: string }[] | undefined)?.[0]?.image ?? defaultImage();
      const got = await collectNodeLogs(
        client,
        (nodes?.items ?? []).filter((n) => selected.has(n.metadata.name)),
        { image, timeoutMs: opts.nodeLogTimeoutMs },
      );
      for (const [node, text] of got.journals) await put(`nodes/${node}/journal.log`, text);
      problems.push(...got.problems);
    }

    // A readable summary first.
    const version = await attempt('server version', () => client.request<{ gitVersion?: string }>('GET', '/version'));
    const summary = [
      `osc must-gather, collected ${now.toISOString()}`,
      `API server: ${client.server} (Kubernetes ${version?.gitVersion ?? 'unknown'})`,
      `Operator namespace: ${ns}`,
      '',
      ...(kataConfigs.length ? kataConfigs.map((k: KataConfig) => renderStatus(summarize(k))) : ['No KataConfig in this cluster.\n']),
      problems.length ? `Not collected:\n${problems.map((p) => `  - ${p}`).join('\n')}\n` : 'Everything was collected.\n',
      'Secret values are replaced with REDACTED; their keys are kept.\n',
    ].join('\n');
    await put('summary.txt', summary);

    const destDir = resolve(opts.destDir ?? '.');
    await mkdir(destDir, { recursive: true });
    const archive = join(destDir, `${root}.tar.gz`);
    await createTar({ gzip: true, file: archive, cwd: staging, portable: true }, [root]);
    return { archive, files: files.sort(), problems };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
