/**
 * Build step (`npm run build:wasm`, after tsc): assembles the generated GEMM WAT with wabt into
 * gemm.wasm next to the compiled loader (dist/src/devices/cpu/wasm/), plus the .wat for reading.
 * Tuning: `node dist/src/devices/cpu/wasm/build.js --mr 2 --nr 16 --kc 256 --mc 128 --nc 512 --unroll 1`.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import wabtInit from 'wabt';
import { wasmApi } from './wasm-api.js';
import { GEMM_WAT_DEFAULTS, type GemmWatOptions, gemmWat } from './gemm-wat.js';

function optionsFromArgs(argv: readonly string[]): GemmWatOptions {
  const o: Record<string, number> = { ...GEMM_WAT_DEFAULTS };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i]!.replace(/^--/, '');
    const value = Number(argv[i + 1]);
    if (!(key in o) || !Number.isInteger(value) || value <= 0)
      throw new Error(`bad option ${argv[i]} ${argv[i + 1]}`);
    o[key] = value;
  }
  return o as unknown as GemmWatOptions;
}

export async function buildGemmWasm(options: GemmWatOptions, outFile: URL): Promise<number> {
  const wabt = await wabtInit();
  const text = gemmWat(options);
  const mod = wabt.parseWat('gemm.wat', text, { simd: true, threads: true });
  try {
    const { buffer } = mod.toBinary({});
    // wabt's validate() ignores the feature flags (rejects shared memory); V8 is the validator that matters.
    new wasmApi.Module(buffer);
    writeFileSync(outFile, buffer);
    writeFileSync(new URL(outFile.href.replace(/\.wasm$/, '.wat')), text);
    return buffer.length;
  } finally {
    mod.destroy();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const options = optionsFromArgs(process.argv.slice(2));
  const out = new URL('./gemm.wasm', import.meta.url);
  const bytes = await buildGemmWasm(options, out);
  console.log(`wrote ${fileURLToPath(out)} (${bytes} bytes, ${JSON.stringify(options)})`);
}
