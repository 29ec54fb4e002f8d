/**
 * The digest an image tag names now, asked of its registry over the OCI distribution API: a HEAD of the
 * manifest (the multi-architecture index where there is one, so that the digest suits every node), with
 * the anonymous bearer token registries hand out for public pulls. Used by the release step only.
 */
import { createHash } from 'node:crypto';

const ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

export interface ImageName {
  /** The registry's host[:port], as the API is reached (Docker Hub's is registry-1.docker.io). */
  registry: string;
  repository: string;
  tag: string;
}

/** `[registry/]repository[:tag]` as Docker reads it: no registry is Docker Hub, a one-part name is in `library/`. */
export function parseImageName(image: string): ImageName {
  const name = image.replace(/@sha256:[0-9a-f]+$/, '');
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  let registry = hasRegistry ? first : 'docker.io';
  let rest = hasRegistry ? name.slice(slash + 1) : name;
  const colon = rest.lastIndexOf(':');
  const tag = colon > rest.lastIndexOf('/') ? rest.slice(colon + 1) : 'latest';
  if (colon > rest.lastIndexOf('/')) rest = rest.slice(0, colon);
  if (registry === 'docker.io') {
    registry = 'registry-1.docker.io';
    if (!rest.includes('/')) rest = `library/${rest}`;
  }
  return { registry, repository: rest, tag };
}

/** Registries on the loopback interface are spoken to in plain HTTP (as Docker does); every other one in HTTPS. */
const baseUrl = (registry: string) =>
  /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(registry) ? `http://${registry}` : `https://${registry}`;

/** The parameters of a `WWW-Authenticate: Bearer realm="...",service="...",scope="..."` challenge. */
function bearerChallenge(header: string | null): Record<string, string> | undefined {
  if (!header || !/^Bearer\s/i.test(header)) return undefined;
  const params: Record<string, string> = {};
  for (const m of header.matchAll(/(\w+)="([^"]*)"/g)) if (m[1] && m[2] !== undefined) params[m[1]] = m[2];
  return params.realm ? params : undefined;
}

export async function resolveDigest(image: string, fetchImpl: typeof fetch = fetch): Promise<string> {
  const { registry, repository, tag } = parseImageName(image);
  const url = `${baseUrl(registry)}/v2/${repository}/manifests/${tag}`;
  const ask = (method: 'HEAD' | 'GET', token?: string) =>
    fetchImpl(url, { method, headers: { accept: ACCEPT, ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  let token: string | undefined;
  let res = await ask('HEAD');
  if (res.status === 401) {
    const challenge = bearerChallenge(res.headers.get('www-authenticate'));
    if (!challenge) throw new Error(`${image}: ${registry} asks for credentials this step does not have (pull it by digest yourself)`);
    const { realm, ...query } = challenge;
    const tokenRes = await fetchImpl(`${realm}?${new URLSearchParams(query)}`);
    if (!tokenRes.ok) throw new Error(`${image}: ${registry}'s token service answered ${tokenRes.status}`);
    const body = (await tokenRes.json()) as { token?: string; access_token?: string };
    token = body.token ?? body.access_token;
    res = await ask('HEAD', token);
  }
  if (!res.ok) throw new Error(`${image}: ${registry} answered ${res.status} for ${repository}:${tag}`);
  const digest = res.headers.get('docker-content-digest');
  if (digest && /^sha256:[0-9a-f]{64}$/.test(digest)) return digest;
  // Some registries send the digest only with the body: it is the SHA-256 of the manifest's bytes.
  const full = await ask('GET', token);
  if (!full.ok) throw new Error(`${image}: ${registry} answered ${full.status} for ${repository}:${tag}`);
  return `sha256:${createHash('sha256')
    .update(Buffer.from(await full.arrayBuffer()))
    .digest('hex')}`;
}
