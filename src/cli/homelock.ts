/**
 * One `osc start` / `osc dev` per home directory. Everything a run keeps there (the kubeconfig users point
 * kubectl at, osc.log, Prometheus's data) belongs to the cluster of that run: a second run in the same home
 * would truncate the first's log, repoint its kubeconfig at a new cluster and, on Ctrl-C, delete it. So a
 * run holds `<home>/osc.lock` for its whole life, and takes it before it touches anything else there.
 *
 * The lock names its holder by pid and by the process's start time: a run killed with SIGKILL leaves its lock
 * behind, and its pid may since have gone to another program; either way the lock is stale and taken over.
 */
import { readFileSync, rmSync } from 'node:fs';
import { link, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError, fsReason } from './common.ts';

export const HOME_LOCK_FILE = 'osc.lock';

/** What the lock file holds. */
export interface LockHolder {
  pid: number;
  /** The process's start time as the kernel counts it (clock ticks after boot); null where /proc is absent. */
  startTime: number | null;
  /** The command that holds it, e.g. "osc start". */
  command: string;
  /** When it took the lock (ISO 8601). */
  since: string;
}

export interface HomeLock {
  readonly path: string;
  /** A stale holder this run took the lock over from, if any. */
  readonly tookOverFrom?: LockHolder;
  release(): Promise<void>;
}

/** A process's start time from /proc/<pid>/stat (field 22), or null where that cannot be read. */
export function processStartTime(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}

/** Whether the holder still runs: its pid exists and, where known, started when the lock says. */
export function holderIsRunning(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false; // ESRCH: no such process
  }
  if (holder.startTime === null) return true;
  const now = processStartTime(holder.pid);
  // Unreadable now but recorded then: the process went away between the two checks.
  return now === holder.startTime;
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const h = JSON.parse(text) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || !Number.isInteger(h.pid) || h.pid <= 0) return undefined;
    return {
      pid: h.pid,
      startTime: typeof h.startTime === 'number' ? h.startTime : null,
      command: String(h.command ?? 'osc'),
      since: String(h.since ?? ''),
    };
  } catch {
    return undefined;
  }
}

const isCode = (e: unknown, code: string) => (e as NodeJS.ErrnoException | undefined)?.code === code;

/**
 * Takes the home's lock, or throws a CliError naming the process that holds it and how to run a second
 * cluster (`secondHomeHint`, e.g. "npm start -- --home .osc-2"). A stale lock is taken over.
 */
export async function lockHome(home: string, opts: { command: string; secondHomeHint: string }): Promise<HomeLock> {
  const path = join(home, HOME_LOCK_FILE);
  const mine: LockHolder = {
    pid: process.pid,
    startTime: processStartTime(process.pid),
    command: opts.command,
    since: new Date().toISOString(),
  };
  const text = `${JSON.stringify(mine)}\n`;
  // Written aside and linked into place: link() fails if the lock exists, and a reader never sees it half written.
  const draft = `${path}.${process.pid}.draft`;
  await writeFile(draft, text, { mode: 0o644 });
  let tookOverFrom: LockHolder | undefined;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await link(draft, path);
        break;
      } catch (e) {
        if (!isCode(e, 'EEXIST')) throw new CliError(`cannot create the lock ${path}: ${fsReason(e)}`);
        if (attempt >= 10) throw new CliError(`cannot take the lock ${path}: other runs keep taking it; try again`);
      }
      const current = await readFile(path, 'utf8').catch((e) => (isCode(e, 'ENOENT') ? undefined : Promise.reject(e)));
      if (current === undefined) continue; // released meanwhile
      const holder = parseHolder(current);
      if (holder && holderIsRunning(holder)) {
        const since = holder.since ? `, since ${holder.since.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}` : '';
        throw new CliError(
          `${home} is in use by another ${holder.command} (pid ${holder.pid}${since}): its cluster's kubeconfig and log are there. ` +
            `Stop that one first (Ctrl-C in its terminal, or kill ${holder.pid}), or run a second cluster in a home of its own: ${opts.secondHomeHint}`,
        );
      }
      // Stale. Moved aside rather than deleted, so that of two runs taking it over at once only one wins: the
      // other finds the lock gone, or finds the winner's lock aside and puts it back.
      const aside = `${path}.${process.pid}.stale`;
      try {
        await rename(path, aside);
      } catch (e) {
        if (isCode(e, 'ENOENT')) continue;
        throw e;
      }
      const moved = await readFile(aside, 'utf8');
      if (moved === current) tookOverFrom = holder ?? { pid: 0, startTime: null, command: 'an unreadable lock', since: '' };
      else await link(aside, path).catch(() => undefined);
      await rm(aside, { force: true });
    }
  } finally {
    await rm(draft, { force: true });
  }

  // A run that ends through process.exit (a second Ctrl-C) never reaches release(); the lock goes with it
  // all the same. SIGKILL leaves it behind, stale, for the next run to take over.
  const releaseAtExit = () => {
    try {
      if (readFileSync(path, 'utf8') === text) rmSync(path, { force: true });
    } catch {
      // already gone
    }
  };
  process.once('exit', releaseAtExit);
  return {
    path,
    tookOverFrom,
    release: async () => {
      process.removeListener('exit', releaseAtExit);
      releaseAtExit();
    },
  };
}
