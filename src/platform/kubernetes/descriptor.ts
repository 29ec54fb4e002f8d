import { DaemonSets } from '../../kube/resources.ts';
import type { PlatformDescriptor } from '../platform.ts';
import { INSTALLER_NAME, SHIM_OVERHEAD } from './katadeploy.ts';

/** The kubernetes platform's own settings (`osc run` flags); each defaults as ./platform.ts says. */
export interface KubernetesSettings {
  /** The kata-deploy image (--kata-deploy-image). */
  image?: string;
  /** The kata-deploy shim of the `kata` RuntimeClass. */
  shim?: string;
  /** Nodes installing at once (--max-unavailable). */
  maxUnavailable?: number;
  /** How long an installer has to report before its node is rolled back, in ms (--install-deadline). */
  installDeadlineMs?: number;
}

/** Each setting: the flag that sets it, and its check (undefined when good, else what it must be). */
const SETTINGS: Record<keyof KubernetesSettings, { flag?: string; problem(v: unknown): string | undefined }> = {
  image: {
    flag: '--kata-deploy-image',
    problem: (v) => (typeof v === 'string' && /^\S+$/.test(v) ? undefined : 'an image reference without spaces'),
  },
  shim: {
    problem: (v) => (typeof v === 'string' && v in SHIM_OVERHEAD ? undefined : `one of ${Object.keys(SHIM_OVERHEAD).join(', ')}`),
  },
  maxUnavailable: {
    flag: '--max-unavailable',
    problem: (v) => (Number.isInteger(v) && (v as number) > 0 ? undefined : 'a whole number of nodes, 1 or more'),
  },
  installDeadlineMs: {
    flag: '--install-deadline',
    problem: (v) => (Number.isInteger(v) && (v as number) > 0 ? undefined : 'a positive duration (e.g. 10m)'),
  },
};

/** Plain Kubernetes: kata arrives through kata-deploy, run by osc one node at a time (./platform.ts). */
export const kubernetes: PlatformDescriptor<KubernetesSettings> = {
  name: 'kubernetes',
  summary: 'an installer osc runs: kata-deploy',
  // Any cluster the platforms before it do not claim.
  recognises: () => true,
  rbac: {
    // Nothing cluster-wide beyond what every platform has: kata-deploy's DaemonSet lives in the operator's
    // namespace, and kata-deploy's ServiceAccount and RBAC ship with the install (src/install/katadeploy-rbac.ts),
    // so the operator holds neither nodes/proxy nor the right to create ClusterRoles or bindings.
    cluster: [],
    // kata-deploy's DaemonSet is OnDelete: osc replaces a node's installer pod by deleting it.
    namespace: [{ apiGroups: [''], resources: ['pods'], verbs: ['delete'] }],
  },
  // The installer DaemonSet exists while kata-deploy has (or is putting) kata on nodes.
  async inUse(client, namespace) {
    return !!(await client.find(DaemonSets, INSTALLER_NAME, namespace));
  },
  packaging: 'helm',
  devCluster: true,
  cluster: { nodeInstaller: true },
  parseSettings(raw) {
    const settings: KubernetesSettings = {};
    for (const [key, value] of Object.entries(raw)) {
      if (value === undefined) continue;
      const setting = SETTINGS[key as keyof KubernetesSettings];
      if (!setting) throw new Error(`the kubernetes platform has no setting ${key}: its settings are ${Object.keys(SETTINGS).join(', ')}`);
      const problem = setting.problem(value);
      if (problem)
        throw new Error(
          `kubernetes platform setting ${key}${setting.flag ? ` (${setting.flag})` : ''} must be ${problem}, not ${JSON.stringify(value)}`,
        );
      Object.assign(settings, { [key]: value });
    }
    return settings;
  },
  async create(opts, settings) {
    const { KubernetesPlatform } = await import('./platform.ts');
    return new KubernetesPlatform({
      ...settings,
      ...(opts.namespace ? { namespace: opts.namespace } : {}),
      ...(opts.overhead ? { overhead: opts.overhead } : {}),
    });
  },
};
