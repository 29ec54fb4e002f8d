import type { KubeClient } from '../kube/client.ts';
import { type ConfigMap, ConfigMaps, type Pod, type Secret, Secrets } from '../kube/resources.ts';
import type { AwsCredentials } from './clouds/aws-account.ts';

/**
 * What a pod's first container sees, read as the kubelet fills in its environment when the container
 * starts (each start, a restart included: a Secret changed since reaches a restarted container), and the
 * AWS credentials an AWS SDK then finds there: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (a value, a
 * whole Secret by envFrom, or one key of a Secret), else AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE,
 * which must be a projected ServiceAccount token (its audience and the pod's ServiceAccount are what the
 * role trusts); and the files Azure's and Google Cloud's SDKs read for a workload identity.
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
  secret?: { secretName?: string; items?: { key: string; path: string }[] };
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

/** The volume mount of the first container a file lies under, and its volume. */
function mountOf(pod: Pod, file: string): { mountPath: string; volume: Volume | undefined } | undefined {
  const spec = pod.spec as unknown as PodSpecView | undefined;
  const mount = (spec?.containers?.[0]?.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  if (!mount) return undefined;
  return { mountPath: mount.mountPath.replace(/\/$/, ''), volume: spec?.volumes?.find((v) => v.name === mount.name) };
}

/**
 * The projected ServiceAccount token at `file`, as the container would read it: whose it is
 * (`system:serviceaccount:<ns>:<name>`) and its audience; undefined when no such token is mounted there.
 */
export function projectedTokenAt(pod: Pod, file: string | undefined): { serviceAccount: string; audience: string } | undefined {
  if (!file) return undefined;
  const m = mountOf(pod, file);
  const token = m?.volume?.projected?.sources?.find(
    (s) => s.serviceAccountToken && `${m.mountPath}/${s.serviceAccountToken.path}` === file,
  )?.serviceAccountToken;
  if (!token) return undefined;
  const spec = pod.spec as unknown as PodSpecView | undefined;
  return {
    serviceAccount: `system:serviceaccount:${pod.metadata.namespace ?? ''}:${spec?.serviceAccountName || 'default'}`,
    audience: token.audience ?? '',
  };
}

/** The text of a file a Secret volume puts at `file` (read now, as the kubelet refreshes it); undefined when none does. */
export async function secretFileAt(
  client: KubeClient,
  pod: Pod,
  file: string | undefined,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (!file) return undefined;
  const m = mountOf(pod, file);
  const source = m?.volume?.secret;
  if (!m || !source?.secretName) return undefined;
  const rel = file.slice(m.mountPath.length + 1);
  const key = source.items ? source.items.find((i) => i.path === rel)?.key : rel;
  if (!key) return undefined;
  return decode(await client.find(Secrets, source.secretName, pod.metadata.namespace ?? '', signal), key);
}

/** The credentials an AWS SDK finds in that environment, in its order: keys, then a web identity. */
export function credentialsFromEnv(pod: Pod, env: Record<string, string>): AwsCredentials | undefined {
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
    return { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY };
  const file = env.AWS_WEB_IDENTITY_TOKEN_FILE;
  if (!env.AWS_ROLE_ARN || !file) return undefined;
  const token = projectedTokenAt(pod, file);
  if (!token) return undefined;
  return { roleArn: env.AWS_ROLE_ARN, webIdentity: token };
}

/**
 * What a cloud's SDK finds of its credentials in a container besides variables: the token a workload
 * identity names (AZURE_FEDERATED_TOKEN_FILE) and the file GOOGLE_APPLICATION_CREDENTIALS names, with the
 * token that file names in turn.
 */
export interface ContainerCredentialFiles {
  token?: { serviceAccount: string; audience: string };
  applicationCredentials?: string;
}

export async function credentialFiles(
  client: KubeClient,
  pod: Pod,
  env: Record<string, string>,
  signal?: AbortSignal,
): Promise<ContainerCredentialFiles> {
  const out: ContainerCredentialFiles = {};
  const appCreds = await secretFileAt(client, pod, env.GOOGLE_APPLICATION_CREDENTIALS, signal);
  if (appCreds !== undefined) out.applicationCredentials = appCreds;
  let tokenFile = env.AZURE_FEDERATED_TOKEN_FILE;
  if (appCreds) {
    try {
      tokenFile = (JSON.parse(appCreds) as { credential_source?: { file?: string } }).credential_source?.file ?? tokenFile;
    } catch {
      // Not JSON: the cloud's SDK says so.
    }
  }
  const token = projectedTokenAt(pod, tokenFile);
  if (token) out.token = token;
  return out;
}

export async function podCredentials(client: KubeClient, pod: Pod, signal?: AbortSignal): Promise<AwsCredentials | undefined> {
  return credentialsFromEnv(pod, await containerEnv(client, pod, signal));
}
