/**
 * What bench/install.ts --operator original needs besides the process (bench/original-process.ts): the
 * original Go operator's build (tools/build-original-operator.sh, cached per commit), and what its OLM
 * bundle brings to a cluster before the operator starts.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { KubeObject, ResourceType } from '../src/api/meta.ts';
import { OPERATOR_NAMESPACE } from '../src/api/names.ts';
import type { DevCluster } from '../src/devcluster/devcluster.ts';
import {
  ClusterRoles,
  ConfigMaps,
  Namespaces,
  RoleBindings,
  Roles,
  ServiceAccounts,
  ServiceMonitors,
  Services,
} from '../src/kube/resources.ts';

/** The original's binary and bundle, built from the checkout `src` (once per commit). */
export function originalBuild(src: string | undefined): { dir: string; commit: string } {
  if (!src)
    throw new Error(
      '--operator original needs a checkout of the original operator: --original-src DIR or OSC_ORIGINAL_SRC ' +
        '(git clone https://github.com/openshift/sandboxed-containers-operator); see tools/build-original-operator.sh',
    );
  const script = new URL('../tools/build-original-operator.sh', import.meta.url).pathname;
  const built = spawnSync('bash', [script, src], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (built.status !== 0) throw new Error('tools/build-original-operator.sh failed (its output is above)');
  const dir = built.stdout.trim().split('\n').pop() ?? '';
  return { dir, commit: readFileSync(join(dir, 'commit'), 'utf8').trim() };
}

/**
 * What OLM installs with the original's bundle, and an OpenShift cluster has, that the dev cluster lacks:
 *
 * - the bundle's CRDs. Its KataConfig CRD replaces osc's, which has no `status.waitingForMcoToStart`: the
 *   API server would drop that field from the original's status writes, and with it the original's memory
 *   that it waits for the Machine Config Operator to start (it would declare the install done before the
 *   rollout began). Its PeerPod CRD is one the original watches, and osc does not serve;
 * - the bundle's other namespaced objects, in the operator's namespace: the `monitor` ServiceAccount its
 *   monitor DaemonSet runs as, and the dashboard ConfigMap it copies on every reconcile (without it, it
 *   logs an error and retries every 15 s); RBAC, Services and a ServiceMonitor, which nothing here uses,
 *   as OLM would;
 * - the namespace `openshift-config-managed`, where it copies that dashboard.
 *
 * The ClusterServiceVersion is not applied (no OLM here): bench/original-process.ts reads the operator's
 * args and env from it. Its PrometheusRule is left out: the dev cluster does not serve that kind.
 */
export async function prepareForOriginal(dev: DevCluster, dir: string): Promise<void> {
  const bundle = join(dir, 'bundle');
  const manifests = readdirSync(bundle)
    .filter((f) => f.endsWith('.yaml') && !f.endsWith('.clusterserviceversion.yaml'))
    .map((f) => parseYaml(readFileSync(join(bundle, f), 'utf8')) as KubeObject & { status?: unknown });
  const crds = manifests
    .filter((o) => o.kind === 'CustomResourceDefinition')
    .map(({ status: _status, ...crd }) => ({ ...crd, metadata: { name: crd.metadata.name } }) as KubeObject);
  await dev.controlPlane.installCRDs(crds);
  for (const o of manifests) {
    if (o.kind === 'CustomResourceDefinition' || o.kind === 'PrometheusRule') continue;
    const rt = BUNDLE_KINDS.find((k) => k.kind === o.kind);
    if (!rt) throw new Error(`the original's bundle has a ${o.apiVersion} ${o.kind} the benchmark does not know how to apply`);
    const { creationTimestamp: _c, ...meta } = o.metadata as KubeObject['metadata'] & { creationTimestamp?: unknown };
    const obj = { ...o, metadata: { ...meta, ...(rt.namespaced ? { namespace: OPERATOR_NAMESPACE } : {}) } };
    await dev.client.apply(rt, obj, { fieldManager: 'osc-bench-olm' });
  }
  if (!(await dev.client.find(Namespaces, 'openshift-config-managed')))
    await dev.client.create(Namespaces, { metadata: { name: 'openshift-config-managed' } });
}

/** The kinds of the bundle's other objects. */
const BUNDLE_KINDS: ResourceType[] = [ServiceAccounts, Roles, RoleBindings, ClusterRoles, ConfigMaps, Services, ServiceMonitors];
