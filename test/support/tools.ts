/** The project's cached tool builds (tools/build-*.sh), run from tests. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

/** Debian installs daemons (dockerd) in /usr/sbin, which not every non-login PATH has. */
export const PATH = [...new Set([...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/local/sbin', '/usr/sbin', '/sbin'])].join(
  ':',
);

/**
 * Runs one of the cached build scripts (tools/build-*.sh): its progress goes to our stderr (a cold build
 * takes minutes), the last line of its stdout is what it built.
 */
export function cachedBuild(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, PATH } });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out.trim().split('\n').pop() ?? '') : reject(new Error(`${script} failed with exit code ${code}`)),
    );
  });
}
