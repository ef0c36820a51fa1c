/**
 * The Fashion-MNIST CNN's conv and pool layers through the runtime (data resident on the device),
 * one JSON line per (op, dtype, batch): median milliseconds per call over 5 runs of `reps` calls.
 * PyTorch side: bench/torch/conv.py (same shapes, same JSON keys).
 *   node dist/bench/conv.js [--device cuda|cpu] [--batch 128] [--reps 50]
 */
import { intOption, parse } from '../src/cli/output.js';
import type { DType } from '../src/core/dtype.js';
import { fillRandom } from '../src/core/seeded-random.js';
import { numel } from '../src/core/shape.js';
import type { Scalars } from '../src/devices/device.js';
import { Runtime } from '../src/runtime/runtime.js';
import type { Tensor } from '../src/memory/tensor.js';

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cuda' },
  batch: { type: 'string' },
  reps: { type: 'string' },
});
const device = String(values['device']);
const B = intOption(values['batch'], 'batch', 128, 1, 4096);
const REPS = intOption(values['reps'], 'reps', device === 'cuda' ? 50 : 3, 1, 10_000);

interface Call {
  readonly op: string;
  readonly layer: string;
  readonly args: Record<string, readonly number[]>;
  readonly scalars: Scalars;
}

/** conv 1→32 at 28x28, pool, conv 32→64 at 14x14, pool; forward and backward. */
function calls(): Call[] {
  const out: Call[] = [];
  for (const [c, o, hw] of [
    [1, 32, 28],
    [32, 64, 14],
  ] as const) {
    const layer = `${c}->${o} ${hw}x${hw}`;
    const x = [B, c, hw, hw];
    const w = [o, c, 3, 3];
    const y = [B, o, hw, hw];
    const p = [B, o, hw / 2, hw / 2];
    out.push({ op: 'conv2d', layer, args: { x, w, b: [o], y }, scalars: { padding: 1 } });
    out.push({
      op: 'conv2d_backward',
      layer,
      args: { dy: y, x, w, dx: x, dw: w, db: [o] },
      scalars: { padding: 1 },
    });
    out.push({
      op: 'pool2d',
      layer: `max2 ${o}x${hw}x${hw}`,
      args: { x: y, y: p },
      scalars: { op: 'max', kernel: 2 },
    });
    out.push({
      op: 'pool2d_backward',
      layer: `max2 ${o}x${hw}x${hw}`,
      args: { x: y, dy: p, dx: y },
      scalars: { op: 'max', kernel: 2 },
    });
  }
  return out;
}

async function time(rt: Runtime, call: Call, dtype: DType): Promise<number> {
  const tensors: Record<string, Tensor> = {};
  let seed = 1;
  for (const [name, shape] of Object.entries(call.args))
    tensors[name] = rt.tensor(shape, dtype, fillRandom(new Float32Array(numel(shape)), seed++));
  const run = (): Promise<void> =>
    rt.submit({ kernel: call.op, args: tensors, scalars: call.scalars, device }).done;
  await run(); // brings the data to the device, compiles the programs
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = performance.now();
    const tasks: Promise<void>[] = [];
    for (let i = 0; i < REPS; i++) tasks.push(run());
    await Promise.all(tasks);
    runs.push((performance.now() - t0) / REPS);
  }
  for (const t of Object.values(tensors)) rt.free(t);
  return runs.sort((a, b) => a - b)[2]!;
}

const rt = await Runtime.create({
  backends: device === 'cuda' ? ['cpu', 'cuda'] : ['cpu'],
  calibrate: false,
});
try {
  if (!rt.devices.some((d) => d.info.kind === device)) {
    console.log(
      JSON.stringify({
        skipped: `no ${device} device`,
        backends: rt.backends.map((b) => [b.kind, b.reason]),
      }),
    );
  } else {
    for (const dtype of ['f32', 'bf16'] as const) {
      for (const call of calls()) {
        const ms = await time(rt, call, dtype);
        console.log(
          JSON.stringify({ side: 'tandem', device, op: call.op, layer: call.layer, dtype, batch: B, ms }),
        );
      }
    }
  }
} finally {
  await rt.close();
}
