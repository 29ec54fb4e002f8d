import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A failed start, with the end of etcd's and the API server's logs (their files may be gone with the data). */
export class StartError extends Error {
  readonly portTaken: boolean;
  constructor(cause: unknown, logs: Record<string, string>) {
    const why = cause instanceof Error ? cause.message : String(cause);
    const failed = Object.entries(logs).find(([c]) => why.startsWith(`${c} exited`));
    super(failed ? `${why}\n--- last lines of ${failed[0]}'s log ---\n${failed[1]}` : why, { cause });
    this.portTaken = Object.values(logs).some((t) => /address already in use/.test(t));
  }
}

/** The last lines of etcd's and the API server's logs. */
export async function logTails(logDir: string): Promise<Record<string, string>> {
  const tails: Record<string, string> = {};
  for (const c of ['etcd', 'kube-apiserver']) {
    const text = await readFile(join(logDir, `${c}.log`), 'utf8').catch(() => '');
    tails[c] = text.trimEnd().split('\n').slice(-15).join('\n');
  }
  return tails;
}
