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
      const results = new Map<boolean, Float32Array | Float64Array>();
      const msOf = new Map<boolean, number>();
      // Without then with the plan's fusions (src/onnx/fuse.ts), each on its own executor.
      for (const fused of [false, true]) {
        await withFusion(fused, async () => {
          const det = new OnnxExecutor(loadOnnxFile(join(o.assets, OCR_DET_MODEL)), rt);
          const run = (profile: boolean) => det.run({ x }, { device, floatDType: o.floatDType, profile });
          const first = await run(false); // plan, compile, upload weights
          results.set(fused, Object.values(first)[0]!.data);
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
          msOf.set(fused, median(times));
          o.emit({
            device,
            model: 'det',
            batch,
            size: o.size,
            floatDType: o.floatDType,
            fused,
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
      const [a, b] = [results.get(false)!, results.get(true)!];
      let maxAbs = a.length === b.length ? 0 : Infinity;
      for (let i = 0; i < a.length && i < b.length; i++) maxAbs = Math.max(maxAbs, Math.abs(a[i]! - b[i]!));
      if (a.some((v) => Number.isNaN(v)) || b.some((v) => Number.isNaN(v))) maxAbs = NaN;
      o.emit({
        device,
        model: 'det',
        batch,
        compare: 'fused vs unfused',
        maxAbs,
        unfusedMs: round(msOf.get(false)!),
        fusedMs: round(msOf.get(true)!),
        speedup: round(msOf.get(false)! / msOf.get(true)!),
      });
    }
    await rt.close();
  }
}
