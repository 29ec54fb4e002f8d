/**
 * The operator under test: `osc run` in a process of its own, kept running the way a kubelet keeps a pod
 * running (started again a second after it exits), killed with SIGKILL on request. Its JSON log goes to a
 * file; the lines the chaos run counts (relists after 410 Gone, silent watches) are counted as they come.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export class OperatorProcess {
  private child: ChildProcess | undefined;
  private stopped = false;
  private readonly log: WriteStream;
  private partial = '';
  /** Exits we did not cause (a crash, or `osc run` refusing to start while the API server is down). */
  unexpectedExits = 0;
  starts = 0;
  /** How many times a process said its caches synced (it then serves admission and reconciles). */
  synced = 0;
  readonly counts = { relistsOnGone: 0, silentWatches: 0, errors: 0 };
  private exited: Promise<void> = Promise.resolve();

  private readonly args: string[];

  constructor(args: string[], logFile: string) {
    this.args = args;
    this.log = createWriteStream(logFile, { flags: 'a' });
  }

  start(): void {
    if (this.stopped) return;
    this.starts++;
    const child = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), 'run', ...this.args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.on('data', (d: Buffer) => this.onOutput(d));
    child.stderr?.on('data', (d: Buffer) => this.log.write(d));
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        resolve();
        if (this.child !== child || this.stopped) return;
        this.unexpectedExits++;
        this.child = undefined;
        setTimeout(() => this.start(), 1000).unref();
      }),
    );
  }

  private onOutput(d: Buffer): void {
    this.log.write(d);
    const lines = (this.partial + d.toString()).split('\n');
    this.partial = lines.pop() ?? '';
    for (const l of lines) {
      if (l.includes('watch expired (410 Gone)')) this.counts.relistsOnGone++;
      else if (l.includes('watch silent') || l.includes('watch outlived its timeout')) this.counts.silentWatches++;
      if (l.includes('"caches synced"')) this.synced++;
      if (l.includes('"level":"error"')) this.counts.errors++;
    }
  }

  /** SIGKILL, then (after downMs) a new process. */
  async kill(downMs: number): Promise<void> {
    const child = this.child;
    this.child = undefined; // not an unexpected exit
    child?.kill('SIGKILL');
    await this.exited;
    await new Promise((r) => setTimeout(r, downMs));
    this.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const child = this.child;
    this.child = undefined;
    child?.kill('SIGTERM');
    await this.exited;
    await new Promise<void>((r) => this.log.end(() => r()));
  }
}
