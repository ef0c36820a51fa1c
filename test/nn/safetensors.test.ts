/**
 * safetensors: exact round trips for every dtype (including the staged small-tensor and the large
 * direct paths), the reference writer's header layout byte for byte, and one test per way a file can
 * be broken (each a TANDEM_ERR_BAD_CHECKPOINT with its stable reason).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, truncate, writeFile, appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ErrorCode, TandemError, isTandemError } from '../../src/core/errors.js';
import { seededRandom } from '../../src/core/seeded-random.js';
import {
  type TensorToSave,
  hostArrayOf,
  int64Of,
  loadSafetensors,
  readSafetensorsHeader,
  saveSafetensors,
} from '../../src/nn/safetensors.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tandem-safetensors-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function randomBytes(n: number, seed: number): Uint8Array {
  const rnd = seededRandom(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(rnd() * 256));
}

/** A file made of an explicit header length, header text and data bytes: for the broken-file tests. */
async function craft(name: string, header: string, dataBytes: number, declared?: bigint): Promise<string> {
  const json = Buffer.from(header, 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(declared ?? BigInt(json.length));
  const path = join(dir, name);
  await writeFile(path, Buffer.concat([prefix, json, Buffer.alloc(dataBytes, 7)]));
  return path;
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: ErrorCode,
  reason?: string,
  text?: string,
): Promise<TandemError> {
  let caught: unknown;
  try {
    await promise;
  } catch (e) {
    caught = e;
  }
  assert.ok(isTandemError(caught, code), `expected ${code}, got ${String(caught)}`);
  if (reason !== undefined) assert.equal(caught.details.reason, reason, caught.message);
  if (text !== undefined) assert.ok(caught.message.includes(text), caught.message);
  assert.ok(caught.message.includes('safetensors: '), caught.message);
  return caught;
}

describe('safetensors round trip', () => {
  it('keeps every dtype, shape, byte and metadata string exactly', async () => {
    const f64 = Float64Array.from({ length: 7 }, (_, i) => Math.PI * (i - 3));
    const i64 = BigInt64Array.from([-(2n ** 62n), -1n, 0n, 2n ** 40n + 3n]);
    const tensors: Record<string, TensorToSave> = {
      'w.f64': { dtype: 'f64', shape: [7], data: f64 },
      'w.f32': { dtype: 'F32', shape: [3, 5], data: new Float32Array(randomBytes(60, 1).buffer) },
      'w.f16': { dtype: 'f16', shape: [2, 3], data: new Uint16Array(randomBytes(12, 2).buffer) },
      'w.bf16': { dtype: 'BF16', shape: [5], data: new Uint16Array(randomBytes(10, 3).buffer) },
      ids: { dtype: 'I64', shape: [2, 2], data: i64 },
      labels: { dtype: 'i32', shape: [3], data: Int32Array.from([-5, 0, 2 ** 31 - 1]) },
      bytes: { dtype: 'u8', shape: [9], data: randomBytes(9, 4) },
      scalar: { dtype: 'f32', shape: [], data: Float32Array.of(1.5) },
      empty: { dtype: 'f32', shape: [0, 4], data: new Float32Array(0) },
    };
    const path = join(dir, 'all.safetensors');
    const metadata = { format: 'pt', note: 'héllo "quoted" \\ 1' };
    const { bytes } = await saveSafetensors(path, tensors, { metadata });
    assert.equal((await readFile(path)).length, bytes);
    const loaded = await loadSafetensors(path);
    assert.deepEqual(loaded.metadata, metadata);
    assert.equal(loaded.tensors.size, Object.keys(tensors).length);
    for (const [name, t] of Object.entries(tensors)) {
      const got = loaded.tensors.get(name)!;
      assert.deepEqual(got.shape, t.shape, name);
      assert.deepEqual(
        Buffer.from(got.bytes),
        Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength),
        name,
      );
      assert.equal(got.bytes.byteOffset, 0, `${name} owns its buffer`);
    }
    assert.deepEqual(hostArrayOf(loaded.tensors.get('w.f64')!), f64);
    assert.ok(hostArrayOf(loaded.tensors.get('w.bf16')!) instanceof Uint16Array);
    assert.deepEqual(int64Of(loaded.tensors.get('ids')!), i64);
    assert.throws(
      () => hostArrayOf(loaded.tensors.get('ids')!),
      (e) => isTandemError(e, 'TANDEM_ERR_DTYPE'),
    );
    assert.throws(
      () => int64Of(loaded.tensors.get('labels')!),
      (e) => isTandemError(e, 'TANDEM_ERR_DTYPE'),
    );
  });

  it('round-trips large tensors (direct reads) and runs of small ones past the staging buffer', async () => {
    const tensors = new Map<string, TensorToSave>();
    for (let i = 0; i < 20; i++) {
      tensors.set(`small.${i}`, {
        dtype: 'u8',
        shape: [600_000 + i],
        data: randomBytes(600_000 + i, 10 + i),
      });
    }
    const big = new Float32Array(3_000_001);
    for (let i = 0; i < big.length; i++) big[i] = i * 0.5 - 7;
    tensors.set('big', { dtype: 'f32', shape: [3_000_001], data: big });
    const path = join(dir, 'big.safetensors');
    await saveSafetensors(path, tensors);
    const loaded = await loadSafetensors(path);
    assert.deepEqual(hostArrayOf(loaded.tensors.get('big')!), big);
    for (let i = 0; i < 20; i++) {
      assert.deepEqual(
        loaded.tensors.get(`small.${i}`)!.bytes,
        tensors.get(`small.${i}`)!.data,
        `small.${i}`,
      );
    }
  });

  it('reads straight into caller-given destinations (large and staged small tensors) and checks their size', async () => {
    const big = Float32Array.from({ length: 400_000 }, (_, i) => i - 0.5);
    const small = Float64Array.of(1.25, -2.5, 3.75);
    const path = join(dir, 'into.safetensors');
    await saveSafetensors(path, {
      big: { dtype: 'f32', shape: [400_000], data: big },
      small: { dtype: 'f64', shape: [3], data: small },
    });
    const destBig = new Float32Array(400_000).fill(NaN);
    const destSmall = new Float64Array(3).fill(NaN);
    const loaded = await loadSafetensors(path, {
      into: (e) => (e.name === 'big' ? destBig : destSmall),
    });
    assert.deepEqual(destBig, big);
    assert.deepEqual(destSmall, small);
    assert.equal(loaded.tensors.get('big')!.bytes.buffer, destBig.buffer);
    assert.equal(loaded.tensors.get('small')!.bytes.buffer, destSmall.buffer);
    const partial = await loadSafetensors(path, {
      into: (e) => (e.name === 'small' ? destSmall : undefined),
    });
    assert.deepEqual(hostArrayOf(partial.tensors.get('big')!), big);
    await rejectsWith(
      loadSafetensors(path, { into: () => new Float32Array(2) }),
      'TANDEM_ERR_SHAPE',
      undefined,
      'destination',
    );
  });

  it('replaces an existing file (durably) and leaves no temporary file behind', async () => {
    const path = join(dir, 'replace.safetensors');
    await writeFile(path, 'old contents');
    await saveSafetensors(
      path,
      { x: { dtype: 'f32', shape: [1], data: Float32Array.of(2) } },
      { durable: true },
    );
    const loaded = await loadSafetensors(path);
    assert.deepEqual(hostArrayOf(loaded.tensors.get('x')!), Float32Array.of(2));
    assert.deepEqual(
      (await readdir(dir)).filter((f) => f.includes('.tmp')),
      [],
    );
  });
});

describe('safetensors layout (as the Rust/Python writer lays it out)', () => {
  it('writes "__metadata__" first, tensors by dtype size (descending) then name, padded to 8 with spaces', async () => {
    const t = (dtype: TensorToSave['dtype'], n: number, bytesPer: number): TensorToSave => ({
      dtype,
      shape: [n],
      data: new Uint8Array(n * bytesPer),
    });
    const path = join(dir, 'layout.safetensors');
    await saveSafetensors(
      path,
      {
        b: t('F32', 2, 4),
        a: t('F32', 1, 4),
        c: t('U8', 3, 1),
        d: t('I64', 1, 8),
        e: t('BF16', 2, 2),
        '10': t('F32', 1, 4),
        '9': t('F32', 1, 4),
      },
      { metadata: { z: '1', format: 'pt' } },
    );
    const file = await readFile(path);
    const n = Number(file.readBigUInt64LE(0));
    const expected =
      '{"__metadata__":{"format":"pt","z":"1"},' +
      '"d":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},' +
      '"10":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},' +
      '"9":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},' +
      '"a":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},' +
      '"b":{"dtype":"F32","shape":[2],"data_offsets":[20,28]},' +
      '"e":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]},' +
      '"c":{"dtype":"U8","shape":[3],"data_offsets":[32,35]}}';
    assert.equal(n % 8, 0);
    assert.equal(n, Math.ceil(expected.length / 8) * 8);
    assert.equal(file.subarray(8, 8 + n).toString('utf8'), expected.padEnd(n, ' '));
    assert.equal(file.length, 8 + n + 35);
    const header = await readSafetensorsHeader(path);
    assert.deepEqual(
      header.entries.map((e) => e.name),
      ['d', '10', '9', 'a', 'b', 'e', 'c'],
    );
    assert.equal(header.dataStart, 8 + n);
  });
});

describe('safetensors strict reading', () => {
  const one = '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}';

  it('accepts the hand-made well-formed file the broken ones are built from', async () => {
    const loaded = await loadSafetensors(await craft('good.st', one, 8));
    assert.deepEqual(loaded.tensors.get('x')!.shape, [2]);
  });
  it('truncated: fewer than 8 bytes', async () => {
    const path = join(dir, 'tiny.st');
    await writeFile(path, Buffer.from([1, 2, 3, 4, 5]));
    await rejectsWith(
      loadSafetensors(path),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'truncated',
      'fewer than the 8-byte',
    );
  });
  it('header length beyond the end of the file', async () => {
    const path = await craft('long-header.st', one, 8, 1000n);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'truncated', 'runs past the end');
  });
  it('header length above the 100 MB limit (no huge allocation)', async () => {
    const path = await craft('huge-header.st', one, 8, 2n ** 40n);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'header-too-large');
  });
  it('invalid JSON', async () => {
    const path = await craft('json.st', '{"x":{"dtype":"F32",', 8);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'header-json', 'not valid JSON');
  });
  it('a header that is not an object', async () => {
    await rejectsWith(
      loadSafetensors(await craft('array.st', '[1,2]   ', 0)),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'header-json',
    );
  });
  it('unknown dtype', async () => {
    const path = await craft('dtype.st', '{"x":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}}', 8);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'dtype', 'F8_E4M3');
  });
  it('shape × dtype size not matching the offsets', async () => {
    const path = await craft('size.st', '{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', 8);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'size', 'needs 12 bytes');
  });
  it('overlapping offsets', async () => {
    const h =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}';
    await rejectsWith(
      loadSafetensors(await craft('overlap.st', h, 12)),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'offsets',
      'overlaps',
    );
  });
  it('a gap between tensors', async () => {
    const h =
      '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}';
    await rejectsWith(
      loadSafetensors(await craft('gap.st', h, 12)),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'offsets',
      'gap',
    );
  });
  it('offsets past the data section (a file cut short inside the data)', async () => {
    const path = join(dir, 'cut.safetensors');
    await saveSafetensors(path, { x: { dtype: 'f64', shape: [4], data: new Float64Array(4) } });
    await truncate(path, (await readFile(path)).length - 3);
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'out-of-range', 'past the');
  });
  it('misaligned offsets', async () => {
    const h =
      '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}';
    await rejectsWith(
      loadSafetensors(await craft('align.st', h, 5)),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'alignment',
      'multiple of the 4-byte',
    );
  });
  it('bytes after the last tensor', async () => {
    const path = join(dir, 'trailing.safetensors');
    await saveSafetensors(path, { x: { dtype: 'f32', shape: [2], data: new Float32Array(2) } });
    await appendFile(path, Buffer.from([0]));
    await rejectsWith(loadSafetensors(path), 'TANDEM_ERR_BAD_CHECKPOINT', 'trailing-bytes');
  });
  it('malformed entries and metadata', async () => {
    const cases = [
      '{"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}',
      '{"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}}',
      '{"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}',
      '{"__metadata__":{"k":3},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
    ];
    for (const [i, h] of cases.entries()) {
      await rejectsWith(
        loadSafetensors(await craft(`entry${i}.st`, h, 8)),
        'TANDEM_ERR_BAD_CHECKPOINT',
        'header-entry',
      );
    }
  });
  it('the same checks when only the header is read, and HTTP 422 for the code', async () => {
    const e = await rejectsWith(
      readSafetensorsHeader(
        await craft('hdr.st', '{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', 8),
      ),
      'TANDEM_ERR_BAD_CHECKPOINT',
      'size',
    );
    assert.equal(e.httpStatus, 422);
  });
  it('a missing file is TANDEM_ERR_NOT_FOUND', async () => {
    await rejectsWith(loadSafetensors(join(dir, 'nope.safetensors')), 'TANDEM_ERR_NOT_FOUND');
  });
});

describe('safetensors writing: bad input', () => {
  const path = (): string => join(dir, 'bad-input.safetensors');
  it('data size not matching shape × dtype', async () => {
    await rejectsWith(
      saveSafetensors(path(), { x: { dtype: 'f32', shape: [3], data: new Float32Array(2) } }),
      'TANDEM_ERR_SHAPE',
      undefined,
      'needs 12 bytes',
    );
  });
  it('an unknown dtype', async () => {
    const bad = { dtype: 'F8' as 'F32', shape: [1], data: new Uint8Array(1) };
    await rejectsWith(saveSafetensors(path(), { x: bad }), 'TANDEM_ERR_DTYPE');
  });
  it('a reserved or empty name', async () => {
    const x: TensorToSave = { dtype: 'u8', shape: [1], data: new Uint8Array(1) };
    await rejectsWith(saveSafetensors(path(), { __metadata__: x }), 'TANDEM_ERR_INVALID_ARGUMENT');
    await rejectsWith(saveSafetensors(path(), { '': x }), 'TANDEM_ERR_INVALID_ARGUMENT');
  });
  it('a negative or fractional dimension', async () => {
    await rejectsWith(
      saveSafetensors(path(), { x: { dtype: 'u8', shape: [-1], data: new Uint8Array(0) } }),
      'TANDEM_ERR_SHAPE',
    );
  });
});
