/**
 * A real browser for the console's tests: Debian's chromium driven by playwright-core. A machine without
 * it fails the browser tests with what to install, unless OSC_SKIP_BROWSER_TESTS=1 says to skip them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';

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
