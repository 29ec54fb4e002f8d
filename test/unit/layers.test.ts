/**
 * The layers of src/ hold (docs/architecture.md, "Layers"): every import, type-only and dynamic ones
 * included, goes to the importer's own layer or a lower one, and no chain of imports comes back to where
 * it started. Read from the sources with TypeScript's parser, so a new file is checked without being listed.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CliError, loadDevClusterCommand } from '../../src/cli/common.ts';
import { importsOf, reachable, readImportGraph } from '../support/imports.ts';

/**
 * Each layer and its rank: a module may import its own layer and lower ranks only. The API is the
 * bottom; the tools around the operator (installer, must-gather, console) know the API, never the
 * controllers; the dev cluster and the CLI, which assemble everything for a developer, are the top, so no
 * product code can reach them.
 */
const LAYERS: Record<string, number> = {
  api: 0,
  kube: 1,
  runtime: 2,
  peerpods: 2,
  platform: 3,
  webhooks: 3,
  install: 4,
  mustgather: 4,
  console: 4,
  packaging: 5,
  controllers: 5,
  'operator.ts': 6,
  devcluster: 7,
  cli: 8,
};

const MAX_SOURCE_LINES = 500;

/** The console's front end runs in a browser: it may read the API's types and texts, and nothing else. */
const WEB = 'console/web';

/** The layer of a path relative to src/: its first segment, but the console's front end on its own. */
export function layerOf(rel: string): string {
  if (rel === WEB || rel.startsWith(`${WEB}/`)) return WEB;
  return rel.split('/')[0] ?? rel;
}

/** The imports that go up a layer, or out of src/, in words. */
export function upwardImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  for (const [from, targets] of graph) {
    const fromLayer = layerOf(from);
    for (const to of targets) {
      const toLayer = layerOf(to);
      if (to.startsWith('..')) found.push(`${from} imports ${to}, outside src/`);
      else if (fromLayer === toLayer) continue;
      else if (fromLayer === WEB) {
        if (toLayer !== 'api') found.push(`${from} imports ${to}: the console's front end may import only src/api`);
      } else if (toLayer === WEB) found.push(`${from} imports ${to}: the front end is bundled for the browser, not imported`);
      else {
        const a = LAYERS[fromLayer];
        const b = LAYERS[toLayer];
        if (a === undefined || b === undefined) found.push(`${from} imports ${to}: add the folder to the layers (docs/architecture.md)`);
        else if (b >= a) found.push(`${from} imports ${to}: ${fromLayer} may not import ${toLayer}, a layer at or above its own`);
      }
    }
  }
  return found;
}

/** The import cycles (strongly connected components of more than one file, or a file importing itself). */
export function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string | undefined;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return cycles;
}

describe('the layers of src/', () => {
  const graph = readImportGraph();

  test('the graph is read: every folder of src/ is a known layer, and imports are found', () => {
    assert.ok(graph.size > 100, `only ${graph.size} source files found`);
    for (const file of graph.keys()) {
      const layer = layerOf(file);
      assert.ok(layer === WEB || layer in LAYERS, `${file} is in no layer: add its folder to LAYERS and to docs/architecture.md`);
    }
    assert.ok(graph.get('operator.ts')?.includes('platform/index.ts'), 'the operator imports the platform registry');
  });

  test('no module imports a layer above its own', () => {
    assert.deepEqual(upwardImports(graph), []);
  });

  test('no import cycle, type-only imports included', () => {
    assert.deepEqual(importCycles(graph), []);
  });

  // A module past this many lines usually holds two ideas: it is split where they part (docs/architecture.md, Layers).
  test(`no source file is over ${MAX_SOURCE_LINES} lines`, () => {
    const long = [...graph.keys()]
      .map((file) => ({ file, lines: readFileSync(join('src', file), 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_SOURCE_LINES)
      .map((f) => `src/${f.file}: ${f.lines} lines`);
    assert.deepEqual(long, []);
  });

  test('the checks catch what they are for', () => {
    const sample = new Map<string, string[]>([
      ['webhooks/certificates.ts', ['devcluster/certs.ts']],
      ['mustgather/collect.ts', ['cli/render.ts']],
      ['api/kataconfig.ts', ['kube/client.ts']],
      ['install/rbac.ts', ['controllers/monitor/desired.ts']],
      ['console/web/main.tsx', ['api/kataconfig.ts', 'kube/types.ts']],
      ['cli/main.ts', ['devcluster/devcluster.ts', 'api/names.ts']],
    ]);
    assert.deepEqual(upwardImports(sample), [
      'webhooks/certificates.ts imports devcluster/certs.ts: webhooks may not import devcluster, a layer at or above its own',
      'mustgather/collect.ts imports cli/render.ts: mustgather may not import cli, a layer at or above its own',
      'api/kataconfig.ts imports kube/client.ts: api may not import kube, a layer at or above its own',
      'install/rbac.ts imports controllers/monitor/desired.ts: install may not import controllers, a layer at or above its own',
      "console/web/main.tsx imports kube/types.ts: the console's front end may import only src/api",
    ]);
    const cyclic = new Map<string, string[]>([
      ['platform/index.ts', ['platform/openshift/platform.ts']],
      ['platform/openshift/platform.ts', ['platform/index.ts']],
      ['api/names.ts', []],
    ]);
    assert.deepEqual(importCycles(cyclic), [['platform/index.ts', 'platform/openshift/platform.ts']]);
  });

  test('type-only, re-exported and dynamic imports are all read', () => {
    const text = [
      "import type { A } from './a.ts';",
      "export { B } from '../b.ts';",
      "const c = await import('./c.ts');",
      "let d: import('./d.ts').D;",
      "import 'node:fs';",
    ].join('\n');
    assert.deepEqual(importsOf('x.ts', text), ['./a.ts', '../b.ts', './c.ts', './d.ts']);
  });
});

describe('osc run needs no dev cluster (the operator image leaves src/devcluster out)', () => {
  test('loading the CLI, then the run command and everything it may import, never reaches src/devcluster', () => {
    // What `osc <anything>` loads before choosing a command, then all that `osc run` may load as it runs.
    const loadedFirst = reachable(readImportGraph(['static']), 'cli/main.ts');
    const loadedByRun = reachable(readImportGraph(['static', 'dynamic']), 'cli/commands/run.ts');
    assert.ok(loadedByRun.has('operator.ts') && loadedFirst.has('cli/program.ts'), 'the graph follows the CLI into the operator');
    const devcluster = [...loadedFirst, ...loadedByRun].filter((f) => layerOf(f) === 'devcluster');
    assert.deepEqual([...new Set(devcluster)], []);
  });

  test('where the dev cluster is left out, osc start and osc dev say so instead of failing to load a module', async () => {
    // A command module whose dev cluster import is missing, as dist/cli/commands/start.js is in the image.
    const dir = mkdtempSync(join(tmpdir(), 'osc-no-devcluster-'));
    try {
      mkdirSync(join(dir, 'commands'));
      writeFileSync(join(dir, 'commands', 'start.mjs'), "export { DevCluster } from '../devcluster/devcluster.mjs';\n");
      const load = () => import(pathToFileURL(join(dir, 'commands', 'start.mjs')).href);
      await assert.rejects(loadDevClusterCommand(load), (err: unknown) => {
        assert.ok(err instanceof CliError);
        assert.match(err.message, /no dev cluster \(the operator image leaves it out\).*source checkout/);
        return true;
      });
      // Any other failure to load is not disguised as a missing dev cluster.
      writeFileSync(join(dir, 'commands', 'other.mjs'), "export { x } from './missing.mjs';\n");
      await assert.rejects(
        loadDevClusterCommand(() => import(pathToFileURL(join(dir, 'commands', 'other.mjs')).href)),
        (err: unknown) => !(err instanceof CliError),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
