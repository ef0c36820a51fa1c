/**
 * Compiled programs: CUDA C → NVRTC → CUBIN for this device's arch, cached on disk by
 * sha256(source, options, arch, NVRTC version) and in memory per (program, specialisation). The
 * in-memory level keeps the launch path at a Map lookup; modules die with the context, so a reset
 * clears it.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Scalars } from '../device.js';
import type { CudaDriver } from './ffi/driver.js';
import type { Nvrtc } from './ffi/nvrtc.js';
import type { CudaArgDesc, CudaProgram } from './kernel-api.js';
import { defineLines, prelude } from './prelude.js';

/** Dynamic shared memory a function may take without opting in, and the attribute that raises it. */
const DEFAULT_DYNAMIC_SHARED_BYTES = 48 * 1024;
const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

export interface ProgramCacheStats {
  compiles: number;
  diskHits: number;
  memoryHits: number;
  compileMs: number;
}

export class ProgramCache {
  private readonly functions = new Map<CudaProgram, Map<string, number>>();
  private modules: number[] = [];
  private readonly dir: string | null;
  readonly stats: ProgramCacheStats = { compiles: 0, diskHits: 0, memoryHits: 0, compileMs: 0 };

  constructor(
    private readonly driver: CudaDriver,
    private readonly nvrtc: Nvrtc,
    readonly arch: string,
    cacheDir: string | null,
  ) {
    this.dir = cacheDir ? join(cacheDir, 'cuda-programs') : null;
  }

  /** The CUfunction for a program specialised for these arguments (compiling on first use). */
  function(program: CudaProgram, args: readonly CudaArgDesc[], scalars: Scalars): number {
    let byProgram = this.functions.get(program);
    if (!byProgram) {
      byProgram = new Map();
      this.functions.set(program, byProgram);
    }
    const dtypes = program.dtypes?.(args, scalars);
    const defines = program.defines?.(args, scalars);
    const spec = dtypes || defines ? specKey(dtypes, defines) : '';
    const hit = byProgram.get(spec);
    if (hit !== undefined) {
      this.stats.memoryHits++;
      return hit;
    }
    const usePrelude = program.prelude !== false;
    const source =
      (usePrelude ? prelude(dtypes ?? {}) : '') + (defines ? defineLines(defines) : '') + program.source;
    const fn = this.load(source, program.entry);
    const shared = program.maxDynamicSharedBytes ?? 0;
    if (shared > DEFAULT_DYNAMIC_SHARED_BYTES)
      this.driver.check(
        this.driver.api.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
        `cuFuncSetAttribute(${program.entry}, max dynamic shared ${shared})`,
      );
    byProgram.set(spec, fn);
    return fn;
  }

  private load(source: string, entry: string): number {
    const options = [`--gpu-architecture=${this.arch}`, '--std=c++17'];
    const key = createHash('sha256')
      .update(JSON.stringify([source, entry, options, this.arch, this.nvrtc.version]))
      .digest('hex');
    let image: { cubin: Uint8Array; lowered: string } | null = this.readDisk(key);
    if (image) this.stats.diskHits++;
    else {
      const t0 = performance.now();
      image = this.nvrtc.compile(source, `${entry}.cu`, entry, options);
      this.stats.compiles++;
      this.stats.compileMs += performance.now() - t0;
      this.writeDisk(key, image);
    }
    const d = this.driver;
    const mod = d.out1('cuModuleLoadData', (o) => d.api.cuModuleLoadData(o, image.cubin));
    this.modules.push(mod);
    const lowered = image.lowered;
    return d.out1(`cuModuleGetFunction(${entry})`, (o) => d.api.cuModuleGetFunction(o, mod, lowered));
  }

  private readDisk(key: string): { cubin: Uint8Array; lowered: string } | null {
    if (!this.dir) return null;
    try {
      const meta = JSON.parse(readFileSync(join(this.dir, `${key}.json`), 'utf8')) as { lowered?: unknown };
      if (typeof meta.lowered !== 'string') return null;
      return { cubin: new Uint8Array(readFileSync(join(this.dir, `${key}.cubin`))), lowered: meta.lowered };
    } catch {
      return null;
    }
  }

  private writeDisk(key: string, image: { cubin: Uint8Array; lowered: string }): void {
    if (!this.dir) return;
    try {
      mkdirSync(this.dir, { recursive: true });
      // cubin first, then the metadata that makes the entry visible: a reader never sees half an entry.
      const tmp = join(this.dir, `${key}.${process.pid}.tmp`);
      writeFileSync(tmp, image.cubin);
      renameSync(tmp, join(this.dir, `${key}.cubin`));
      writeFileSync(tmp, JSON.stringify({ lowered: image.lowered }));
      renameSync(tmp, join(this.dir, `${key}.json`));
    } catch {
      // A read-only cache directory only costs a recompile next time.
    }
  }

  /** Unloads every module (close) or forgets them (after a context reset, when they are gone already). */
  clear(unload: boolean): void {
    if (unload) for (const m of this.modules) this.driver.api.cuModuleUnload(m);
    this.modules = [];
    this.functions.clear();
  }
}

/** A cheap key for a specialisation (this runs on every launch; JSON.stringify costs more). */
function specKey(
  dtypes: Readonly<Record<string, string>> | undefined,
  defines: Readonly<Record<string, string | number>> | undefined,
): string {
  let key = '';
  if (dtypes) for (const k in dtypes) key += `${k}=${dtypes[k]};`;
  key += '|';
  if (defines) for (const k in defines) key += `${k}=${defines[k]};`;
  return key;
}
