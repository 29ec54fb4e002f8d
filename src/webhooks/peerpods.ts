import { DEFAULT_POD_INITDATA_KEY } from '../api/initdata.ts';
import { OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { type ConfigMap, ConfigMaps, type Pod } from '../kube/resources.ts';
import { cloudProvider, defaultCloud } from '../peerpods/clouds/index.ts';
import { initdataFindings } from '../peerpods/config-initdata.ts';
import { mutatePeerPod } from '../peerpods/mutate.ts';
import type { AdmissionRequest, Decision } from './admission.ts';

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Where the webhook reads peer-pods-cm: the operator's cache once it has synced, the API server before. */
export interface ConfigMapSource {
  hasSynced: boolean;
  get(key: string): ConfigMap | undefined;
}

/**
 * Mutates kata-remote pods at admission (docs/peerpods.md, "Pods at admission"): resources become annotations sizing the pod VM and one
 * kata.peerpods.io/vm, and the instance type is chosen from peer-pods-cm; a pod without initdata gets
 * DEFAULT_POD_INITDATA when peer-pods-cm sets it. The ConfigMap is read from the
 * operator's watch cache (an edit applies to the next pod once the watch delivers it, within a moment), not
 * fetched per request: the webhook port answers whoever reaches it, and a flood of requests must not turn
 * into a flood of reads on the API server.
 */
export function peerPodAdmission(client: KubeClient, namespace = OPERATOR_NAMESPACE, cache?: ConfigMapSource) {
  return async (req: AdmissionRequest<Pod>): Promise<Decision> => {
    if (req.operation !== 'CREATE' || !req.object) return { allowed: true };
    const cm = cache?.hasSynced ? cache.get(`${namespace}/${PEER_PODS_CM}`) : await client.find(ConfigMaps, PEER_PODS_CM, namespace);
    const data = cm?.data ?? {};
    // The sizes of the cloud peer-pods-cm names; AWS's when it names none osc has (the configuration condition says why).
    const { sizes } = cloudProvider(data.CLOUD_PROVIDER) ?? defaultCloud();
    const defaultType = data[sizes.defaultKey] || sizes.defaultSize;
    const fallback = data[DEFAULT_POD_INITDATA_KEY];
    const problem = fallback === undefined ? undefined : initdataFindings(DEFAULT_POD_INITDATA_KEY, fallback).problem;
    const result = mutatePeerPod(req.object, {
      defaultType,
      allowedTypes: list(data[sizes.listKey]),
      sizes,
      ...(fallback !== undefined ? { defaultInitdata: { value: fallback, ...(problem !== undefined ? { problem } : {}) } } : {}),
    });
    if (!result.allowed) return { allowed: false, code: 400, reason: 'BadRequest', message: result.message };
    return { allowed: true, patch: result.patch, warnings: result.warnings };
  };
}
