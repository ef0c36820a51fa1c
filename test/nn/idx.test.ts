/**
 * The IDX reader and the Fashion-MNIST loader on small files written here (plain and gzip): values
 * normalised to [0, 1], labels as i32, the NCHW shape; every bad file is TANDEM_ERR_BAD_DATA with a
 * reason (missing — naming the Debian package —, wrong magic, truncated data, truncated gzip, trailing
 * bytes, label/image count mismatch, a label that is not a class). The real data set is read when
 * /usr/share/datasets/fashion-mnist holds it.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { isTandemError } from '../../src/core/errors.js';
import {
  FASHION_MNIST_DIR,
  IDX_IMAGES_MAGIC,
  IDX_LABELS_MAGIC,
  loadFashionMnist,
  readIdx,
} from '../../src/nn/data/idx.js';

const root = mkdtempSync(join(tmpdir(), 'tandem-idx-'));
after(() => rmSync(root, { recursive: true, force: true }));

function idx(magic: number, dims: readonly number[], data: Uint8Array): Buffer {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt32BE(magic, 0);
  dims.forEach((d, i) => header.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([header, data]);
}

const H = 4;
const W = 5;
function images(n: number): Uint8Array {
  return Uint8Array.from({ length: n * H * W }, (_, i) => (i * 37 + 11) % 256);
}
function labels(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 3) % 10);
}

let dirs = 0;
/** A data-set directory; `over` replaces (Buffer) or removes (null) files by base name. */
function dataset(gz: boolean, over: Record<string, Buffer | null> = {}): string {
  const dir = join(root, `set${dirs++}`);
  const files: Record<string, Buffer | null> = {
    'train-images-idx3-ubyte': idx(IDX_IMAGES_MAGIC, [3, H, W], images(3)),
    'train-labels-idx1-ubyte': idx(IDX_LABELS_MAGIC, [3], labels(3)),
    't10k-images-idx3-ubyte': idx(IDX_IMAGES_MAGIC, [2, H, W], images(2)),
    't10k-labels-idx1-ubyte': idx(IDX_LABELS_MAGIC, [2], labels(2)),
    ...over,
  };
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of Object.entries(files)) {
    if (bytes === null) continue;
    if (gz) writeFileSync(join(dir, `${name}.gz`), gzipSync(bytes));
    else writeFileSync(join(dir, name), bytes);
  }
  return dir;
}

async function rejectsWith(p: Promise<unknown>, reason: string, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isTandemError(e, 'TANDEM_ERR_BAD_DATA'), String(e));
    assert.equal(e.details['reason'], reason);
    assert.match(e.message, pattern);
    return true;
  });
}

void describe('loadFashionMnist on small files', () => {
  for (const gz of [false, true]) {
    void it(`reads ${gz ? 'gzip-compressed' : 'plain'} IDX files: [n,1,h,w] in [0,1], labels i32`, async () => {
      const { train, test } = await loadFashionMnist(dataset(gz));
      assert.equal(train.count, 3);
      assert.equal(test.count, 2);
      assert.deepEqual(train.shape, [3, 1, H, W]);
      assert.deepEqual([train.height, train.width], [H, W]);
      assert.ok(train.images instanceof Float32Array && train.labels instanceof Int32Array);
      assert.deepEqual(
        [...train.images],
        [...images(3)].map((b) => Math.fround(b / 255)),
      );
      assert.deepEqual([...test.labels], [...labels(2)]);
    });
  }

  void it('a missing file names the Debian package to install', async () => {
    const dir = dataset(true, { 't10k-labels-idx1-ubyte': null });
    await rejectsWith(
      loadFashionMnist(dir),
      'missing',
      /loadFashionMnist: .*t10k-labels-idx1-ubyte\(\.gz\) is missing: install the Debian package dataset-fashion-mnist/,
    );
  });

  void it('a missing directory is the same missing-file error', async () => {
    await rejectsWith(
      loadFashionMnist(join(root, 'nowhere')),
      'missing',
      /apt-get install dataset-fashion-mnist/,
    );
  });

  void it('wrong magic: a labels file where images belong', async () => {
    const dir = dataset(false, { 'train-images-idx3-ubyte': idx(IDX_LABELS_MAGIC, [3], labels(3)) });
    await rejectsWith(
      loadFashionMnist(dir),
      'magic',
      /train-images-idx3-ubyte: magic number 0x00000801, expected 0x00000803/,
    );
  });

  void it('truncated data: fewer bytes than the header promises', async () => {
    const full = idx(IDX_IMAGES_MAGIC, [3, H, W], images(3));
    const dir = dataset(true, { 'train-images-idx3-ubyte': full.subarray(0, full.length - 7) });
    await rejectsWith(
      loadFashionMnist(dir),
      'truncated',
      /holds 53 data bytes, its header \[3, 4, 5\] needs 60/,
    );
  });

  void it('truncated header', async () => {
    const dir = dataset(false, {
      't10k-images-idx3-ubyte': idx(IDX_IMAGES_MAGIC, [2, H, W], images(2)).subarray(0, 9),
    });
    await rejectsWith(loadFashionMnist(dir), 'truncated', /9 bytes, shorter than its 16-byte header/);
  });

  void it('a cut gzip stream', async () => {
    const dir = join(root, `cut${dirs++}`);
    mkdirSync(dir, { recursive: true });
    const gz = gzipSync(idx(IDX_LABELS_MAGIC, [3], labels(3)));
    writeFileSync(join(dir, 'labels.gz'), gz.subarray(0, gz.length - 10));
    await rejectsWith(
      readIdx(join(dir, 'labels.gz'), IDX_LABELS_MAGIC),
      'gzip',
      /not a complete gzip stream/,
    );
  });

  void it('bytes beyond what the header describes', async () => {
    const dir = dataset(false, {
      'train-labels-idx1-ubyte': Buffer.concat([idx(IDX_LABELS_MAGIC, [3], labels(3)), Buffer.of(1)]),
    });
    await rejectsWith(loadFashionMnist(dir), 'trailing', /1 bytes beyond the 3/);
  });

  void it('label and image counts that differ', async () => {
    const dir = dataset(false, { 'train-labels-idx1-ubyte': idx(IDX_LABELS_MAGIC, [4], labels(4)) });
    await rejectsWith(loadFashionMnist(dir), 'mismatch', /4 labels for 3 images/);
  });

  void it('a label that is not one of the 10 classes', async () => {
    const dir = dataset(false, {
      't10k-labels-idx1-ubyte': idx(IDX_LABELS_MAGIC, [2], Uint8Array.of(3, 10)),
    });
    await rejectsWith(loadFashionMnist(dir), 'label', /label 10 at 1 is not a class/);
  });
});

const real = ['train-images-idx3-ubyte', 't10k-labels-idx1-ubyte'].every(
  (f) => existsSync(join(FASHION_MNIST_DIR, f)) || existsSync(join(FASHION_MNIST_DIR, `${f}.gz`)),
);
const skipReal = real
  ? false
  : `${FASHION_MNIST_DIR} does not hold Fashion-MNIST (apt-get install dataset-fashion-mnist)`;
if (skipReal) console.log(`# skip: ${skipReal}`);

void it(
  'reads the real Fashion-MNIST: 60,000 + 10,000 images of 28x28, 10 balanced classes',
  { skip: skipReal },
  async () => {
    const { train, test } = await loadFashionMnist();
    assert.deepEqual(train.shape, [60000, 1, 28, 28]);
    assert.deepEqual(test.shape, [10000, 1, 28, 28]);
    assert.equal(train.images.length, 60000 * 784);
    for (const [set, perClass] of [
      [train, 6000],
      [test, 1000],
    ] as const) {
      const counts = new Array<number>(10).fill(0);
      for (const l of set.labels) counts[l]!++;
      assert.deepEqual(counts, new Array<number>(10).fill(perClass));
      let min = Infinity;
      let max = -Infinity;
      for (const v of set.images) {
        if (v < min) min = v;
        if (v > max) max = v;
      }
      assert.deepEqual([min, max], [0, 1]);
    }
  },
);
