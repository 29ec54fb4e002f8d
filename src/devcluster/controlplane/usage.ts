import { readFile } from 'node:fs/promises';

export interface ProcessUsage {
  /** Resident memory now and at its peak (VmHWM), MiB. */
  rssMiB: number;
  peakRssMiB: number;
  /** User + system CPU time since the process started, seconds. */
  cpuSeconds: number;
}

const CLOCK_TICKS = 100; // USER_HZ on Linux

/** A process's memory and CPU from /proc (Linux only); undefined once it is gone. */
export async function processUsage(pid: number): Promise<ProcessUsage | undefined> {
  try {
    const [status, stat] = await Promise.all([readFile(`/proc/${pid}/status`, 'utf8'), readFile(`/proc/${pid}/stat`, 'utf8')]);
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    // Fields after the command name (which may hold spaces) start at the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024, cpuSeconds: ticks / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** The pid of the process a watchdog shell supervises: its child that is not the watcher subshell. */
export async function supervisedPid(watchdogPid: number): Promise<number | undefined> {
  try {
    const children = (await readFile(`/proc/${watchdogPid}/task/${watchdogPid}/children`, 'utf8')).trim().split(/\s+/).map(Number);
    for (const pid of children) {
      const comm = (await readFile(`/proc/${pid}/comm`, 'utf8')).trim();
      if (comm !== 'sh') return pid;
    }
  } catch {
    // gone
  }
  return undefined;
}
