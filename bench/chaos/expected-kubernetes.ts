/**
 * What the model implies on plain Kubernetes, pure: kata-deploy on exactly the selected workers, each
 * running the configuration the KataConfig's logLevel gives (osc's label and configuration annotation on
 * the node, kata-deploy's labels, one Ready installer pod of that configuration), and nothing of it on any
 * other node. Peer pods do not exist on this platform.
 */
import type { LogLevel } from '../../src/api/names.ts';
import type { Node, Pod } from '../../src/kube/resources.ts';
import {
  CONFIG_ANNOTATION,
  configId,
  DEFAULT_KATA_DEPLOY_IMAGE,
  DEFAULT_SHIM,
  INSTALL_LABEL,
  installerConfig,
  KATA_DEPLOY_IMAGE_ENV,
  KATA_DEPLOY_INSTANCE_LABEL,
  KATA_RUNTIME_LABEL,
  ROLLOUT_ANNOTATION,
} from '../../src/platform/kubernetes/katadeploy.ts';
import type { Differences, Snapshot } from './expected.ts';
import { type Model, selected } from './scenario.ts';

export interface KubernetesSnapshot {
  /** osc's installer DaemonSet exists. */
  installer: boolean;
  /** Its pods (osc-kata-deploy), wherever they run. */
  installerPods: Pod[];
}

/** The configuration id osc gives the nodes for a logLevel (the image the replicas run with, the default shim). */
export const expectedConfigId = (logLevel: LogLevel): string =>
  configId(installerConfig(process.env[KATA_DEPLOY_IMAGE_ENV] || DEFAULT_KATA_DEPLOY_IMAGE, DEFAULT_SHIM, logLevel));

/** The dev cluster's plain-Kubernetes workers carry no role label: they are the nodes named worker-N. */
export const isWorker = (n: Node): boolean => /^worker-\d+$/.test(n.metadata.name ?? '');

const ready = (p: Pod) =>
  !p.metadata.deletionTimestamp && (p.status?.containerStatuses as { ready?: boolean }[] | undefined)?.every((c) => c.ready) === true;

const byName = new Intl.Collator('en', { numeric: true }).compare;

export function kubernetesDifferences(m: Model, s: Snapshot, k: KubernetesSnapshot, d: Differences): void {
  const want = d.want.bind(d);
  const gone = d.gone.bind(d);
  const sel = m.installed ? selected(m) : [];
  const workers = s.nodes.filter(isWorker);
  want(
    JSON.stringify(workers.map((n) => n.metadata.name ?? '').sort(byName)) === JSON.stringify([...m.workers].sort(byName)),
    `workers ${JSON.stringify(m.workers)}`,
  );
  const id = expectedConfigId(m.logLevel);
  for (const n of s.nodes) {
    const name = n.metadata.name ?? '';
    const labels = n.metadata.labels ?? {};
    const annotations = n.metadata.annotations ?? {};
    const pods = k.installerPods.filter((p) => p.spec?.nodeName === name);
    if (sel.includes(name)) {
      want(labels[INSTALL_LABEL] === 'true', `${name}: osc's ${INSTALL_LABEL} label`);
      want(annotations[CONFIG_ANNOTATION] === id, `${name}: configuration ${id} assigned (is ${annotations[CONFIG_ANNOTATION]})`);
      want(labels[KATA_RUNTIME_LABEL] === 'true', `${name}: ${KATA_RUNTIME_LABEL}=true (is ${labels[KATA_RUNTIME_LABEL]})`);
      want(labels[KATA_DEPLOY_INSTANCE_LABEL] === 'true', `${name}: ${KATA_DEPLOY_INSTANCE_LABEL}=true`);
      want(
        pods.length === 1 && ready(pods[0] as Pod) && pods[0]?.metadata.annotations?.[CONFIG_ANNOTATION] === id,
        `${name}: one Ready installer pod of configuration ${id} (has ${pods.map((p) => `${p.metadata.name} ${p.metadata.annotations?.[CONFIG_ANNOTATION]}${ready(p) ? ' Ready' : ''}`).join(', ') || 'none'})`,
      );
    } else {
      gone(labels[INSTALL_LABEL] === undefined, `${name}: osc's ${INSTALL_LABEL} label`);
      gone(annotations[CONFIG_ANNOTATION] === undefined, `${name}: ${CONFIG_ANNOTATION}`);
      gone(annotations[ROLLOUT_ANNOTATION] === undefined, `${name}: ${ROLLOUT_ANNOTATION}`);
      gone(labels[KATA_RUNTIME_LABEL] === undefined, `${name}: ${KATA_RUNTIME_LABEL} (kata left on the node)`);
      gone(labels[KATA_DEPLOY_INSTANCE_LABEL] === undefined, `${name}: ${KATA_DEPLOY_INSTANCE_LABEL}`);
      for (const p of pods) gone(false, `installer pod ${p.metadata.name} on ${name}`);
    }
  }
  if (m.installed) want(k.installer, 'the kata-deploy DaemonSet');
  else gone(!k.installer, 'the kata-deploy DaemonSet');
}
