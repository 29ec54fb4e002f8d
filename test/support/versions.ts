import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OscProcess } from './cli.ts';

/** This checkout: the version N of an upgrade test. */
export const THIS_TREE = join(import.meta.dirname, '..', '..');

/** The version this checkout says it is. */
export const thisVersion = (): string => (JSON.parse(readFileSync(join(THIS_TREE, 'package.json'), 'utf8')) as { version: string }).version;

/** The next patch version after `v` (0.1.0 -> 0.1.1). */
export function nextVersion(v: string): string {
  const [major, minor, patch] = v.split('.').map((x) => Number.parseInt(x, 10));
  return `${major}.${minor}.${(patch ?? 0) + 1}`;
}

/**
 * The same sources as another release: a copy of src/ and config/samples with package.json saying
 * `version` (so its default operator image is tagged v<version>), sharing this checkout's node_modules.
 * What differs between the two trees is exactly what a release changes by itself.
 */
export class VersionTree {
  readonly root: string;
  readonly version: string;
  private constructor(root: string, version: string) {
    this.root = root;
    this.version = version;
  }

  /**
   * `caaImage`: the release also moves the cloud-api-adaptor to this image (its default in src/api/names.ts),
   * as a release that picks up a new adaptor does.
   */
  static build(version: string, opts: { caaImage?: string } = {}): VersionTree {
    const root = mkdtempSync(join(tmpdir(), `osc-v${version}-`));
    cpSync(join(THIS_TREE, 'src'), join(root, 'src'), { recursive: true });
    if (opts.caaImage) {
      const names = join(root, 'src', 'api', 'names.ts');
      const text = readFileSync(names, 'utf8');
      const moved = text.replace(/^(\s*caa: )'[^']*',$/m, `$1'${opts.caaImage}',`);
      if (moved === text) throw new Error('the default cloud-api-adaptor image was not found in src/api/names.ts');
      writeFileSync(names, moved);
    }
    cpSync(join(THIS_TREE, 'config', 'samples'), join(root, 'config', 'samples'), { recursive: true });
    const pkg = JSON.parse(readFileSync(join(THIS_TREE, 'package.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(root, 'package.json'), `${JSON.stringify({ ...pkg, version }, null, 2)}\n`);
    symlinkSync(join(THIS_TREE, 'node_modules'), join(root, 'node_modules'), 'dir');
    return new VersionTree(root, version);
  }

  /** The operator image this version installs by default (src/api/release.ts). */
  get image(): string {
    return `quay.io/osc/osc-operator:v${this.version}`;
  }

  /** `osc ARGS` of this version, as a process; resolves with its exit code and output. */
  async run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const p = new OscProcess(args, {}, this.root);
    const code = await p.exited;
    return { code, stdout: p.stdout, stderr: p.stderr };
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
