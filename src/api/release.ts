import { readFileSync } from 'node:fs';

/** osc's version, from the package it ships in. */
export function packageVersion(): string {
  // src/api and dist/api are both two levels below the package root.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/** The operator image of this version, where no other is named. */
export const defaultImage = (): string => `quay.io/osc/osc-operator:v${packageVersion()}`;
