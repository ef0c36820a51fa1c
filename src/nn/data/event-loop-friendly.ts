/**
 * Bulk conversions of data-set files that keep the event loop turning: the service's train job loads
 * Fashion-MNIST inside the server process, where one loop over its 47 million pixels (~240 ms of CPU
 * on these VMs, 40 % of it the kernel's first touches of the new array's pages) or one 47 MB
 * concatenation at the end of zlib.gunzip would hold up every request (issue 19's /healthz).
 */
import { createGunzip } from 'node:zlib';

/** Pixels per slice of the conversion (~5 ms of CPU), then the event loop gets a turn. */
export const UNIT_SLICE = 1 << 20;

const UNIT = Float32Array.from({ length: 256 }, (_, i) => i / 255);

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** byte / 255 as f32 for every byte, yielding to the event loop between slices of UNIT_SLICE. */
export async function bytesToUnit(bytes: Uint8Array, slice = UNIT_SLICE): Promise<Float32Array> {
  const out = new Float32Array(bytes.length);
  for (let start = 0; start < bytes.length; start += slice) {
    if (start > 0) await turn();
    const end = Math.min(start + slice, bytes.length);
    for (let i = start; i < end; i++) out[i] = UNIT[bytes[i]!]!;
  }
  return out;
}

/**
 * Decompresses a gzip stream on zlib's thread pool into one buffer sized from the stream's trailer
 * (ISIZE, the size mod 2³², grown if it was wrong), one chunk at a time: no concatenation of the
 * whole output on the event loop as zlib.gunzip does at the end. Rejects with zlib's error for a
 * corrupt or cut stream.
 */
export function gunzipInChunks(gz: Uint8Array): Promise<Uint8Array> {
  const hint =
    gz.length >= 18
      ? new DataView(gz.buffer, gz.byteOffset, gz.byteLength).getUint32(gz.length - 4, true)
      : 0;
  let out = new Uint8Array(hint);
  let at = 0;
  return new Promise((resolve, reject) => {
    const z = createGunzip({ chunkSize: 256 * 1024 });
    z.on('data', (chunk: Buffer) => {
      if (at + chunk.length > out.length) {
        const grown = new Uint8Array(Math.max(2 * out.length, at + chunk.length));
        grown.set(out.subarray(0, at));
        out = grown;
      }
      out.set(chunk, at);
      at += chunk.length;
    });
    z.on('error', reject);
    z.on('end', () => resolve(at === out.length ? out : out.subarray(0, at)));
    z.end(gz);
  });
}
