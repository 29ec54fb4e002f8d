import type { Logger } from 'pino';
import { SecurityContextConstraintsType } from '../../api/scc.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists } from '../../kube/errors.ts';
import { ClusterRoleBindings, ClusterRoles } from '../../kube/resources.ts';
import { defaultSCCRoles, defaultSCCs } from './defaults.ts';
import { SccAdmission } from './webhook.ts';

export { sccCRD } from './crd.ts';
export { defaultSCCs } from './defaults.ts';
export { AUTHORIZATION_TTL_MS, SCC_WEBHOOK, SCC_WEBHOOK_CONFIGURATION, SccAdmission } from './webhook.ts';

/**
 * OpenShift's default SCCs and their `use` roles, created once: as on OpenShift, an administrator's later
 * changes to them are kept (a restarted dev cluster does not put them back).
 */
export async function seedDefaultSCCs(client: KubeClient): Promise<void> {
  const createIfAbsent = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  };
  for (const s of defaultSCCs()) await createIfAbsent(client.create(SecurityContextConstraintsType, s));
  for (const o of defaultSCCRoles())
    await createIfAbsent(o.kind === 'ClusterRole' ? client.create(ClusterRoles, o) : client.create(ClusterRoleBindings, o));
}

/** Seeds the SCCs and starts admission; answers it (stopped with the dev cluster). */
export async function startSccAdmission(client: KubeClient, log: Logger, signal: AbortSignal): Promise<SccAdmission> {
  await seedDefaultSCCs(client);
  const admission = new SccAdmission(client, log);
  await admission.start(signal);
  return admission;
}
