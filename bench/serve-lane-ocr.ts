/**
 * The PaddleOCR v4 detector served through the interactive lane (issue 17: "throughput at concurrency
 * 16 ≥ 2× batching off"): the .onnx file uploaded (POST /v1/models/uploads) and registered twice, as
 * kind 'onnx' with batching off (maxBatchSize 1) and on (16, queue delay 0), then closed-loop load at
 * concurrency 1 and 16 with S×S synthetic images: binary tensor bodies in and out (--ocr-format binary,
 * the default: src/service/http/binary-tensors.ts), base64 float32 in JSON (config outputEncoding), or
 * --ocr-format u8: the image as uint8 pixels [S, S, 3] in a binary body to a model registered with a
 * preprocess config (PaddleOCR's mean/std), normalized on the device by image_normalize — 4× fewer
 * bytes over HTTP and into the device than float32.
 * Prints the c16 on/off ratio (the better of each pair of settings), p95s
 * and the executed batch sizes; beside them the in-process executor at batch 1 and 16 (no HTTP, no
 * JSON) as the ceiling.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadReport, LoadRequest } from '../src/service/client/load.js';
import { runSweepIsolated } from '../src/service/client/load-threads.js';
import { OnnxExecutor } from '../src/onnx/executor.js';
import { loadOnnxFile } from '../src/onnx/model.js';
import { OCR_DET_MODEL } from '../src/onnx/ocr.js';
import { binaryInferBody } from '../src/service/client/binary-request.js';
import { syntheticImages } from './onnx-profile.js';
import { fmt, levelLine, type Lane } from './serve-common.js';

// Batching off and on, each with one batch at a time and with two (`instances`: the next batch is
// received and formed while one runs; on, a 20 ms delay lets it fill instead of starting with one image),
// and on with a 10 ms queue delay.
const VARIANTS = [
  { name: 'ocr-off', batching: { maxBatchSize: 1, maxQueueDelayUs: 0 } },
  { name: 'ocr-off-i2', batching: { maxBatchSize: 1, maxQueueDelayUs: 0, instances: 2 } },
  { name: 'ocr-on', batching: { maxBatchSize: 16, maxQueueDelayUs: 0 } },
  { name: 'ocr-on-i2', batching: { maxBatchSize: 16, maxQueueDelayUs: 20_000, instances: 2 } },
  // With delay 0 the 16 clients settle into two cohorts (batches of ~11 and ~5, one uploading while
  // the other runs); a 10 ms delay lets a batch wait for more of them.
  { name: 'ocr-on-d10', batching: { maxBatchSize: 16, maxQueueDelayUs: 10_000 } },
  // Each run's kernels as runtime sequences (the executor's `sequences`): less host work per batch.
  { name: 'ocr-off-seq', batching: { maxBatchSize: 1, maxQueueDelayUs: 0 }, sequences: true },
  { name: 'ocr-on-seq', batching: { maxBatchSize: 16, maxQueueDelayUs: 0 }, sequences: true },
] as const satisfies ReadonlyArray<{ name: string; batching: object; sequences?: boolean }>;
const LEVELS = [1, 16];

export const OCR_FORMATS = ['binary', 'base64', 'u8'] as const;
export type OcrFormat = (typeof OCR_FORMATS)[number];

/** PaddleOCR's detector normalization (ImageNet mean/std on pixels / 255), done on the device for u8. */
const PADDLE_PREPROCESS = {
  input: 'x',
  scale: 1 / 255,
  mean: [0.485, 0.456, 0.406] as [number, number, number],
  std: [0.229, 0.224, 0.225] as [number, number, number],
};

/** An S×S RGB image as bytes [S, S, 3]: the synthetic image's pattern mapped to 0..255. */
function syntheticPixels(size: number): Uint8Array {
  const img = syntheticImages(1, size).data;
  const px = new Uint8Array(size * size * 3);
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < size * size; i++) px[i * 3 + c] = Math.round(127.5 + 63 * img[c * size * size + i]!);
  return px;
}

async function upload(lane: Lane, file: string): Promise<string> {
  const res = await fetch(`${lane.url}/v1/models/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${lane.key}`, 'content-type': 'application/octet-stream' },
    body: readFileSync(file),
  });
  const json = (await res.json()) as { upload?: string };
  if (res.status !== 201 || !json.upload)
    throw new Error(`upload: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json.upload;
}

export async function runOcrLaneBench(
  lane: Lane,
  o: { device: string; seconds: number; size: number; assets: string; format: OcrFormat },
): Promise<unknown> {
  const file = join(o.assets, OCR_DET_MODEL);
  const img = syntheticImages(1, o.size);
  const bytes = Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength);
  const shape = [3, o.size, o.size];
  let request: LoadRequest;
  if (o.format === 'u8') {
    request = binaryInferBody(
      { x: { shape: [o.size, o.size, 3], dtype: 'uint8', bytes: syntheticPixels(o.size) } },
      { binaryOutputs: true },
    );
  } else if (o.format === 'binary') {
    // Triton's binary tensor extension (src/service/http/binary-tensors.ts): JSON header, then the bytes.
    // Padded with spaces to a multiple of 4 bytes: the server then reads the image in place (no copy).
    const json = JSON.stringify({
      inputs: { x: { shape, binaryDataSize: bytes.length } },
      binaryOutputs: true,
    });
    const header = Buffer.from(json.padEnd(Math.ceil(json.length / 4) * 4, ' '));
    request = {
      body: Buffer.concat([header, bytes]),
      headers: {
        'content-type': 'application/octet-stream',
        'inference-header-content-length': String(header.length),
      },
    };
  } else request = { body: JSON.stringify({ inputs: { x: { shape, data: bytes.toString('base64') } } }) };
  // The ceiling: the executor in this process, batch 1 and 16, no HTTP or JSON.
  const exec = new OnnxExecutor(loadOnnxFile(file), lane.rt);
  const inProcess: Record<string, number> = {};
  for (const batch of [1, 16]) {
    // u8: the same pixels the lane sends, normalized on the device as the lane's batches are.
    const px = o.format === 'u8' ? syntheticPixels(o.size) : undefined;
    const x = px
      ? {
          dims: [batch, o.size, o.size, 3],
          data: Uint8Array.from({ length: batch * px.length }, (_, i) => px[i % px.length]!),
          type: 'uint8' as const,
        }
      : syntheticImages(batch, o.size);
    const opts = {
      device: o.device,
      ...(px ? { images: { x: { params: { ...PADDLE_PREPROCESS, channels: 'rgb' as const } } } } : {}),
    };
    await exec.run({ x }, opts);
    const times: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      await exec.run({ x }, opts);
      times.push(performance.now() - t0);
    }
    const ms = times.sort((a, b) => a - b)[2]!;
    inProcess[`b${batch}ImagesPerSec`] = (batch * 1000) / ms;
    console.log(
      `in-process det ${o.size}x${o.size} batch ${batch} on ${o.device}: ${fmt(ms)} ms, ${fmt((batch * 1000) / ms, 1)} img/s`,
    );
  }
  exec.close();
  const rows: Record<string, LoadReport[]> = {};
  for (const v of VARIANTS) {
    await lane.register({
      name: v.name,
      kind: 'onnx',
      upload: await upload(lane, file),
      // The probability map comes back as base64 float32: as JSON numbers one 640x640 map is ~8 MB of
      // text (~0.1-0.4 s of JSON.stringify per request on the shared event loop), which would measure JSON.
      config: {
        maxBatchSize: 16,
        outputEncoding: 'base64',
        ...('sequences' in v ? { sequences: true } : {}),
        ...(o.format === 'u8' ? { preprocess: PADDLE_PREPROCESS } : {}),
      },
      placement: { kinds: [o.device] },
      batching: v.batching,
    });
    // The clients in a worker thread (src/service/client/load-threads.ts), off the server's event loop.
    rows[v.name] = await runSweepIsolated(
      lane.target(v.name),
      LEVELS,
      { warmupSeconds: 2, seconds: o.seconds },
      [request],
      (r) => console.log(levelLine(v.name, r)),
    );
    await lane.call('DELETE', `/v1/models/${v.name}`);
  }
  const at = (name: string, c: number) => rows[name]!.find((r) => r.concurrency === c)!;
  // The ratio: the better batching-on setting against the better batching-off one.
  const best = (...names: string[]): [string, LoadReport] =>
    names
      .map((n): [string, LoadReport] => [n, at(n, 16)])
      .reduce((x, y) => (x[1].inferPerSec >= y[1].inferPerSec ? x : y));
  const [offName, off] = best('ocr-off', 'ocr-off-i2', 'ocr-off-seq');
  const [onName, on] = best('ocr-on', 'ocr-on-i2', 'ocr-on-d10', 'ocr-on-seq');
  const meanBatch = (r: LoadReport) => {
    let n = 0;
    let s = 0;
    for (const [b, count] of Object.entries(r.batchSizes)) {
      n += count;
      s += Number(b) * count;
    }
    return n ? s / n : NaN;
  };
  const ratio = on.inferPerSec / off.inferPerSec;
  const line =
    `OCR det ${o.size}x${o.size} on ${o.device} through the lane (${o.format} bodies), c16: batching on (${onName}) ${fmt(on.inferPerSec, 1)} img/s ` +
    `(mean batch ${fmt(meanBatch(on), 1)}, p95 ${fmt(on.client.p95)} ms) vs off (${offName}) ${fmt(off.inferPerSec, 1)} img/s ` +
    `(p95 ${fmt(off.client.p95)} ms): ${fmt(ratio, 2)}x (target >= 2x: ${ratio >= 2 ? 'met' : 'NOT met'}); ` +
    `server compute mean on ${fmt(on.server.compute.mean)} / off ${fmt(off.server.compute.mean)} ms, ` +
    `serialize on ${fmt(on.server.serialize.mean)} ms; in-process batch 16 ${fmt(inProcess['b16ImagesPerSec']!, 1)} img/s`;
  console.log(line);
  return { size: o.size, rows, inProcess, ratio, line };
}
