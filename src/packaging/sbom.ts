/**
 * A CycloneDX 1.5 software bill of materials of the operator image's npm packages, made from the lock file:
 * the packages `npm ci --omit=dev` installs, each with its exact version, package URL, the lock's SHA-512
 * integrity hash and its license, and who depends on whom. Deterministic (no timestamp; the serial number
 * is derived from the content), so the same lock file gives the same document, byte for byte.
 */
import { createHash } from 'node:crypto';

interface LockPackage {
  name?: string;
  version?: string;
  integrity?: string;
  license?: string;
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

export interface LockFile {
  name?: string;
  version?: string;
  lockfileVersion?: number;
  packages?: Record<string, LockPackage>;
}

/** `node_modules/@scope/name/node_modules/x` → `x`; `node_modules/@scope/name` → `@scope/name`. */
const nameAt = (path: string) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);

/** The package URL of an npm package (the `@` of a scope percent-encoded, as the purl spec asks). */
export const npmPurl = (name: string, version: string): string => `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;

/** Where Node's resolution finds `dep` for the package at `from`: its own node_modules, then each parent's. */
function resolve(packages: Record<string, LockPackage>, from: string, dep: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${dep}`;
    if (packages[candidate]) return candidate;
    if (!base) return undefined;
    const up = base.lastIndexOf('/node_modules/');
    base = up < 0 ? '' : base.slice(0, up);
  }
}

export interface SbomOptions {
  /** What the image runs the packages with, e.g. Node's version (`process.versions.node`). */
  runtime?: { name: string; version: string };
}

export function cycloneDx(lock: LockFile, opts: SbomOptions = {}): Record<string, unknown> {
  if ((lock.lockfileVersion ?? 0) < 2) throw new Error('the lock file must be lockfileVersion 2 or later (npm 7+)');
  const packages = lock.packages ?? {};
  const root = packages[''] ?? {};
  const name = lock.name ?? root.name ?? 'unknown';
  const version = lock.version ?? root.version ?? '0.0.0';
  const rootRef = npmPurl(name, version);
  const installed = Object.entries(packages)
    .filter(([path, p]) => path.startsWith('node_modules/') && !p.dev && p.version)
    .sort(([a], [b]) => a.localeCompare(b));
  const refOf = (path: string) => npmPurl(nameAt(path), packages[path]?.version ?? '');
  const dependsOn = (path: string, p: LockPackage) =>
    [
      ...new Set(
        Object.keys({ ...p.dependencies, ...p.optionalDependencies })
          .map((d) => resolve(packages, path, d))
          .filter((d): d is string => !!d && !packages[d]?.dev)
          .map(refOf),
      ),
    ].sort();

  const components = installed.map(([path, p]) => {
    const full = nameAt(path);
    const scope = full.startsWith('@') ? full.slice(0, full.indexOf('/')) : undefined;
    const sha512 = p.integrity?.match(/sha512-([A-Za-z0-9+/=]+)/)?.[1];
    return {
      type: 'library',
      'bom-ref': refOf(path),
      ...(scope ? { group: scope } : {}),
      name: scope ? full.slice(scope.length + 1) : full,
      version: p.version,
      purl: refOf(path),
      ...(sha512 ? { hashes: [{ alg: 'SHA-512', content: Buffer.from(sha512, 'base64').toString('hex') }] } : {}),
      ...(p.license ? { licenses: [/^[\w.+-]+$/.test(p.license) ? { license: { id: p.license } } : { expression: p.license }] } : {}),
    };
  });
  const unique = [...new Map(components.map((c) => [c['bom-ref'], c])).values()];
  const dependencies = [
    { ref: rootRef, dependsOn: dependsOn('', root) },
    ...[...new Map(installed.map(([path, p]) => [refOf(path), { ref: refOf(path), dependsOn: dependsOn(path, p) }])).values()],
  ];
  const body = {
    metadata: {
      component: { type: 'application', 'bom-ref': rootRef, name, version, purl: rootRef },
      ...(opts.runtime ? { properties: [{ name: 'osc:runtime', value: `${opts.runtime.name}@${opts.runtime.version}` }] } : {}),
    },
    components: unique,
    dependencies,
  };
  const hash = createHash('sha256').update(JSON.stringify(body)).digest('hex');
  const uuid = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-8${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  return { bomFormat: 'CycloneDX', specVersion: '1.5', serialNumber: `urn:uuid:${uuid}`, version: 1, ...body };
}
