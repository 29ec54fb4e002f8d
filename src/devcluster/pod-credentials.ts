import type { KubeClient } from '../kube/client.ts';
import { type ConfigMap, ConfigMaps, type Pod, type Secret, Secrets } from '../kube/resources.ts';
import type { AwsCredentials } from './aws-account.ts';

/**
 * What a pod's first container sees, read as the kubelet fills in its environment when the container
 * starts (each start, a restart included: a Secret changed since reaches a restarted container), and the
 * AWS credentials an AWS SDK then finds there: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a value, a
 * whole Secret by envFrom, or one key of a Secret), else AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE,
 * which must be a projected ServiceAccount token (its audience and the pod's ServiceAccount are what the
 * role trusts).
 */

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}
interface Container {
  env?: EnvVar[];
  envFrom?: { secretRef?: { name: string }; configMapRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface Volume {
  name: string;
  projected?: { sources?: { serviceAccountToken?: { audience?: string; path: string } }[] };
}
interface PodSpecView {
  containers?: Container[];
  volumes?: Volume[];
  serviceAccountName?: string;
}

const decode = (s: Secret | undefined, key: string) => {
  const v = s?.data?.[key] ?? undefined;
  return v === undefined ? s?.stringData?.[key] : Buffer.from(v, 'base64').toString('utf8');
};

/** The first container's environment, as the kubelet resolves it now (later entries win, as in a pod). */
export async function containerEnv(client: KubeClient, pod: Pod, signal?: AbortSignal): Promise<Record<string, string>> {
  const ns = pod.metadata.namespace ?? '';
  const c = (pod.spec as unknown as PodSpecView | undefined)?.containers?.[0];
  const env: Record<string, string> = {};
  if (!c) return env;
  const secrets = new Map<string, Secret | undefined>();
  const secret = async (name: string) => {
    if (!secrets.has(name)) secrets.set(name, await client.find(Secrets, name, ns, signal));
    return secrets.get(name);
  };
  const configMaps = new Map<string, ConfigMap | undefined>();
  const configMap = async (name: string) => {
    if (!configMaps.has(name)) configMaps.set(name, await client.find(ConfigMaps, name, ns, signal));
    return configMaps.get(name);
  };
  for (const from of c.envFrom ?? []) {
    if (from.secretRef) {
      const s = await secret(from.secretRef.name);
      for (const k of Object.keys({ ...s?.data, ...s?.stringData })) env[k] = decode(s, k) ?? '';
    } else if (from.configMapRef) {
      Object.assign(env, (await configMap(from.configMapRef.name))?.data ?? {});
    }
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const v = decode(await secret(e.valueFrom.secretKeyRef.name), e.valueFrom.secretKeyRef.key);
      if (v !== undefined) env[e.name] = v;
    } else if (e.valueFrom?.configMapKeyRef) {
      const v = (await configMap(e.valueFrom.configMapKeyRef.name))?.data?.[e.valueFrom.configMapKeyRef.key];
      if (v !== undefined) env[e.name] = v;
    }
  }
  return env;
}

/** The credentials an AWS SDK finds in that environment, in its order: keys, then a web identity. */
export function credentialsFromEnv(pod: Pod, env: Record<string, string>): AwsCredentials | undefined {
  const ns = pod.metadata.namespace ?? '';
  const spec = pod.spec as unknown as PodSpecView | undefined;
  const c = spec?.containers?.[0];
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
    return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY };
  const file = env.AWS_WEB_IDENTITY_TOKEN_FILE;
  if (!env.AWS_ROLE_ARN || !file) return undefined;
  const mount = (c?.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  const volume = spec?.volumes?.find((v) => v.name === mount?.name);
  const token = volume?.projected?.sources?.find(
    (s) => s.serviceAccountToken && `${mount?.mountPath.replace(/\/$/, '')}/${s.serviceAccountToken.path}` === file,
  )?.serviceAccountToken;
  if (!token) return undefined;
  return {
    roleArn: env.AWS_ROLE_ARN,
    webIdentity: { serviceAccount: `system:serviceaccount:${ns}:${spec?.serviceAccountName || 'default'}`, audience: token.audience ?? '' },
  };
}

export async function podCredentials(client: KubeClient, pod: Pod, signal?: AbortSignal): Promise<AwsCredentials | undefined> {
  return credentialsFromEnv(pod, await containerEnv(client, pod, signal));
}
