// The one launcher behind `osc` and `kubectl-kata`.
//
// A source checkout runs its sources through Node's type stripping (Node >= 24); a dist/ left there by an
// old build would be stale. An installed package (under node_modules, where Node does not strip types) or
// an image without src/ runs the build in dist/ (npm run build).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export async function launch(name) {
  if (Number(process.versions.node.split('.')[0]) < 24) {
    process.stderr.write(`error: osc needs Node.js 24 or newer; this is ${process.version} (${process.execPath})\n`);
    process.exit(1);
  }
  const src = new URL('../src/cli/main.ts', import.meta.url);
  const dist = new URL('../dist/cli/main.js', import.meta.url);
  const installed = fileURLToPath(import.meta.url)
    .split(/[\\/]/)
    .includes('node_modules');
  const entry = existsSync(src) && !(installed && existsSync(dist)) ? src : dist;
  const { runAsProcess } = await import(entry.href);
  await runAsProcess(name);
}
