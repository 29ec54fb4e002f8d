/**
 * One operator replica under test: `osc run` in a process of its own, kept running the way a kubelet keeps
 * a pod's container running: started again after it exits, at once the first time and then with the
 * kubelet's crash-loop backoff (10 s, doubling to 5 minutes, forgotten after 10 minutes of running). Like
 * a container with a memory limit, it is SIGKILLed when its resident memory passes the limit (a watchdog
 * reads /proc). Its wall clock can be stepped (clock-offset.ts, preloaded, driven over IPC). Its JSON log goes
 * to a file; the lines the chaos run counts (relists after 410 Gone, silent watches, leadership) are
 * counted as they come.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const CLOCK_MODULE = join(import.meta.dirname, 'clock-offset.ts');

/** The kubelet's restart backoff for a container that keeps exiting. */
export const CRASH_BACKOFF = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };
/** The operator Deployment's memory limit (512Mi). */
export const MEMORY_LIMIT_BYTES = 512 * 1024 * 1024;
const WATCHDOG_MS = 250;

export interface OperatorProcessOptions {
  /** The pod name it runs as (POD_NAME: in its User-Agent, so the audit log tells replicas apart). */
  name: string;
  args: string[];
  logFile: string;
}

export class OperatorProcess {
  readonly name: string;
  private child: ChildProcess | undefined;
  private stopped = false;
  private readonly log: WriteStream;
  private partial = '';
  /** Exits we did not cause (a crash, a lost lease, `osc run` refusing to start while the API server is down). */
  unexpectedExits = 0;
  /** Kills by the memory watchdog. */
  oomKills = 0;
  starts = 0;
  /** How many times a process said its caches synced (it then serves admission and reconciles). */
  synced = 0;
  /** Whether the running process said it became leader (and has not exited since). */
  leading = false;
  readonly counts = { relistsOnGone: 0, silentWatches: 0, errors: 0, leaderships: 0, leadershipsLost: 0 };
  private exited: Promise<void> = Promise.resolve();
  private readonly args: string[];
  private memoryLimit = MEMORY_LIMIT_BYTES;
  private clockOffsetMs = 0;
  private startedAt = 0;
  private backoffMs = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  /** Peak resident memory seen, in bytes. */
  peakRss = 0;

  constructor(opts: OperatorProcessOptions) {
    this.name = opts.name;
    this.args = opts.args;
    this.log = createWriteStream(opts.logFile, { flags: 'a' });
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null;
  }

  start(): void {
    if (this.stopped) return;
    this.restartTimer = undefined;
    this.starts++;
    this.startedAt = performance.now();
    const child = spawn(process.execPath, ['--import', CLOCK_MODULE, join(root, 'src', 'cli', 'main.ts'), 'run', ...this.args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...process.env, POD_NAME: this.name, OSC_CHAOS_CLOCK_OFFSET_MS: String(this.clockOffsetMs) },
    });
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => this.onOutput(d));
    child.stderr?.on('data', (d: Buffer) => this.log.write(d));
    child.on('error', () => {});
    this.watchdog ??= setInterval(() => this.checkMemory(), WATCHDOG_MS).unref();
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        resolve();
        this.leading = false;
        // In the replica's log, on the true clock (its own lines are on its stepped one): why it ended.
        this.log.write(
          `${JSON.stringify({ harness: new Date().toISOString(), msg: 'replica exited', code, signal, asked: this.stopped || this.child !== child })}\n`,
        );
        if (this.child !== child || this.stopped) return;
        this.unexpectedExits++;
        this.child = undefined;
        this.restartLater();
      }),
    );
  }

  /** As the kubelet: at once after a first exit, then backing off while the container keeps exiting. */
  private restartLater(): void {
    const ran = performance.now() - this.startedAt;
    if (ran >= CRASH_BACKOFF.resetAfterMs) this.backoffMs = 0;
    const wait = this.backoffMs;
    this.backoffMs = Math.min(Math.max(CRASH_BACKOFF.initialMs, this.backoffMs * 2), CRASH_BACKOFF.maxMs);
    this.restartTimer = setTimeout(() => this.start(), Math.max(wait, 500));
    this.restartTimer.unref();
  }

  /**
   * Time passes as between faults in production: the kubelet forgets a container's crash-loop backoff once it
   * has run 10 minutes, so a replica waiting out a backoff starts now and its next exit restarts at once.
   */
  forgetBackoff(): void {
    this.backoffMs = 0;
    if (!this.restartTimer || this.stopped) return;
    clearTimeout(this.restartTimer);
    this.start();
  }

  private checkMemory(): void {
    const pid = this.child?.pid;
    if (!pid || !this.running) return;
    let rss = 0;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      rss = Number(m?.[1] ?? 0) * 1024;
    } catch {
      return;
    }
    this.peakRss = Math.max(this.peakRss, rss);
    if (rss > this.memoryLimit) {
      // The kernel's OOM killer in the container's cgroup: SIGKILL, then the kubelet's restart policy.
      this.oomKills++;
      this.child?.kill('SIGKILL');
    }
  }

  /** The memory limit from now on (a limit below the process's size gets it killed at the next check). */
  setMemoryLimit(bytes: number): void {
    this.memoryLimit = bytes;
  }

  /** Resident memory of the running process now (0 when none runs). */
  rss(): number {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child?.pid}/status`, 'utf8'));
      return Number(m?.[1] ?? 0) * 1024;
    } catch {
      return 0;
    }
  }

  /** Steps this replica's wall clock by `ms` (its host's clock: a restarted process keeps the offset). */
  stepClock(ms: number): void {
    this.clockOffsetMs += ms;
    if (this.running) this.child?.send({ clockOffsetMs: this.clockOffsetMs }, () => {});
  }

  get clockOffset(): number {
    return this.clockOffsetMs;
  }

  private onOutput(d: Buffer): void {
    this.log.write(d);
    const lines = (this.partial + d.toString()).split('\n');
    this.partial = lines.pop() ?? '';
    for (const l of lines) {
      if (l.includes('watch expired (410 Gone)')) this.counts.relistsOnGone++;
      else if (l.includes('watch silent') || l.includes('watch outlived its timeout')) this.counts.silentWatches++;
      if (l.includes('"caches synced"')) this.synced++;
      if (l.includes('"became leader"')) {
        this.counts.leaderships++;
        this.leading = true;
      }
      if (l.includes('leader election lost')) {
        this.counts.leadershipsLost++;
        this.leading = false;
      }
      if (l.includes('"level":"error"') || l.includes('"level":50')) this.counts.errors++;
    }
  }

  /** SIGKILL, then (after downMs) a new process. */
  async kill(downMs: number): Promise<void> {
    const child = this.child;
    this.child = undefined; // not an unexpected exit
    this.leading = false;
    child?.kill('SIGKILL');
    await this.exited;
    await new Promise((r) => setTimeout(r, downMs));
    if (!this.restartTimer) this.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.watchdog) clearInterval(this.watchdog);
    const child = this.child;
    this.child = undefined;
    child?.kill('SIGTERM');
    await this.exited;
    await new Promise<void>((r) => this.log.end(() => r()));
  }
}
