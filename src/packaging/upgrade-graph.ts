/**
 * The bundle's place in OLM's upgrade graph. A CSV `replaces` the one released just before it (OLM upgrades
 * a subscription one edge at a time), and says with `olm.skipRange` that it may replace any earlier release
 * directly (`>=<first> <this>`), so that a cluster several releases behind, or one whose catalog lost an
 * intermediate bundle, upgrades in one step.
 */

/**
 * The versions released before this one, oldest first. The release step adds the version it publishes
 * here once the bundle is in the catalog (the next version's bundle then replaces it).
 */
export const RELEASED_VERSIONS: readonly string[] = [];

export interface UpgradeGraph {
  /** The CSV name this one replaces (`<package>.v<previous>`). */
  replaces?: string;
  /** The `olm.skipRange` annotation. */
  skipRange?: string;
}

const SEMVER = /^(\d+)\.(\d+)\.(\d+)$/;

function parts(v: string, what: string): [number, number, number] {
  const m = SEMVER.exec(v);
  if (!m) throw new Error(`${what} "${v}" is not a release version (MAJOR.MINOR.PATCH)`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Negative when a is older than b, positive when newer, 0 when the same. */
export function compareVersions(a: string, b: string): number {
  const x = parts(a, 'version');
  const y = parts(b, 'version');
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/**
 * The graph edges of `version`'s bundle given the releases before it. Nothing for the first release.
 * Throws when `version` is not newer than every release (a bundle must move the graph forward).
 */
export function upgradeGraph(pkg: string, version: string, released: readonly string[] = RELEASED_VERSIONS): UpgradeGraph {
  parts(version, 'the bundle version');
  const sorted = [...released].sort(compareVersions);
  const newest = sorted.at(-1);
  if (!newest) return {};
  if (compareVersions(version, newest) <= 0)
    throw new Error(`the bundle version ${version} is not newer than the released ${newest}: raise "version" in package.json`);
  return { replaces: `${pkg}.v${newest}`, skipRange: `>=${sorted[0]} <${version}` };
}
