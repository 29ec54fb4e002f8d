import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/main.ts';
import { quickLeaderElection } from '../../src/runtime/leasetimings.ts';

/** `osc ARGS` in this process, with its output captured: what a user would see, and the exit code. */
export async function runOsc(args: string[], name?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d) => (stdout += String(d)));
  err.on('data', (d) => (stderr += String(d)));
  const code = await main(args, { io: { stdout: out, stderr: err }, name });
  return { code, stdout, stderr };
}

const root = join(import.meta.dirname, '..', '..');

/**
 * `osc ARGS` as a process of its own (e.g. `osc run`), with its output collected; `tree` runs another copy
 * of the sources (e.g. the same tree as another version, see test/support/versions.ts).
 */
export class OscProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  constructor(args: string[], env: Record<string, string> = {}, tree = root) {
    this.child = spawn(process.execPath, [join(tree, 'src', 'cli', 'main.ts'), ...args], {
      cwd: tree,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.on('data', (d) => (this.stdout += String(d)));
    this.child.stderr?.on('data', (d) => (this.stderr += String(d)));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}

/**
 * `osc run`'s lease flags for client-go's quick timings (a dead leader's lease taken within 17 s): tests
 * that kill and partition leaders, where the production defaults would have them wait over two minutes.
 */
export const quickLeaseFlags = (): string[] => [
  ...['--leader-elect-lease-duration', `${quickLeaderElection.leaseDurationMs}ms`],
  ...['--leader-elect-renew-deadline', `${quickLeaderElection.renewDeadlineMs}ms`],
  ...['--leader-elect-retry-period', `${quickLeaderElection.retryPeriodMs}ms`],
];
