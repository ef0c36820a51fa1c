/** The data-set conversions that yield to the event loop: exact results, and turns given while they run. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { seededRandom } from '../../src/core/seeded-random.js';
import { bytesToUnit, gunzipInChunks } from '../../src/nn/data/event-loop-friendly.js';

/** Counts event-loop turns (a setImmediate chain) until `p` settles. */
async function turnsDuring<T>(p: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const tick = (): void => {
    if (done) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { value: await p, turns };
  } finally {
    done = true;
  }
}

function randomBytes(n: number, seed: number): Uint8Array {
  const rnd = seededRandom(seed);
  return Uint8Array.from({ length: n }, () => Math.floor(256 * rnd()));
}

void describe('bytesToUnit', () => {
  void it('maps every byte b to the f32 nearest b/255', async () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const got = await bytesToUnit(all);
    assert.deepEqual(
      [...got],
      [...all].map((b) => Math.fround(b / 255)),
    );
  });

  void it('gives the event loop a turn between slices', async () => {
    const { value, turns } = await turnsDuring(bytesToUnit(randomBytes(3500, 1), 1000));
    assert.equal(value.length, 3500);
    // Converting in one go would give none.
    assert.ok(turns >= 2, `${turns} turns while converting 4 slices`);
  });
});

void describe('gunzipInChunks', () => {
  void it('decompresses exactly, over many chunks', async () => {
    // Half random (incompressible), half repeated: several 256 KiB output chunks.
    const data = new Uint8Array(3 << 20);
    data.set(randomBytes(1 << 20, 2));
    data.fill(7, 1 << 20);
    const got = await gunzipInChunks(gzipSync(data));
    assert.equal(got.length, data.length);
    assert.ok(Buffer.from(got).equals(Buffer.from(data)));
  });

  void it("grows past a trailer that undercounts (two gzip members: the size is the last one's)", async () => {
    const a = randomBytes(300_000, 3);
    const b = randomBytes(1000, 4);
    const got = await gunzipInChunks(Buffer.concat([gzipSync(a), gzipSync(b)]));
    assert.ok(Buffer.from(got).equals(Buffer.concat([a, b])));
  });

  void it('rejects a cut stream', async () => {
    const gz = gzipSync(randomBytes(5000, 5));
    await assert.rejects(gunzipInChunks(gz.subarray(0, gz.length - 100)), /unexpected end of file/);
  });
});
