/**
 * The layering of docs/architecture.md, checked on the real import graph of src/: no import runs from
 * a lower layer to a higher one, no files import each other in a cycle, and nothing outside the
 * hardware layer loads koffi or webgpu. The checker itself is tested on small graphs first, so a
 * layering test that always passes would be seen.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  LAYERS,
  importCycles,
  importGraph,
  nativeImportsOutsideDevices,
  upwardImports,
  type ImportGraph,
} from './import-graph.js';

const graphOf = (edges: Record<string, string[]>): ImportGraph => new Map(Object.entries(edges));

describe('import graph checker', () => {
  it('finds a cycle of two files and one of three, and no cycle in a chain', () => {
    const g = graphOf({
      'src/a/x.ts': ['src/a/y.ts'],
      'src/a/y.ts': ['src/a/x.ts'],
      'src/b/p.ts': ['src/b/q.ts'],
      'src/b/q.ts': ['src/b/r.ts'],
      'src/b/r.ts': ['src/b/p.ts', 'src/b/s.ts'],
      'src/b/s.ts': [],
    });
    const cycles = importCycles(g).map((c) => c.join(' '));
    assert.deepEqual(cycles.sort(), ['src/a/x.ts src/a/y.ts', 'src/b/p.ts src/b/q.ts src/b/r.ts']);
    assert.deepEqual(importCycles(graphOf({ 'src/a/x.ts': ['src/a/y.ts'], 'src/a/y.ts': [] })), []);
  });

  it('flags an import from devices up to kernels, not one from kernels down to devices', () => {
    const g = graphOf({
      'src/devices/cpu/worker.ts': ['src/kernels/register.ts'],
      'src/kernels/register.ts': ['src/devices/device.ts'],
      'src/devices/device.ts': ['src/core/dtype.ts'],
      'src/core/dtype.ts': [],
      'src/index.ts': ['src/service/service.ts'],
      'src/service/service.ts': [],
    });
    assert.deepEqual(upwardImports(g), [
      'src/devices/cpu/worker.ts -> src/kernels/register.ts (devices imports kernels)',
    ]);
  });

  it('flags a folder missing from the layer table', () => {
    const g = graphOf({ 'src/newthing/a.ts': ['src/core/dtype.ts'], 'src/core/dtype.ts': [] });
    assert.deepEqual(upwardImports(g), ['src/newthing/a.ts: its folder is not in the layer table']);
  });
});

describe('src/ layering (docs/architecture.md)', () => {
  const graph = importGraph(process.cwd());

  it('reads the whole source tree', () => {
    assert.ok(graph.size > 200, `only ${graph.size} files read`);
    assert.ok((graph.get('src/runtime/runtime.ts') ?? []).includes('src/core/errors.ts'));
  });

  it(`has no upward import (layers bottom-up: ${LAYERS.join(' < ')})`, () => {
    assert.deepEqual(upwardImports(graph), []);
  });

  it('has no import cycle between files', () => {
    assert.deepEqual(importCycles(graph), []);
  });

  it('loads koffi and webgpu only inside src/devices/', () => {
    assert.deepEqual(nativeImportsOutsideDevices(process.cwd()), []);
  });
});

describe('examples/', () => {
  it('import Tandem only through the package entries, never a file under src/', () => {
    const dir = join(process.cwd(), 'examples');
    const deep = readdirSync(dir)
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /from '(\.\.\/)+src\//.test(readFileSync(join(dir, f), 'utf8')));
    assert.deepEqual(deep, []);
  });
});
