/**
 * kata-deploy's identity on plain Kubernetes: its ServiceAccount, ClusterRole and ClusterRoleBinding,
 * shipped with the install manifests (`osc install --distribution kubernetes`, config/kubernetes/, the
 * Helm chart) rather than made by the operator at run time. An operator that creates ClusterRoles and
 * binds them would need every permission it grants (the API server refuses escalation otherwise), and
 * `create` on ClusterRoleBindings lets it bind any role to any subject: a static identity needs neither.
 */

import { objectName } from '../api/meta.ts';
import type { KubeClient } from '../kube/client.ts';
import type { KubeObject } from '../kube/types.ts';
import { INSTALLER_NAME, INSTALLER_RULES } from '../platform/kubernetes/katadeploy.ts';
import { resourceOf } from './apply.ts';

const RBAC = 'rbac.authorization.k8s.io/v1';

const meta = (namespace?: string) => ({
  name: INSTALLER_NAME,
  ...(namespace ? { namespace } : {}),
  labels: {
    'app.kubernetes.io/name': 'kata-deploy',
    'app.kubernetes.io/component': 'installer',
    'app.kubernetes.io/part-of': 'openshift-sandboxed-containers',
  },
});

/** The ServiceAccount the installer DaemonSet runs as, and its cluster-wide rules (INSTALLER_RULES). */
export function kataDeployIdentity(namespace: string): KubeObject[] {
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(namespace) },
    { apiVersion: RBAC, kind: 'ClusterRole', metadata: meta(), rules: INSTALLER_RULES } as KubeObject,
    {
      apiVersion: RBAC,
      kind: 'ClusterRoleBinding',
      metadata: meta(),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: INSTALLER_NAME },
      subjects: [{ kind: 'ServiceAccount', name: INSTALLER_NAME, namespace }],
    } as KubeObject,
  ];
}

/**
 * Operators before this change made the identity at run time, owned by the KataConfig: left so, the
 * garbage collector would delete the installed identity with that KataConfig, and the next install would
 * find no ServiceAccount for its installer. `osc install` takes the objects over by dropping those owner
 * references. Answers how many it changed.
 */
export async function adoptKataDeployIdentity(client: KubeClient, namespace: string): Promise<number> {
  let adopted = 0;
  for (const obj of kataDeployIdentity(namespace)) {
    const rt = resourceOf(obj);
    const current = await client.find(rt, objectName(obj), obj.metadata.namespace);
    if (!current?.metadata.ownerReferences?.length) continue;
    await client.patch(rt, objectName(obj), { metadata: { ownerReferences: null } }, { namespace: obj.metadata.namespace });
    adopted++;
  }
  return adopted;
}
