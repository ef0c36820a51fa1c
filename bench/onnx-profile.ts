/**
 * `bench/onnx-ocr.ts --profile`: the PaddleOCR detector on synthetic images (no ONNX Runtime inputs
 * needed), per device and batch: the median of plain runs, then one profiled run (the executor's
 * per-node profile, each node waited for: src/onnx/profile.ts), one JSON line each.
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

export async function profileDetector(o: ProfileOptions): Promise<void> {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const device of o.devices) {
    const rt = await Runtime.create({
      backends: device === 'cpu' ? ['cpu'] : ['cpu', device],
      log: () => undefined,
    });
    const det = new OnnxExecutor(loadOnnxFile(join(o.assets, OCR_DET_MODEL)), rt);
    for (const batch of o.batches) {
      const x = syntheticImages(batch, o.size);
      const run = (profile: boolean) => det.run({ x }, { device, floatDType: o.floatDType, profile });
      await run(false); // plan, compile, upload weights
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
      const round = (v: number) => Math.round(v * 1000) / 1000;
      o.emit({
        device,
        model: 'det',
        batch,
        size: o.size,
        floatDType: o.floatDType,
        ms: round(median(times)),
        imagesPerSecond: round((batch * 1000) / median(times)),
        profiledMs: round(profiledMs),
        steps: p.steps,
        tasks: p.tasks,
        stepsMs: round(p.stepsMs),
        byOp: p.byOp.map((b) => ({ ...b, ms: round(b.ms), share: round(b.share) })),
        top: p.top.map((n) => ({ ...n, ms: round(n.ms), submitMs: round(n.submitMs) })),
      });
    }
    det.close();
    await rt.close();
  }
}
