import { existsSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { InvalidArgumentError } from 'commander';
import { KataConfigs } from '../api/kataconfig.ts';
import { KATACONFIG_GROUP } from '../api/names.ts';
import { KubeClient } from '../kube/client.ts';
import { type Credentials, inClusterCredentials, isInCluster } from '../kube/credentials.ts';
import { ApiError, errorMessage } from '../kube/errors.ts';

/** A failure the user can act on: printed as `error: <message>` and exits with exitCode. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** What the dev cluster's OpenShift Infrastructure can report as its cloud (`osc start --cloud`); peer pods need AWS, Azure or GCP. */
export const DEV_CLOUDS = ['None', 'BareMetal', 'AWS', 'Azure', 'GCP'] as const;
export type DevCloud = (typeof DEV_CLOUDS)[number];

/**
 * Loads a command that runs the dev cluster. The operator image leaves the dev cluster out (it is a
 * quarter of the sources and the operator never needs it), so there its absence is a clear error.
 */
export async function loadDevClusterCommand<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && /[\\/]devcluster[\\/]/.test(e.message ?? '')) {
      throw new CliError(
        'this osc has no dev cluster (the operator image leaves it out): run "osc start" and "osc dev" from a source checkout or the npm package',
      );
    }
    throw err;
  }
}

/** Where a command writes: the process's streams, or buffers in tests. */
export interface CliIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
}

export const processIO = (): CliIO => ({ stdout: process.stdout, stderr: process.stderr });

/** The README walkthrough's KataConfig, shipped with osc (src/ and dist/ sit at the same depth). */
export const SAMPLE_KATACONFIG = resolve(import.meta.dirname, '..', '..', 'config', 'samples', 'cluster-kataconfig.yaml');

/** A path as the user would type it here: relative to the current directory when it lies below it. */
export function displayPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel && !rel.startsWith('..') ? rel : p;
}

export const KATACONFIG_CRD = `${KataConfigs.plural}.${KATACONFIG_GROUP}`;

export const missingCrdMessage = () => `the KataConfig API is not installed in this cluster (${KATACONFIG_CRD}); run "osc install" first`;

// ---------------------------------------------------------------------------------------------------------
// Option parsers (commander calls them; InvalidArgumentError becomes "option '...' argument '...' is invalid").

export function parseNonNegativeInt(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number (0, 1, 2, ...).');
  return Number(value);
}

export function parsePositiveInt(value: string): number {
  const n = parseNonNegativeInt(value);
  if (n === 0) throw new InvalidArgumentError('expected a number greater than 0.');
  return n;
}

/** A duration such as 10m, 30s, 1h or 500ms, in milliseconds. */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 10m, 30s, 1h or 500ms.');
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

/** host:port, :port, or port; '0' or '' disables where the flag allows it. */
export function parseAddress(value: string): string {
  const v = value.trim();
  if (v === '' || v === '0') return v;
  const m = /^(?:(\[[^\]]+\]|[^:]*):)?(\d+)$/.exec(v);
  if (!m || Number(m[2]) > 65535) throw new InvalidArgumentError('expected host:port, :port or a port number.');
  return m[1] === undefined ? `:${m[2]}` : v;
}

/**
 * An image reference as a container runtime pulls it: [registry[:port]/]repository[:tag][@sha256:digest],
 * the repository in lower case. A typo here would only show later, as pods that never pull.
 */
const IMAGE_RE =
  /^(?:[A-Za-z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/;

export function parseImage(value: string): string {
  if (!IMAGE_RE.test(value)) {
    throw new InvalidArgumentError(
      'expected an image reference: [registry/]repository[:tag][@sha256:digest], the repository in lower case, no spaces (e.g. registry.example.com/osc:dev).',
    );
  }
  return value;
}

/** A namespace name: a DNS label (what the API server accepts). */
export function parseNamespace(value: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(value)) {
    throw new InvalidArgumentError(
      'expected a namespace name: at most 63 lower case letters, digits or "-", beginning and ending with a letter or digit.',
    );
  }
  return value;
}

export function parseUrl(value: string): string {
  try {
    const u = new URL(value.replace('{port}', '1'));
    if (u.protocol !== 'https:') throw new Error('not https');
  } catch {
    throw new InvalidArgumentError('expected an https:// URL (may contain {port}).');
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Directories the user names.

export const fsReason = (e: unknown): string => {
  const code = (e as NodeJS.ErrnoException).code;
  const known: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device',
    EISDIR: 'it is a directory',
    ENOTDIR: 'a part of the path is a file, not a directory',
    ENOENT: 'this file system does not allow creating it',
  };
  return (code && known[code]) ?? errorMessage(e);
};

/**
 * Makes the directory a flag names (--output-dir, --home, --dest-dir) and its missing parents, one level
 * at a time. Node's recursive mkdir loops forever where mkdir answers ENOENT for a parent that exists (e.g.
 * under /proc), and reports a file in the way as a bare EEXIST: both become an error that names the flag,
 * the directory and what to do.
 */
export async function prepareDirectory(flag: string, outputDir: string): Promise<string> {
  const dir = resolve(outputDir);
  const missing: string[] = [];
  for (let p = dir; ; p = dirname(p)) {
    const st = await stat(p).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : e));
    if (st instanceof Error) throw new CliError(`${flag} ${outputDir}: cannot use ${p}: ${fsReason(st)}`);
    if (st) {
      if (!st.isDirectory())
        throw new CliError(`${flag} ${outputDir}: ${p} exists and is not a directory: choose another directory or remove the file`);
      break;
    }
    missing.unshift(p);
    if (dirname(p) === p) break;
  }
  for (const p of missing) {
    try {
      await mkdir(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST' && (await stat(p)).isDirectory()) continue;
      throw new CliError(`${flag} ${outputDir}: cannot create directory ${p}: ${fsReason(e)}; choose a directory you can write to`);
    }
  }
  return dir;
}

// ---------------------------------------------------------------------------------------------------------
// Connecting to a cluster.

export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
}

const defaultKubeconfig = () => join(process.env.HOME || homedir(), '.kube', 'config');

/**
 * The cluster to talk to, in the same order as kubectl: --kubeconfig, else KUBECONFIG / ~/.kube/config,
 * else the pod's service account. The last needs no kubeconfig support at all, so an operator in a pod
 * never loads the official client library (and its whole generated API).
 */
export async function loadCluster(flags: ClusterFlags): Promise<Credentials | KubeConfig> {
  if (!flags.kubeconfig && !flags.context && !process.env.KUBECONFIG && !existsSync(defaultKubeconfig()) && isInCluster()) {
    return inClusterCredentials();
  }
  return loadKubeConfig(flags);
}

/** --kubeconfig, else KUBECONFIG / ~/.kube/config, else the in-cluster ServiceAccount, as a kubeconfig. */
export async function loadKubeConfig(flags: ClusterFlags): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    if (flags.kubeconfig) {
      if (!existsSync(flags.kubeconfig)) throw new CliError(`kubeconfig file ${flags.kubeconfig} does not exist (check --kubeconfig)`);
      if (statSync(flags.kubeconfig).isDirectory()) {
        throw new CliError(`kubeconfig ${flags.kubeconfig} is a directory: pass the kubeconfig file itself (check --kubeconfig)`);
      }
      kc.loadFromFile(flags.kubeconfig);
    } else {
      const env = process.env.KUBECONFIG;
      const missing = env
        ?.split(':')
        .filter(Boolean)
        .filter((p) => !existsSync(p));
      if (env && missing?.length === env.split(':').filter(Boolean).length) {
        throw new CliError(`kubeconfig file ${missing.join(', ')} does not exist (check KUBECONFIG)`);
      }
      // With nothing to load, client-node falls back to http://localhost:8080, and the user would read
      // about a refused connection there instead of the actual problem.
      const home = defaultKubeconfig();
      if (!env && !isInCluster() && !existsSync(home)) {
        throw new CliError(
          `no kubeconfig found: KUBECONFIG is not set, ${home} does not exist and this is not a pod; ` +
            'pass --kubeconfig or set KUBECONFIG (for the dev cluster of "osc start": .osc/kubeconfig)',
        );
      }
      kc.loadFromDefault();
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    const which = flags.kubeconfig ?? process.env.KUBECONFIG ?? defaultKubeconfig();
    throw new CliError(
      `cannot load the kubeconfig ${which}: ${errorMessage(e).split('\n')[0]} (check --kubeconfig / KUBECONFIG: it must be a kubeconfig YAML file)`,
    );
  }
  if (flags.context) {
    if (!kc.getContexts().some((c) => c.name === flags.context))
      throw new CliError(`context "${flags.context}" not found in the kubeconfig`);
    kc.setCurrentContext(flags.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new CliError('the kubeconfig has no current cluster: set a current-context or pass --context');
  if (!URL.canParse(cluster.server) || !/^https?:$/.test(new URL(cluster.server).protocol)) {
    throw new CliError(
      `the kubeconfig's cluster "${cluster.name}" has server ${JSON.stringify(cluster.server)}, which is not an https:// URL; set it to the API server's address, like https://api.example.com:6443`,
    );
  }
  return kc;
}

/** The network-level reason a request failed: the system's error, or each address's when several were tried. */
export function networkReason(e: unknown, waitedMs = ANSWER_TIMEOUT_MS): string {
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError')) return `no answer within ${waitedMs / 1000}s`;
  const err = e as { message?: string; code?: string; errors?: { message?: string }[] } | undefined;
  if (err?.errors?.length) return err.errors.map((x) => x.message).join('; ');
  return err?.message || err?.code || errorMessage(e);
}

/** How long each of connect's checks waits for the API server's answer. */
const ANSWER_TIMEOUT_MS = 10_000;

/**
 * A client for the cluster, after checking that it answers and accepts our credentials, and (unless told
 * otherwise) that it serves the KataConfig API. Each failure becomes a message that says what to check.
 */
export async function connect(
  cluster: Credentials | KubeConfig,
  opts: { requireKataConfigAPI?: boolean; fieldManager?: string; answerTimeoutMs?: number } = {},
): Promise<KubeClient> {
  const client = new KubeClient(cluster, { fieldManager: opts.fieldManager ?? 'osc' });
  const server = client.server;
  const waitMs = opts.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  try {
    // Discovery needs an authenticated user (unlike /version), so it checks the credentials too.
    await client.request('GET', '/api', { signal: AbortSignal.timeout(waitMs) });
  } catch (e) {
    await client.close();
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
      throw new CliError(`the Kubernetes API at ${server} refused our credentials: ${e.message} (check --kubeconfig / KUBECONFIG)`);
    }
    if (e instanceof ApiError) throw new CliError(`the Kubernetes API at ${server} answered ${e.status}: ${e.message}`);
    const code = (x: unknown) => String((x as { code?: unknown } | undefined)?.code ?? '');
    if (code(e).startsWith('ERR_OSSL') || code((e as { cause?: unknown })?.cause).startsWith('ERR_OSSL')) {
      throw new CliError(
        `the kubeconfig's certificate or key for ${server} is unusable: ${networkReason(e)} (check --kubeconfig / KUBECONFIG)`,
      );
    }
    throw new CliError(`cannot reach the Kubernetes API at ${server}: ${networkReason(e, waitMs)} (check --kubeconfig / KUBECONFIG)`);
  }
  if (opts.requireKataConfigAPI === false) return client;
  let served: boolean;
  try {
    served = await hasKataConfigAPI(client, waitMs);
  } catch (e) {
    // The API server answered /api a moment ago: a failure now is the server's (overloaded, restarting),
    // not the kubeconfig's; said as such rather than as the bare error of the request.
    await client.close();
    const what = e instanceof ApiError ? `answered ${e.status}: ${e.message}` : `failed: ${networkReason(e, waitMs)}`;
    throw new CliError(
      `the Kubernetes API at ${server} answered, but its discovery of ${KATACONFIG_GROUP}/${KataConfigs.version} ${what}; check that the API server is healthy, then try again`,
    );
  }
  if (!served) {
    await client.close();
    throw new CliError(missingCrdMessage());
  }
  return client;
}

/** Whether the API server serves kataconfiguration.openshift.io/v1 kataconfigs (discovery, no CRD read rights needed). */
export async function hasKataConfigAPI(client: KubeClient, waitMs = ANSWER_TIMEOUT_MS): Promise<boolean> {
  try {
    const res = await client.request<{ resources?: { name: string }[] }>('GET', `/apis/${KATACONFIG_GROUP}/${KataConfigs.version}`, {
      signal: AbortSignal.timeout(waitMs),
    });
    return res.resources?.some((r) => r.name === KataConfigs.plural) ?? false;
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return false;
    throw e;
  }
}

/** Resolves on the first SIGINT/SIGTERM (a second one exits at once); the handlers go with `dispose`. */
export function onShutdownSignal(onFirst: (sig: NodeJS.Signals) => void): { dispose(): void } {
  let seen = false;
  const handler = (sig: NodeJS.Signals) => {
    if (seen) {
      process.stderr.write(`\nsecond ${sig}: exiting now\n`);
      process.exit(130);
    }
    seen = true;
    onFirst(sig);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    dispose: () => {
      process.removeListener('SIGINT', handler);
      process.removeListener('SIGTERM', handler);
    },
  };
}

export const write = (s: NodeJS.WritableStream, text: string): void => {
  s.write(text.endsWith('\n') ? text : `${text}\n`);
};
