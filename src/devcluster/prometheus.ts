import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { freePort, spawnSupervised, stopProcess } from './controlplane/supervise.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The pinned Prometheus server binary: $OSC_PROMETHEUS, else built once from its Go module by
 * tools/build-prometheus.sh (cached; its progress goes to stderr).
 */
export async function prometheusBinary(): Promise<string> {
  if (process.env.OSC_PROMETHEUS) return process.env.OSC_PROMETHEUS;
  return new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [join(repoRoot, 'tools', 'build-prometheus.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out.trim().split('\n').pop() ?? '') : reject(new Error(`tools/build-prometheus.sh exited with ${code}`)),
    );
  });
}

export interface PrometheusOptions {
  /** host:port addresses serving /metrics. */
  targets: string[];
  /** Where the TSDB lives; removed when Prometheus stops (a dev cluster is new on every run). */
  dataDir: string;
  scrapeIntervalSeconds?: number;
  /** Where Prometheus logs; default prometheus.log beside dataDir. */
  logFile?: string;
  log?: Logger;
}

/** Prometheus's scrape configuration for the dev cluster: the operator's metrics endpoint, by address. */
export function prometheusConfig(targets: string[], intervalSeconds: number): string {
  return [
    'global:',
    `  scrape_interval: ${intervalSeconds}s`,
    `  evaluation_interval: ${intervalSeconds}s`,
    'scrape_configs:',
    '  - job_name: osc-operator',
    '    static_configs:',
    `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
    '',
  ].join('\n');
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
    await writeFile(configFile, prometheusConfig(opts.targets, opts.scrapeIntervalSeconds ?? 2));
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
