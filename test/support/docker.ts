/**
 * A Docker Engine of the tests' own: dockerd (Debian's docker.io) with its own socket, data and exec
 * directories in a temporary directory, never the system's. It runs under a watchdog that holds our stdin
 * pipe: when the pipe closes (we stopped it, or this process died, even by SIGKILL) dockerd gets SIGTERM
 * (it stops its containers and its containerd), then SIGKILL, and the directory is unmounted and removed.
 *
 * No image registry is reachable here, so images start from a base made locally: tools/build-base-image.sh
 * (mmdebstrap + the project's Node 24, cached under ~/.cache/osc/images) imported with `docker import`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cachedBuild, PATH } from './tools.ts';
import { waitFor } from './wait.ts';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');

/** The documented way to skip the image tests (e.g. on a machine without root or Docker). */
export const SKIP_IMAGES_ENV = 'OSC_SKIP_IMAGE_TESTS';
export const skipImages = (): string | false =>
  process.env[SKIP_IMAGES_ENV] === '1' ? `${SKIP_IMAGES_ENV}=1: the image tests are skipped` : false;

/** The image tests' local base: what the Dockerfile's NODE_IMAGE build argument points at. */
export const LOCAL_BASE_IMAGE = 'osc.local/node:24-bookworm';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export class DockerEngine {
  readonly dir: string;
  readonly socket: string;
  private readonly proc: ChildProcess;
  private constructor(dir: string, socket: string, proc: ChildProcess) {
    this.dir = dir;
    this.socket = socket;
    this.proc = proc;
  }

  static async start(): Promise<DockerEngine> {
    if (process.getuid?.() !== 0) throw new Error(`the Docker daemon needs root: run as root or set ${SKIP_IMAGES_ENV}=1`);
    for (const tool of ['dockerd', 'docker']) {
      await exec('sh', ['-c', `command -v ${tool}`], { env: { ...process.env, PATH } }).catch(() => {
        throw new Error(`${tool} not found: apt-get install -y docker.io (or set ${SKIP_IMAGES_ENV}=1)`);
      });
    }
    // Short: a unix socket path must stay under 108 bytes.
    const dir = mkdtempSync('/tmp/osc-docker-');
    const socket = join(dir, 'docker.sock');
    const script = [
      'exec 3<&0',
      '"$@" </dev/null >>"$D/dockerd.log" 2>&1 & pid=$!',
      "trap '' TERM INT HUP",
      '( cat <&3 >/dev/null; kill -TERM $pid 2>/dev/null; sleep 20; kill -KILL $pid 2>/dev/null ) & watcher=$!',
      'exec 3<&-',
      'wait $pid; code=$?',
      'kill -KILL $watcher 2>/dev/null',
      // Whatever dockerd left mounted under its directories (deepest first), then the directory itself.
      'grep -o " $D/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done',
      'rm -rf "$D"',
      'exit $code',
    ].join('\n');
    const args = [
      `--data-root=${join(dir, 'data')}`,
      `--exec-root=${join(dir, 'exec')}`,
      `--pidfile=${join(dir, 'dockerd.pid')}`,
      `--host=unix://${socket}`,
      // Containers use the host's network (they reach the loopback API server); no bridge, no iptables.
      '--bridge=none',
      '--iptables=false',
      '--ip6tables=false',
      '--ip-masq=false',
    ];
    const proc = spawn('sh', ['-c', script, 'osc-dockerd', 'dockerd', ...args], {
      stdio: ['pipe', 'ignore', 'ignore'],
      env: { ...process.env, PATH, D: dir },
    });
    const engine = new DockerEngine(dir, socket, proc);
    process.once('exit', () => proc.stdin?.destroy());
    await waitFor(async () => (await engine.docker(['version', '--format', '{{.Server.Version}}'])).code === 0 || proc.exitCode !== null, {
      timeoutMs: 60_000,
      intervalMs: 500,
      message: 'dockerd to answer on its socket',
    });
    if (proc.exitCode !== null) throw new Error(`dockerd exited: ${engine.log()}`);
    return engine;
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'dockerd.log'), 'utf8').slice(-4000);
    } catch {
      return '';
    }
  }

  /** The docker CLI against this daemon (the classic builder: BuildKit would fetch its frontend from a registry). */
  docker(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
    return new Promise((resolve) => {
      const child = spawn('docker', args, {
        env: { ...process.env, PATH, DOCKER_HOST: `unix://${this.socket}`, DOCKER_BUILDKIT: '0', DOCKER_CONFIG: join(this.dir, 'config') },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += String(d)));
      child.stderr.on('data', (d) => (stderr += String(d)));
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 15 * 60_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? 1, stdout, stderr });
      });
      child.stdin.end(opts.input ?? '');
    });
  }

  /** Fails with the command's output when it fails. */
  async must(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
    const r = await this.docker(args, opts);
    if (r.code !== 0) throw new Error(`docker ${args.join(' ')} failed (${r.code}):\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
    return r.stdout;
  }

  /** Image size in MiB, as `docker image inspect` says. */
  async imageSizeMiB(image: string): Promise<number> {
    const bytes = Number((await this.must(['image', 'inspect', '--format', '{{.Size}}', image])).trim());
    return Math.round(bytes / 2 ** 20);
  }

  /** Stops dockerd (and so its containers and containerd); the watchdog removes the directory. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.stdin?.end();
    await exited;
  }
}

/** Makes (once, cached) and imports the local base image; answers its name. */
export async function importLocalBase(engine: DockerEngine): Promise<{ image: string; tarball: string }> {
  const tarball = await cachedBuild(join(root, 'tools', 'build-base-image.sh'));
  await engine.must([
    'import',
    '--change',
    'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    // Node trusts only its own CA list unless told: the system store includes the machine's own CAs.
    '--change',
    'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt',
    '--change',
    'CMD ["node"]',
    tarball,
    LOCAL_BASE_IMAGE,
  ]);
  return { image: LOCAL_BASE_IMAGE, tarball };
}
