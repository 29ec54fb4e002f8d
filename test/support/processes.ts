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
