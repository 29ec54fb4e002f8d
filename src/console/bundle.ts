import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kataConfigSpecSchema } from '../api/kataconfig.ts';

const webDir = join(dirname(fileURLToPath(import.meta.url)), 'web');

export interface Bundle {
  js: Buffer;
  css: Buffer;
}

/**
 * Bundles the front end (src/console/web) with esbuild, in memory, when the console starts: it takes well
 * under a second, so no generated file is committed or left to go stale. esbuild is a development
 * dependency, like everything the front end is made of: the operator's image carries none of it.
 */
export async function buildBundle(): Promise<Bundle> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error('the console is built with esbuild, a development dependency: run "npm install" in the osc checkout');
  }
  const result = await esbuild.build({
    entryPoints: [join(webDir, 'main.tsx')],
    bundle: true,
    minify: true,
    write: false,
    format: 'esm',
    target: ['es2022'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: 'out',
    legalComments: 'none',
    logLevel: 'silent',
    // The Create form checks what the CRD checks, from the CRD's own schema (src/console/web/validate.ts).
    define: { OSC_KATACONFIG_SPEC_SCHEMA: JSON.stringify(kataConfigSpecSchema.openapi) },
  });
  const file = (ext: string) => Buffer.from(result.outputFiles.find((f) => f.path.endsWith(ext))?.contents ?? new Uint8Array());
  return { js: file('.js'), css: file('.css') };
}
