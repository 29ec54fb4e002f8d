/**
 * The import graph of src/, read with TypeScript's parser: every relative import, type-only, re-exported
 * and dynamic ones included. For the tests of what loads what.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const SRC = resolve(import.meta.dirname, '../../src');

/** How a module is imported: `type` imports are erased when types are stripped, `dynamic` ones load when they run. */
export type ImportKind = 'static' | 'type' | 'dynamic';

/** Every relative import of one source file, with its kind (`export … from` counts as an import). */
export function importsWithKind(fileName: string, text: string): { spec: string; kind: ImportKind }[] {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found: { spec: string; kind: ImportKind }[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      found.push({ spec: n.moduleSpecifier.text, kind: n.importClause?.isTypeOnly ? 'type' : 'static' });
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      found.push({ spec: n.moduleSpecifier.text, kind: n.isTypeOnly ? 'type' : 'static' });
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = n.arguments;
      if (arg && ts.isStringLiteralLike(arg)) found.push({ spec: arg.text, kind: 'dynamic' });
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      found.push({ spec: n.argument.literal.text, kind: 'type' });
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found.filter((i) => i.spec.startsWith('.'));
}

/** Every relative import of one source file (static, `export … from`, `import()`, `import('…')` types). */
export const importsOf = (fileName: string, text: string): string[] => importsWithKind(fileName, text).map((i) => i.spec);

/**
 * The import graph of src/: file (relative to src/) to the files it imports, of the kinds asked for (all by
 * default). Non-source imports (CSS) are left out.
 */
export function readImportGraph(kinds: readonly ImportKind[] = ['static', 'type', 'dynamic']): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) {
        const targets = importsWithKind(p, readFileSync(p, 'utf8'))
          .filter((i) => kinds.includes(i.kind))
          .map((i) => relative(SRC, resolve(dirname(p), i.spec)))
          .filter((t) => /\.tsx?$/.test(t));
        graph.set(relative(SRC, p), [...new Set(targets)]);
      }
    }
  };
  walk(SRC);
  return graph;
}

/** The files reachable from `from` in a graph (relative to src/), `from` included. */
export function reachable(graph: ReadonlyMap<string, readonly string[]>, from: string): Set<string> {
  const seen = new Set<string>([from]);
  const todo = [from];
  for (let file = todo.pop(); file !== undefined; file = todo.pop()) {
    for (const target of graph.get(file) ?? []) {
      if (seen.has(target)) continue;
      seen.add(target);
      todo.push(target);
    }
  }
  return seen;
}
