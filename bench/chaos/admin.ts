/**
 * The chaos run's administrator: the operations as kubectl would make them, the peer pods configuration, and
 * the intent applied again after an etcd restore.
 *
 * A restore rolls every API object back to the backup, the administrator's own included: a KataConfig
 * created since is gone, one deleted since is back, as are node labels and the logLevel. What the
 * administrator wants has not changed, so, as a GitOps tool or an administrator following a recovery
 * runbook would, the run's administrator applies the intent again once the API server answers: the
 * KataConfig as the model says (created, its spec patched, or deleted; one the restore brought back while it
 * was being deleted is waited out first) and the chaos label on exactly the labelled workers. The machines
 * did not go back in time: the Node of a machine removed since is deleted (what a cloud's node lifecycle
 * controller does), and a machine that joined since registers its Node again (its kubelet restarted).
 */
import { type KataConfig, KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM, PEER_PODS_SECRET } from '../../src/api/names.ts';
import type { DevCluster } from '../../src/devcluster/devcluster.ts';
import { ApiError, isNotFound } from '../../src/kube/errors.ts';
import { ConfigMaps, Nodes, Secrets } from '../../src/kube/resources.ts';
import { CHAOS_LABEL, CHAOS_SELECTOR, type Model, type Operation } from './scenario.ts';

/** The administrator's IAM user, whose key peer-pods-secret holds. */
export const ADMIN_AWS_KEY = { accessKeyId: 'AKIAIOSFODNN7CHAOS00', secretAccessKey: 'chaos/secret/key/not/a/real/one/000000000' };

/** peer-pods-cm without PODVM_AMI_ID: osc builds the pod VM image, and deletes it when peer pods go. */
const PEER_PODS_DATA: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PODVM_INSTANCE_TYPE: 't3.medium',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  PEERPODS_LIMIT_PER_NODE: '10',
  DISABLECVM: 'true',
};

/** OpenShift: peer-pods-secret and peer-pods-cm, as the documentation has the administrator write them. */
export async function configurePeerPods(dev: DevCluster): Promise<void> {
  const ns = OPERATOR_NAMESPACE;
  await dev.client.create(Secrets, {
    metadata: { name: PEER_PODS_SECRET, namespace: ns },
    stringData: { AWS_ACCESS_KEY_ID: ADMIN_AWS_KEY.accessKeyId, AWS_SECRET_ACCESS_KEY: ADMIN_AWS_KEY.secretAccessKey },
  });
  await dev.client.create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: ns }, data: PEER_PODS_DATA });
}

/** One operation, once (the run retries it while admission or the API server refuses it). */
export async function act(dev: DevCluster, op: Operation, kcName: string): Promise<void> {
  const c = dev.client;
  switch (op.kind) {
    case 'install': {
      const spec: KataConfig['spec'] = {
        logLevel: op.logLevel,
        enablePeerPods: !!op.peerPods,
        ...(op.selector ? { kataConfigPoolSelector: CHAOS_SELECTOR } : {}),
      };
      try {
        await c.create(KataConfigs, { metadata: { name: kcName }, spec });
      } catch (e) {
        // Created by an earlier try whose answer was lost.
        if (!(e instanceof ApiError && e.status === 409)) throw e;
      }
      return;
    }
    case 'uninstall':
      await c.delete(KataConfigs, kcName);
      return;
    case 'logLevel':
      await c.patch(KataConfigs, kcName, { spec: { logLevel: op.logLevel } });
      return;
    case 'peerPodsOn':
    case 'peerPodsOff':
      await c.patch(KataConfigs, kcName, { spec: { enablePeerPods: op.kind === 'peerPodsOn' } });
      return;
    case 'selector':
      if (op.node === undefined)
        await c.patch(KataConfigs, kcName, { spec: { kataConfigPoolSelector: op.selector ? CHAOS_SELECTOR : null } });
      else await c.patch(Nodes, op.node, { metadata: { labels: { [CHAOS_LABEL]: op.labelled ? 'kata' : null } } });
      return;
    case 'nodeJoin':
      if (!(await c.find(Nodes, op.node ?? ''))) await dev.addWorker(op.node);
      if (op.labelled) await c.patch(Nodes, op.node ?? '', { metadata: { labels: { [CHAOS_LABEL]: 'kata' } } });
      return;
    case 'nodeLeave':
      await c.delete(Nodes, op.node ?? '');
      return;
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
