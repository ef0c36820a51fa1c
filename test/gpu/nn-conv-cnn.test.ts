/**
 * The Fashion-MNIST CNN's layers on CUDA at a real batch (1→32→64 channels, 28×28, kernel 3, padding
 * 1, 2×2 max-pool), forward and backward, against the float64 references: the shapes the training
 * step runs, beyond the small conformance cases. Skips with the reason when there is no GPU.
 */
import assert from 'node:assert/strict';
import { epsilon } from '../../src/core/dtype.js';
import { describe, it } from 'node:test';
import type { DType } from '../../src/core/dtype.js';
import type { ConformanceCase } from '../../src/kernels/conformance-cases.js';
import { cudaDevice, runCudaCase } from './cuda-harness.js';

const { device, reason } = await cudaDevice();
if (!device) console.log(`# skip nn-conv CNN layers on CUDA: ${reason}`);

const B = 16;

function layerCases(dtype: DType): ConformanceCase[] {
  const tol = (terms: number) => ({ rtol: 2 * epsilon(dtype), atol: 4 * terms * epsilon('f32') });
  const out: ConformanceCase[] = [];
  for (const [c, o, hw] of [
    [1, 32, 28],
    [32, 64, 14],
  ] as const) {
    const x = { shape: [B, c, hw, hw], dtype };
    const w = { shape: [o, c, 3, 3], dtype };
    const y = { shape: [B, o, hw, hw], dtype };
    const b = { shape: [o], dtype };
    out.push({
      name: `conv2d ${dtype} ${c}→${o} ${hw}x${hw}`,
      op: 'conv2d',
      args: { x, w, b, y },
      scalars: { padding: 1 },
      ...tol(c * 9 + 1),
    });
    out.push({
      name: `conv2d_backward ${dtype} ${c}→${o} ${hw}x${hw} accumulate`,
      op: 'conv2d_backward',
      args: { dy: y, x, w, dx: x, dw: w, db: b },
      scalars: { padding: 1, accumulate: true },
      ...tol(B * hw * hw + 1),
    });
    const pooled = { shape: [B, o, hw / 2, hw / 2], dtype };
    out.push({
      name: `pool2d max ${dtype} ${o}x${hw}x${hw}`,
      op: 'pool2d',
      args: { x: y, y: pooled },
      scalars: { op: 'max', kernel: 2 },
      rtol: 0,
      atol: 0,
    });
    out.push({
      name: `pool2d_backward max ${dtype} ${o}x${hw}x${hw}`,
      op: 'pool2d_backward',
      args: { x: y, dy: pooled, dx: y },
      scalars: { op: 'max', kernel: 2 },
      rtol: 0,
      atol: 0,
    });
  }
  return out;
}

void describe('Fashion-MNIST CNN layers on CUDA', { skip: device ? false : reason }, () => {
  for (const dtype of ['f32', 'bf16'] as const) {
    for (const c of layerCases(dtype)) {
      void it(c.name, async () => {
        assert.deepEqual(await runCudaCase(device!, c), []);
      });
    }
  }
});
