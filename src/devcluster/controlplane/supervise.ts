import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

/** Left in a cleanup directory by a stop that restarts the process on the same files (see spawnSupervised). */
export const KEEP_MARK = '.osc-keep';

/**
 * Runs `command` under a shell watchdog that holds our stdin pipe: when the pipe closes (we stopped it,
 * or this process died, even by SIGKILL) the watchdog sends SIGTERM, then SIGKILL after a grace period,
 * and removes `cleanupDir`. This is what guarantees that no control plane process outlives us. A stop
 * that means to start the process again on the same files (stopProcess with `keep`) leaves KEEP_MARK in
 * `cleanupDir` first: the watchdog then removes only the mark.
 *
 * The watchdog runs in a process group of its own, so a terminal's Ctrl-C reaches only us: we stop the
 * operator first (it releases its lease through a still-running API server), then the control plane.
 * Before, kube-apiserver took the terminal's SIGINT too and shut down under the operator, whose lease
 * release then waited for its timeout.
 */
export function spawnSupervised(command: string, args: string[], cleanupDir: string, logFile: string): ChildProcess {
  // The shell ignores TERM/INT/HUP only after forking the child (which keeps default handlers): a signal
  // sent to the watchdog's group must not kill the watchdog while the child hangs in a graceful shutdown.
  // Whatever happens, the child gets KILL 10s after the pipe closes.
  const script = [
    'exec 3<&0',
    '"$@" </dev/null >>"$OSC_LOG" 2>&1 & pid=$!',
    "trap '' TERM INT HUP",
    '( cat <&3 >/dev/null; kill -TERM $pid 2>/dev/null; sleep 10; kill -KILL $pid 2>/dev/null ) & watcher=$!',
    'exec 3<&-',
    'wait $pid; code=$?',
    'kill -KILL $watcher 2>/dev/null',
    `if [ -e "$OSC_CLEANUP/${KEEP_MARK}" ]; then rm -f "$OSC_CLEANUP/${KEEP_MARK}"; else rm -rf "$OSC_CLEANUP"; fi`,
    'exit $code',
  ].join('\n');
  return spawn('sh', ['-c', script, 'osc-supervise', command, ...args], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
    env: { ...process.env, OSC_LOG: logFile, OSC_CLEANUP: cleanupDir },
  });
}

export function isRunning(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

/**
 * Stops a supervised process: closing the pipe makes the watchdog terminate it gracefully. `crash` kills
 * it at once instead (no graceful shutdown: the harshest outage for its clients). `keep`, the process's
 * cleanup directory: its files stay for the next start (etcd's data across a restore).
 */
export async function stopProcess(p: ChildProcess, crash = false, keep?: string): Promise<void> {
  if (!isRunning(p)) return;
  if (keep) writeFileSync(join(keep, KEEP_MARK), '');
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  // The children of the watchdog shell are the supervised process and the watcher subshell.
  if (crash && p.pid) await new Promise<void>((resolve) => execFile('pkill', ['-KILL', '-P', String(p.pid)], () => resolve()));
  p.stdin?.end(); // the watchdog terminates the child and exits once it is gone
  await exited;
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
