/**
 * The import graph of src/ as TypeScript's own pre-processor reads it (static imports, `import type`,
 * re-exports and `import('…')` with a literal path), resolved to files. Used by the layering test to
 * find upward imports between layers and file cycles; small enough that no tool (madge) is needed.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** file (relative to the root, with '/') → files it imports. */
export type ImportGraph = Map<string, string[]>;

/**
 * The layers bottom-up, as docs/architecture.md states them; a file may import its own layer and
 * those with a lower rank. `index.ts` at the top of src/ is the package entry and may import any.
 */
export const LAYERS: readonly string[] = [
  'core',
  'devices',
  'memory',
  'kernels',
  'obs',
  'runtime',
  'workloads',
  'nn',
  'onnx',
  'service',
  'agent',
  'cli',
];

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) tsFiles(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** Reads every .ts file under `root/src` and resolves its relative imports ('./x.js' → x.ts). */
export function importGraph(root: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of tsFiles(join(root, 'src'))) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps: string[] = [];
    for (const imp of info.importedFiles) {
      if (!imp.fileName.startsWith('.')) continue;
      const target = resolve(dirname(file), imp.fileName).replace(/\.js$/, '.ts');
      if (existsSync(target)) deps.push(relative(root, target).split('\\').join('/'));
    }
    graph.set(relative(root, file).split('\\').join('/'), deps);
  }
  return graph;
}

/** The layer of a file under src/ ('index' for the package entry files at the top). */
export function layerOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1]! : 'index';
}

/** Imports from a lower layer to a higher one (or to a folder the table does not know). */
export function upwardImports(graph: ImportGraph, layers: readonly string[] = LAYERS): string[] {
  const rank = (l: string): number => (l === 'index' ? layers.length : layers.indexOf(l));
  const bad: string[] = [];
  for (const [from, deps] of graph)
    for (const to of deps) {
      const a = rank(layerOf(from));
      const b = rank(layerOf(to));
      if (a < 0) bad.push(`${from}: its folder is not in the layer table`);
      else if (b < 0 || b > a) bad.push(`${from} -> ${to} (${layerOf(from)} imports ${layerOf(to)})`);
    }
  return [...new Set(bad)];
}

/** Strongly connected components with more than one file (Tarjan), each sorted: the import cycles. */
export function importCycles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  // Iterative, so a long chain of files cannot overflow the call stack.
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { node: string; i: number }[] = [{ node: start, i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length) {
      const top = work[work.length - 1]!;
      const deps = graph.get(top.node) ?? [];
      if (top.i < deps.length) {
        const w = deps[top.i++]!;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, i: 0 });
        } else if (onStack.has(w)) low.set(top.node, Math.min(low.get(top.node)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const scc: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          scc.push(w);
        } while (w !== top.node);
        if (scc.length > 1) cycles.push(scc.sort());
      }
    }
  }
  return cycles;
}

/** Files outside src/devices/ that import koffi or webgpu (only the hardware layer may). */
export function nativeImportsOutsideDevices(root: string): string[] {
  const bad: string[] = [];
  for (const file of tsFiles(join(root, 'src'))) {
    const rel = relative(root, file).split('\\').join('/');
    if (rel.startsWith('src/devices/')) continue;
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const imp of info.importedFiles)
      if (/^(koffi|webgpu)(\/|$)/.test(imp.fileName)) bad.push(`${rel} imports ${imp.fileName}`);
  }
  return bad;
}
