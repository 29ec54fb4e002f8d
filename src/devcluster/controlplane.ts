import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeClient } from '../kube/client.ts';
import { type CustomResourceDefinition, CustomResourceDefinitions } from '../kube/resources.ts';
import type { KubeObject } from '../kube/types.ts';
import { createCA, createSigningKey, issueCert } from './certs.ts';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ControlPlaneBinaries {
  dir: string;
  etcd: string;
  kubeApiserver: string;
  kubectl: string;
}

/**
 * Finds (building on first use) the pinned etcd, kube-apiserver and kubectl. OSC_CONTROL_PLANE_DIR
 * points at prebuilt binaries instead.
 */
export async function controlPlaneBinaries(log?: Logger): Promise<ControlPlaneBinaries> {
  let dir = process.env.OSC_CONTROL_PLANE_DIR;
  if (!dir) {
    log?.info('locating the control plane binaries (the first run builds them from Go modules)');
    dir = await new Promise<string>((resolve, reject) => {
      const child = spawn('bash', [join(repoRoot, 'tools', 'build-control-plane.sh')], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 ? resolve(out.trim().split('\n').pop() ?? '') : reject(new Error(`tools/build-control-plane.sh exited with ${code}`)),
      );
    });
  }
  return { dir, etcd: join(dir, 'etcd'), kubeApiserver: join(dir, 'kube-apiserver'), kubectl: join(dir, 'kubectl') };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Runs `command` under a shell watchdog that holds our stdin pipe: when the pipe closes (we stopped it,
 * or this process died, even by SIGKILL) the watchdog sends SIGTERM, then SIGKILL after a grace period,
 * and removes `cleanupDir`. This is what guarantees that no etcd or kube-apiserver outlives us.
 */
export function spawnSupervised(command: string, args: string[], cleanupDir: string, logFile: string): ChildProcess {
  // The shell ignores TERM/INT/HUP only after forking the child (which keeps default handlers): a signal
  // sent to the whole process group (Ctrl-C, `timeout`, a test runner) must not kill the watchdog while
  // the child hangs in a graceful shutdown. Whatever happens, the child gets KILL 10s after the pipe closes.
  const script = [
    'exec 3<&0',
    '"$@" </dev/null >>"$OSC_LOG" 2>&1 & pid=$!',
    "trap '' TERM INT HUP",
    '( cat <&3 >/dev/null; kill -TERM $pid 2>/dev/null; sleep 10; kill -KILL $pid 2>/dev/null ) & watcher=$!',
    'exec 3<&-',
    'wait $pid; code=$?',
    'kill -KILL $watcher 2>/dev/null',
    'rm -rf "$OSC_CLEANUP"',
    'exit $code',
  ].join('\n');
  return spawn('sh', ['-c', script, 'osc-supervise', command, ...args], {
    stdio: ['pipe', 'ignore', 'ignore'],
    env: { ...process.env, OSC_LOG: logFile, OSC_CLEANUP: cleanupDir },
  });
}

export interface ControlPlaneOptions {
  log?: Logger;
  /** Keep the data directory somewhere known (e.g. for `osc dev`); a temporary one otherwise. */
  dataDir?: string;
  /** Extra kube-apiserver flags, e.g. --feature-gates. */
  apiserverArgs?: string[];
}

/** etcd + kube-apiserver on free loopback ports with freshly generated certificates. */
export class ControlPlane {
  readonly dataDir: string;
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  readonly client: KubeClient;
  readonly binaries: ControlPlaneBinaries;
  readonly apiserverUrl: string;
  readonly version: string;
  readonly caPem: string;
  private readonly procs: { etcd: ChildProcess; apiserver: ChildProcess };
  private readonly restartApiserver: () => ChildProcess;
  private readonly log: Logger | undefined;
  private stopped = false;
  private readonly onExit: () => void;

  private constructor(init: {
    dataDir: string;
    kubeconfigPath: string;
    kubeConfig: KubeConfig;
    binaries: ControlPlaneBinaries;
    apiserverUrl: string;
    version: string;
    caPem: string;
    etcd: ChildProcess;
    apiserver: ChildProcess;
    restartApiserver: () => ChildProcess;
    log: Logger | undefined;
  }) {
    this.dataDir = init.dataDir;
    this.kubeconfigPath = init.kubeconfigPath;
    this.kubeConfig = init.kubeConfig;
    this.client = new KubeClient(init.kubeConfig);
    this.binaries = init.binaries;
    this.apiserverUrl = init.apiserverUrl;
    this.version = init.version;
    this.caPem = init.caPem;
    this.procs = { etcd: init.etcd, apiserver: init.apiserver };
    this.restartApiserver = init.restartApiserver;
    this.log = init.log;
    // Closing our end of the watchdog pipes on exit is enough: the watchdogs do the rest.
    this.onExit = () => {
      for (const p of Object.values(this.procs)) p.stdin?.destroy();
    };
    process.once('exit', this.onExit);
  }

  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const log = opts.log;
    const started = performance.now();
    const binaries = await controlPlaneBinaries(log);
    const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'osc-control-plane-')));
    // A temporary data directory goes with etcd, even if we are killed; a given one keeps its files.
    const etcdCleanup = opts.dataDir ? join(dataDir, 'etcd') : dataDir;
    await mkdir(join(dataDir, 'pki'), { recursive: true });
    const pki = (f: string) => join(dataDir, 'pki', f);

    const ca = await createCA('osc-dev-ca');
    const serving = await issueCert(ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'],
      ipAddresses: ['127.0.0.1', '10.0.0.1'],
    });
    const admin = await issueCert(ca, { commonName: 'osc-admin', organizations: ['system:masters'], usage: 'client' });
    const sa = await createSigningKey();
    await Promise.all([
      writeFile(pki('ca.crt'), ca.certPem),
      writeFile(pki('ca.key'), ca.keyPem, { mode: 0o600 }),
      writeFile(pki('apiserver.crt'), serving.certPem),
      writeFile(pki('apiserver.key'), serving.keyPem, { mode: 0o600 }),
      writeFile(pki('sa.key'), sa.privatePem, { mode: 0o600 }),
      writeFile(pki('sa.pub'), sa.publicPem),
    ]);

    const [etcdClient, etcdPeer, securePort] = [await freePort(), await freePort(), await freePort()];
    const etcdDir = join(dataDir, 'etcd');
    const etcd = spawnSupervised(
      binaries.etcd,
      [
        '--name=osc',
        `--data-dir=${etcdDir}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=osc=http://127.0.0.1:${etcdPeer}`,
        '--unsafe-no-fsync', // a throwaway store: durability buys nothing and costs a lot on slow disks
        '--quota-backend-bytes=2147483648',
        '--log-level=warn',
      ],
      etcdCleanup,
      join(dataDir, 'etcd.log'),
    );

    const apiserverUrl = `https://127.0.0.1:${securePort}`;
    const apiserverArgs = [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${securePort}`,
      `--cert-dir=${join(dataDir, 'pki')}`,
      `--tls-cert-file=${pki('apiserver.crt')}`,
      `--tls-private-key-file=${pki('apiserver.key')}`,
      `--client-ca-file=${pki('ca.crt')}`,
      `--service-account-key-file=${pki('sa.pub')}`,
      `--service-account-signing-key-file=${pki('sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      '--api-audiences=https://kubernetes.default.svc.cluster.local',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--authorization-mode=RBAC',
      // No controller-manager runs here, so nothing would create the default ServiceAccounts that this
      // admission plugin insists on.
      '--disable-admission-plugins=ServiceAccount',
      '--allow-privileged=true',
      '--v=1',
      ...(opts.apiserverArgs ?? []),
    ];
    const startApiserver = () =>
      spawnSupervised(binaries.kubeApiserver, apiserverArgs, join(dataDir, 'apiserver-scratch'), join(dataDir, 'kube-apiserver.log'));
    const apiserver = startApiserver();

    const kubeconfigPath = join(dataDir, 'kubeconfig');
    const kubeconfigYaml = kubeconfigText(apiserverUrl, ca.certPem, admin.certPem, admin.keyPem);
    await writeFile(kubeconfigPath, kubeconfigYaml, { mode: 0o600 });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(kubeconfigYaml);

    const cp = new ControlPlane({
      dataDir,
      kubeconfigPath,
      kubeConfig,
      binaries,
      apiserverUrl,
      version: '',
      caPem: ca.certPem,
      etcd,
      apiserver,
      restartApiserver: startApiserver,
      log,
    });
    try {
      await cp.waitReady(120_000);
      const version = await cp.client.request<{ gitVersion: string }>('GET', '/version');
      (cp as { version: string }).version = version.gitVersion;
      log?.info(
        { kubernetes: version.gitVersion, apiserver: apiserverUrl, startupMs: Math.round(performance.now() - started) },
        'control plane ready',
      );
      return cp;
    } catch (e) {
      await cp.stop();
      throw e;
    }
  }

  /** Polls /readyz until it answers ok; the API server has no push for readiness. */
  async waitReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
      for (const [name, p] of Object.entries(this.procs)) {
        if (p.exitCode !== null)
          throw new Error(
            `${name} exited with ${p.exitCode}; see ${join(this.dataDir, `${name === 'apiserver' ? 'kube-apiserver' : name}.log`)}`,
          );
      }
      try {
        const body = await this.client.request<string>('GET', '/readyz', { signal: AbortSignal.timeout(5000) });
        if (body !== undefined) return;
      } catch (e) {
        last = e;
      }
      if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after ${timeoutMs}ms: ${String(last)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Stops kube-apiserver (etcd keeps the data) and starts it again on the same port. */
  async restartApiServer(downtimeMs = 0): Promise<void> {
    await stopProcess(this.procs.apiserver, true);
    if (downtimeMs) await new Promise((r) => setTimeout(r, downtimeMs));
    this.procs.apiserver = this.restartApiserver();
    await this.waitReady(120_000);
  }

  /**
   * Crashes kube-apiserver (SIGKILL, no graceful shutdown: the harshest outage for clients); etcd keeps
   * the data and startApiServer brings it back.
   */
  async stopApiServer(): Promise<void> {
    await stopProcess(this.procs.apiserver, true);
  }

  async startApiServer(): Promise<void> {
    if (this.procs.apiserver.exitCode === null && this.procs.apiserver.signalCode === null) return;
    this.procs.apiserver = this.restartApiserver();
    await this.waitReady(120_000);
  }

  /** Installs CRDs and waits until the API server serves them (Established). */
  async installCRDs(crds: KubeObject[]): Promise<void> {
    await installCRDs(this.client, crds);
  }

  /** Runs the pinned kubectl against this control plane. */
  async kubectl(
    args: string[],
    opts: { input?: string; kubeconfig?: string } = {},
  ): Promise<{ stdout: string; stderr: string; code: number }> {
    return runKubectl(this.binaries.kubectl, opts.kubeconfig ?? this.kubeconfigPath, args, opts.input);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    process.removeListener('exit', this.onExit);
    await stopProcess(this.procs.apiserver);
    await stopProcess(this.procs.etcd);
    await rm(this.dataDir, { recursive: true, force: true });
    this.log?.info('control plane stopped');
  }
}

export async function stopProcess(p: ChildProcess, crash = false): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  // The children of the watchdog shell are the supervised process and the watcher subshell.
  if (crash && p.pid) await new Promise<void>((resolve) => execFile('pkill', ['-KILL', '-P', String(p.pid)], () => resolve()));
  p.stdin?.end(); // the watchdog terminates the child and exits once it is gone
  await exited;
}

export async function installCRDs(client: KubeClient, crds: KubeObject[]): Promise<void> {
  for (const crd of crds) {
    const existing = await client.find(CustomResourceDefinitions, crd.metadata.name ?? '');
    if (existing) {
      await client.update(CustomResourceDefinitions, {
        ...(crd as CustomResourceDefinition),
        metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
      });
    } else {
      await client.create(CustomResourceDefinitions, crd as CustomResourceDefinition);
    }
  }
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const got = await client.get(CustomResourceDefinitions, crd.metadata.name ?? '');
      const established = got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      if (established) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not established after 60s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export function runKubectl(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    const child = execFile(
      kubectl,
      args,
      { env: { ...process.env, KUBECONFIG: kubeconfig }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ stdout, stderr, code });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export const execFileAsync = promisify(execFile);

export function kubeconfigText(server: string, caPem: string, certPem: string, keyPem: string, user = 'osc-admin'): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: osc-dev',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caPem)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    `    client-certificate-data: ${b64(certPem)}`,
    `    client-key-data: ${b64(keyPem)}`,
    'contexts:',
    '- name: osc-dev',
    '  context:',
    '    cluster: osc-dev',
    `    user: ${user}`,
    'current-context: osc-dev',
    '',
  ].join('\n');
}
