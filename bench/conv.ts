/**
 * The Fashion-MNIST CNN's conv and pool layers through the runtime (data resident on the device),
 * one JSON line per (op, dtype, batch): median milliseconds per call over 5 runs of `reps` calls.
 * PyTorch side: bench/torch/conv.py (same shapes, same JSON keys).
 *   node dist/bench/conv.js [--device cuda|cpu] [--batch 128] [--reps 50]
 */
import { intOption, parse } from '../src/cli/output.js';
import { timeOp, type OpCall } from './op-timing.js';
import { Runtime } from '../src/runtime/runtime.js';

const { values } = parse(process.argv.slice(2), {
  device: { type: 'string', default: 'cuda' },
  batch: { type: 'string' },
  reps: { type: 'string' },
});
const device = String(values['device']);
const B = intOption(values['batch'], 'batch', 128, 1, 4096);
const REPS = intOption(values['reps'], 'reps', device === 'cuda' ? 50 : 3, 1, 10_000);

type Call = OpCall;

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
        const ms = await timeOp(rt, call, dtype, device, REPS);
        console.log(
          JSON.stringify({ side: 'tandem', device, op: call.op, layer: call.layer, dtype, batch: B, ms }),
        );
      }
    }
  }
} finally {
  await rt.close();
}
