/**
 * The Tandem side of the safetensors cross-check with Python (bench/torch/safetensors_check.py):
 * `write PATH` saves tensors whose values both sides compute from the same formulas; `verify PATH`
 * loads a file Python wrote and compares every tensor bit for bit. Prints one JSON line; exit 1 on a
 * mismatch.
 *
 *   npm run build
 *   node dist/bench/safetensors-check.js write /tmp/tandem.safetensors
 *   python3 bench/torch/safetensors_check.py --read /tmp/tandem.safetensors --write /tmp/python.safetensors
 *   node dist/bench/safetensors-check.js verify /tmp/python.safetensors
 */
import { f32ToBf16, f32ToF16 } from '../src/core/dtype.js';
import { type TensorToSave, loadSafetensors, saveSafetensors } from '../src/nn/safetensors.js';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The same formulas as expected_tensors() in safetensors_check.py; every value is exact in its dtype. */
export function expectedTensors(): Record<string, TensorToSave> {
  return {
    f32: { dtype: 'F32', shape: [3, 5], data: Float32Array.from(range(15), (i) => i * 0.25 - 1.75) },
    f64: { dtype: 'F64', shape: [7], data: Float64Array.from(range(7), (i) => (i - 3) / 3) },
    f16: { dtype: 'F16', shape: [2, 3], data: Uint16Array.from(range(6), (i) => f32ToF16((i - 2.5) * 0.5)) },
    bf16: { dtype: 'BF16', shape: [5], data: Uint16Array.from([1, -2, 0.5, 3, -0.125], (v) => f32ToBf16(v)) },
    i64: { dtype: 'I64', shape: [2, 2], data: BigInt64Array.from([-(2n ** 62n), -1n, 0n, 2n ** 40n + 3n]) },
    i32: { dtype: 'I32', shape: [3], data: Int32Array.from([-5, 0, 2147483647]) },
    u8: { dtype: 'U8', shape: [9], data: Uint8Array.from(range(9), (i) => (i * 29) % 256) },
    scalar: { dtype: 'F32', shape: [], data: Float32Array.of(1.5) },
    empty: { dtype: 'F32', shape: [0, 4], data: new Float32Array(0) },
    'layers.10.w': { dtype: 'F32', shape: [2], data: Float32Array.of(10, 10.5) },
    'layers.9.w': { dtype: 'F32', shape: [2], data: Float32Array.of(9, 9.5) },
  };
}

/** One key only: the Rust writer keeps metadata in a HashMap, so with several keys its order varies. */
export const EXPECTED_METADATA = { format: 'pt' };

async function main(): Promise<void> {
  const [mode, path] = process.argv.slice(2);
  if ((mode !== 'write' && mode !== 'verify') || path === undefined) {
    console.error('usage: safetensors-check.js write|verify PATH');
    process.exit(2);
  }
  const expected = expectedTensors();
  if (mode === 'write') {
    const { bytes } = await saveSafetensors(path, expected, { metadata: EXPECTED_METADATA });
    console.log(
      JSON.stringify({
        bench: 'safetensors-check',
        mode,
        path,
        bytes,
        tensors: Object.keys(expected).length,
      }),
    );
    return;
  }
  const loaded = await loadSafetensors(path);
  const problems: string[] = [];
  for (const [name, want] of Object.entries(expected)) {
    const got = loaded.tensors.get(name);
    const wantBytes = Buffer.from(want.data.buffer, want.data.byteOffset, want.data.byteLength);
    if (got === undefined) problems.push(`${name}: missing`);
    else if (got.dtype !== want.dtype) problems.push(`${name}: dtype ${got.dtype}, want ${want.dtype}`);
    else if (JSON.stringify(got.shape) !== JSON.stringify(want.shape))
      problems.push(`${name}: shape [${got.shape}]`);
    else if (!wantBytes.equals(Buffer.from(got.bytes))) problems.push(`${name}: bytes differ`);
  }
  if (loaded.tensors.size !== Object.keys(expected).length)
    problems.push(`${loaded.tensors.size} tensors in the file`);
  if (JSON.stringify(loaded.metadata) !== JSON.stringify(EXPECTED_METADATA)) {
    problems.push(`metadata ${JSON.stringify(loaded.metadata)}`);
  }
  console.log(
    JSON.stringify({ bench: 'safetensors-check', mode, path, ok: problems.length === 0, problems }),
  );
  if (problems.length > 0) process.exit(1);
}

await main();
