import { readdirSync, readFileSync } from 'node:fs';

/**
 * Command lines of running processes that mention `text` (a temporary directory, say), other than the
 * `flock` a test itself runs to play another build holding a lock.
 */
export function processesMentioning(text: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmd.includes(text) && !cmd.startsWith('flock ') && !cmd.includes('/flock ')) found.push(`${entry}: ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The living children of process `pid` (zombies, ended but not yet reaped, left out), with their command lines. */
export function childrenOf(pid: number): { pid: number; cmd: string }[] {
  const found: { pid: number; cmd: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses: read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== pid || state === 'Z') continue;
      found.push({ pid: Number(entry), cmd: readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ') });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
