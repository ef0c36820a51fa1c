/**
 * `bench/onnx-ocr.ts --profile`: the PaddleOCR detector on synthetic images (no ONNX Runtime inputs
 * needed), per device and batch, without and with the plan's fusions (TANDEM_ONNX_FUSE, src/onnx/
 * fuse.ts): the median of plain runs, then one profiled run (the executor's per-node profile, each
 * node waited for: src/onnx/profile.ts), one JSON line each; then a line comparing the two outputs
 * (max abs difference) and times.
 */
import { join } from 'node:path';
import { OnnxExecutor } from '../src/onnx/executor.js';
import { loadOnnxFile } from '../src/onnx/model.js';
import { OCR_DET_MODEL } from '../src/onnx/ocr.js';
import { Runtime } from '../src/runtime/runtime.js';

export interface ProfileOptions {
  readonly assets: string;
  readonly devices: readonly string[];
  readonly batches: readonly number[];
  /** Image side (the detector takes any multiple of 32). */
  readonly size: number;
  readonly reps: number;
  readonly floatDType: 'f32' | 'f16' | 'bf16';
  readonly emit: (o: Record<string, unknown>) => void;
}

/** A smooth deterministic image normalised like PaddleOCR's preprocessing (values in about [−2, 2]). */
export function syntheticImages(batch: number, size: number): { dims: number[]; data: Float32Array } {
  const data = new Float32Array(batch * 3 * size * size);
  let at = 0;
  for (let n = 0; n < batch; n++)
    for (let c = 0; c < 3; c++)
      for (let i = 0; i < size; i++)
        for (let j = 0; j < size; j++)
          data[at++] = 2 * Math.sin(0.05 * i + 0.07 * j + n + c) * Math.cos(0.011 * i * (c + 1));
  return { dims: [batch, 3, size, size], data };
}

/** Runs `f` with TANDEM_ONNX_FUSE set to `value` (plans are bound inside, at each first run of a shape). */
async function withFusion<T>(on: boolean, f: () => Promise<T>): Promise<T> {
  const before = process.env.TANDEM_ONNX_FUSE;
  process.env.TANDEM_ONNX_FUSE = on ? '1' : '0';
  try {
    return await f();
  } finally {
    if (before === undefined) delete process.env.TANDEM_ONNX_FUSE;
    else process.env.TANDEM_ONNX_FUSE = before;
  }
}

export async function profileDetector(o: ProfileOptions): Promise<void> {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const round = (v: number) => Math.round(v * 1000) / 1000;
  for (const device of o.devices) {
    const rt = await Runtime.create({
      backends: device === 'cpu' ? ['cpu'] : ['cpu', device],
      log: () => undefined,
    });
    for (const batch of o.batches) {
      const x = syntheticImages(batch, o.size);
      const results = new Map<string, Float32Array | Float64Array>();
      const msOf = new Map<string, number>();
      // Without then with the plan's fusions (src/onnx/fuse.ts), then fused with TF32 conv GEMMs (not on
      // the CPU), each on its own executor.
      const modes = [
        { mode: 'unfused', fused: false, precision: 'f32' as const },
        { mode: 'fused', fused: true, precision: 'f32' as const },
        ...(device === 'cpu' ? [] : [{ mode: 'fused-tf32', fused: true, precision: 'tf32' as const }]),
      ];
      for (const { mode, fused, precision } of modes) {
        await withFusion(fused, async () => {
          const det = new OnnxExecutor(loadOnnxFile(join(o.assets, OCR_DET_MODEL)), rt);
          const run = (profile: boolean) =>
            det.run({ x }, { device, floatDType: o.floatDType, profile, precision });
          const first = await run(false); // plan, compile, upload weights
          results.set(mode, Object.values(first)[0]!.data);
          const times: number[] = [];
          for (let r = 0; r < o.reps; r++) {
            const s = performance.now();
            await run(false);
            times.push(performance.now() - s);
          }
          const s = performance.now();
          await run(true);
          const profiledMs = performance.now() - s;
          const p = det.lastProfile!;
          msOf.set(mode, median(times));
          o.emit({
            device,
            model: 'det',
            batch,
            size: o.size,
            floatDType: o.floatDType,
            fused,
            precision,
            ms: round(median(times)),
            imagesPerSecond: round((batch * 1000) / median(times)),
            profiledMs: round(profiledMs),
            steps: p.steps,
            tasks: p.tasks,
            stepsMs: round(p.stepsMs),
            byOp: p.byOp.map((b) => ({ ...b, ms: round(b.ms), share: round(b.share) })),
            top: p.top.map((n) => ({ ...n, ms: round(n.ms), submitMs: round(n.submitMs) })),
          });
          det.close();
        });
      }
      const compare = (base: string, other: string) => {
        const [a, b] = [results.get(base), results.get(other)];
        if (!a || !b) return;
        let maxAbs = a.length === b.length ? 0 : Infinity;
        for (let i = 0; i < a.length && i < b.length; i++) maxAbs = Math.max(maxAbs, Math.abs(a[i]! - b[i]!));
        if (a.some((v) => Number.isNaN(v)) || b.some((v) => Number.isNaN(v))) maxAbs = NaN;
        o.emit({
          device,
          model: 'det',
          batch,
          compare: `${other} vs ${base}`,
          maxAbs,
          baseMs: round(msOf.get(base)!),
          otherMs: round(msOf.get(other)!),
          speedup: round(msOf.get(base)! / msOf.get(other)!),
        });
      };
      compare('unfused', 'fused');
      compare('fused', 'fused-tf32');
    }
    await rt.close();
  }
}
