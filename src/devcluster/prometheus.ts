import type { ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { METRICS_READER_ROLE } from '../api/names.ts';
import type { KubeClient } from '../kube/client.ts';
import { ClusterRoleBindings, ClusterRoles, ServiceAccounts } from '../kube/resources.ts';
import { runBuildScript } from './controlplane/binaries.ts';
import { freePort, spawnSupervised, stopProcess } from './controlplane/supervise.ts';

/**
 * The pinned Prometheus server binary: $OSC_PROMETHEUS, else built once from its Go module by
 * tools/build-prometheus.sh (cached; its progress goes to stderr).
 */
export async function prometheusBinary(): Promise<string> {
  if (process.env.OSC_PROMETHEUS) return process.env.OSC_PROMETHEUS;
  return runBuildScript('build-prometheus.sh');
}

export interface PrometheusOptions {
  /** host:port addresses serving /metrics. */
  targets: string[];
  /** For targets served over HTTPS: the CA that signed their certificate and a bearer token to send. */
  https?: ScrapeCredentials;
  /** Where the TSDB lives; removed when Prometheus stops (a dev cluster is new on every run). */
  dataDir: string;
  scrapeIntervalSeconds?: number;
  /** Where Prometheus logs; default prometheus.log beside dataDir. */
  logFile?: string;
  log?: Logger;
}

export interface ScrapeCredentials {
  caPem: string;
  token: string;
}

/**
 * Prometheus's scrape configuration for the dev cluster: the operator's metrics endpoint, by address;
 * over HTTPS (`files` given) with a ServiceAccount token and the CA to verify the operator's certificate.
 */
export function prometheusConfig(targets: string[], intervalSeconds: number, files?: { caFile: string; tokenFile: string }): string {
  return [
    'global:',
    `  scrape_interval: ${intervalSeconds}s`,
    `  evaluation_interval: ${intervalSeconds}s`,
    'scrape_configs:',
    '  - job_name: osc-operator',
    ...(files
      ? [
          '    scheme: https',
          '    authorization:',
          `      credentials_file: ${JSON.stringify(files.tokenFile)}`,
          '    tls_config:',
          `      ca_file: ${JSON.stringify(files.caFile)}`,
        ]
      : []),
    '    static_configs:',
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
    '',
  ].join('\n');
}

export const DEV_PROMETHEUS_SERVICE_ACCOUNT = 'osc-dev-prometheus';

/**
 * What the dev cluster's Prometheus scrapes with, as a real one would: a ServiceAccount of its own, bound
 * to the osc-metrics-reader ClusterRole (get on /metrics), and a token for it from the TokenRequest API
 * (valid `hours`; Prometheus re-reads the file at each scrape).
 */
export async function metricsScraperToken(client: KubeClient, namespace: string, hours = 24 * 7): Promise<string> {
  const labels = { 'app.kubernetes.io/name': 'osc', 'app.kubernetes.io/component': 'dev-prometheus' };
  await client.apply(ClusterRoles, {
    metadata: { name: METRICS_READER_ROLE, labels },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  } as never);
  await client.apply(ServiceAccounts, { metadata: { name: DEV_PROMETHEUS_SERVICE_ACCOUNT, namespace, labels } });
  await client.apply(ClusterRoleBindings, {
    metadata: { name: DEV_PROMETHEUS_SERVICE_ACCOUNT, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: METRICS_READER_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: DEV_PROMETHEUS_SERVICE_ACCOUNT, namespace }],
  } as never);
  const r = await client.request<{ status?: { token?: string } }>(
    'POST',
    `${client.path(ServiceAccounts, namespace, DEV_PROMETHEUS_SERVICE_ACCOUNT)}/token`,
    { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: hours * 3600 } } },
  );
  if (!r.status?.token) throw new Error(`the API server issued no token for serviceaccount ${namespace}/${DEV_PROMETHEUS_SERVICE_ACCOUNT}`);
  return r.status.token;
}

/** A Prometheus server on a free loopback port scraping the operator, under the same watchdog as etcd. */
export class DevPrometheus {
  readonly url: string;
  private readonly proc: ChildProcess;

  private constructor(url: string, proc: ChildProcess) {
    this.url = url;
    this.proc = proc;
  }

  static async start(opts: PrometheusOptions): Promise<DevPrometheus> {
    const binary = await prometheusBinary();
    await rm(opts.dataDir, { recursive: true, force: true });
    await mkdir(join(opts.dataDir, 'tsdb'), { recursive: true });
    const configFile = join(opts.dataDir, 'prometheus.yml');
    let files: { caFile: string; tokenFile: string } | undefined;
    if (opts.https) {
      files = { caFile: join(opts.dataDir, 'metrics-ca.crt'), tokenFile: join(opts.dataDir, 'token') };
      await writeFile(files.caFile, opts.https.caPem);
      await writeFile(files.tokenFile, opts.https.token, { mode: 0o600 });
    }
    await writeFile(configFile, prometheusConfig(opts.targets, opts.scrapeIntervalSeconds ?? 2, files));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const logFile = opts.logFile ?? join(dirname(opts.dataDir), 'prometheus.log');
    await mkdir(dirname(logFile), { recursive: true });
    const proc = spawnSupervised(
      binary,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(opts.dataDir, 'tsdb')}`,
        '--storage.tsdb.retention.time=1d',
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      opts.dataDir,
      logFile,
    );
    const p = new DevPrometheus(url, proc);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`prometheus exited with ${proc.exitCode}; see ${logFile}`);
      try {
        if ((await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) })).ok) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        await p.stop();
        throw new Error(`prometheus did not become ready within 60s at ${url}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    opts.log?.info({ url, targets: opts.targets }, 'prometheus ready');
    return p;
  }

  async stop(): Promise<void> {
    await stopProcess(this.proc);
  }
}
