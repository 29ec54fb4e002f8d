/**
 * A real browser for the console's tests: Debian's chromium driven by playwright-core. A machine without
 * it fails the browser tests with what to install, unless OSC_SKIP_BROWSER_TESTS=1 says to skip them.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { waitFor } from './wait.ts';

export const SKIP_BROWSER = process.env.OSC_SKIP_BROWSER_TESTS === '1';

export function findChromium(): string | undefined {
  if (process.env.OSC_CHROMIUM) return process.env.OSC_CHROMIUM;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      const p = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
      if (p) return p;
    } catch {
      // not on the PATH
    }
  }
  return undefined;
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = findChromium();
  if (!executablePath) {
    throw new Error(
      'the console browser tests need Chromium: install the Debian package "chromium" (apt-get install -y chromium), ' +
        'point OSC_CHROMIUM at a Chromium binary, or set OSC_SKIP_BROWSER_TESTS=1 to skip them',
    );
  }
  const { chromium } = await import('playwright-core');
  // --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Where the browser tests keep their screenshots (gitignored): test-artifacts/<suite>/. */
export function artifactsDir(suite: string): string {
  const dir = join(import.meta.dirname, '..', '..', 'test-artifacts', suite);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  return dir;
}

export interface OscStart {
  proc: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  consoleUrl: string;
  kubeconfig: string;
  /** Ctrl-C, and wait for it to exit. */
  stop(): Promise<void>;
}

/** `osc start ARGS` (what `npm start` runs) in its own process, up to its banner with the console's URL. */
export async function startOsc(args: string[], home: string): Promise<OscStart> {
  const root = join(import.meta.dirname, '..', '..');
  const proc = spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), 'start', ...args], {
    cwd: root,
    env: { ...process.env, OSC_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d) => (out += String(d)));
  proc.stderr?.on('data', (d) => (out += String(d)));
  const exited = new Promise((r) => proc.once('exit', r));
  await waitFor(() => out.includes('Press Ctrl-C to stop') || proc.exitCode !== null, {
    timeoutMs: 600_000,
    message: 'osc start to be up',
  });
  if (proc.exitCode !== null) throw new Error(`osc start exited with ${proc.exitCode}:\n${out}`);
  const consoleUrl = /^Web console: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m.exec(out)?.[1] ?? '';
  if (!consoleUrl) throw new Error(`osc start did not print the console's URL:\n${out}`);
  return {
    proc,
    output: () => out,
    consoleUrl,
    kubeconfig: join(home, 'kubeconfig'),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
      await exited;
    },
  };
}
