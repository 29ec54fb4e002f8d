/**
 * Which keys of peer-pods-cm the cloud-api-adaptor reads, so that osc restarts the adaptors only for an edit
 * they would see (docs/peerpods.md, "Adaptor updates"). The adaptor takes its settings from its environment
 * once, at start (the whole ConfigMap is its envFrom): every key it reads needs a restart to take effect,
 * and no other key does.
 *
 * Per cloud, the adaptor reads the keys its provider registers (the cloud's `cmKeys` and `otherCmKeys`) and
 * the common ones (PROXY_TIMEOUT, VXLAN_PORT, INITDATA, TLS_*, ...), except:
 * - PEERPODS_LIMIT_PER_NODE: osc advertises the pod VM limit on the nodes (the PeerPodConfig); the adaptor
 *   runs without an API token here, so it never advertises it itself;
 * - DEFAULT_POD_INITDATA: osc's pod webhook reads it;
 * - TLS_MIN_VERSION and TLS_CIPHER_SUITES: osc sets them on the container from the cluster's TLS profile;
 * - the cloud's `notReadByAdaptor` (AWS_VPC_ID on AWS: the image job's);
 * - the keys only other clouds have (AZURE_* on AWS, say): the adaptor of this cloud never reads them.
 * A key osc does not know at all counts as read: the adaptor (or the libraries it links, which read
 * HTTPS_PROXY and the cloud SDKs' variables) may well read it, and a restart too many is better than an
 * edit silently not applied.
 */
import { DEFAULT_POD_INITDATA_KEY } from '../api/initdata.ts';
import { cloudProvider, cloudProviders } from './clouds/index.ts';
import { COMMON_CM_KEYS, OSC_SET_ADAPTOR_KEYS } from './config-schema.ts';

/**
 * Keys of peer-pods-cm the adaptor never sees as osc deploys it, on every cloud: osc's own, and those osc
 * sets on the adaptor's container itself (which win over the ConfigMap's).
 */
export const OSC_ONLY_CM_KEYS: readonly string[] = ['PEERPODS_LIMIT_PER_NODE', DEFAULT_POD_INITDATA_KEY, ...OSC_SET_ADAPTOR_KEYS];

/** The keys of peer-pods-cm that no adaptor of the cloud CLOUD_PROVIDER names reads. */
export function keysNotReadByAdaptor(cloudName: string | undefined): Set<string> {
  const ignored = new Set(OSC_ONLY_CM_KEYS);
  const cloud = cloudProvider(cloudName);
  if (!cloud) return ignored;
  for (const k of cloud.notReadByAdaptor ?? []) ignored.add(k);
  const own = new Set<string>([...cloud.cmKeys, ...cloud.otherCmKeys, ...COMMON_CM_KEYS]);
  for (const other of cloudProviders()) {
    if (other === cloud) continue;
    for (const k of [...other.cmKeys, ...other.otherCmKeys]) if (!own.has(k)) ignored.add(k);
  }
  return ignored;
}

/** The part of peer-pods-cm's data the adaptor reads. */
export function adaptorData(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const ignored = keysNotReadByAdaptor(data?.CLOUD_PROVIDER);
  return Object.fromEntries(Object.entries(data ?? {}).filter(([k]) => !ignored.has(k)));
}
