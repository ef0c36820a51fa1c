/**
 * GPU-to-GPU copy paths on real GPUs. On one GPU: the staged path (forced) and the peer path
 * (cuMemcpyPeerAsync within one context) move a 3-chunk buffer exactly. With two or more GPUs: every
 * ordered pair by peer (where enabled) and staged copies, through the backend's own route.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { PeerLinks, STAGING_CHUNK, type PeerPath } from '../../src/devices/cuda/peer.js';
import { download, hostBuffer, openCuda, promise, upload } from './cuda-harness.js';

const st = await openCuda();
const devices = st.devices as CudaDevice[];
const reason = st.reason ?? 'no CUDA device';
if (devices.length === 0) console.log(`# skip cuda peer copies: ${reason}`);
const multi = devices.length >= 2 ? false : `needs 2 GPUs, found ${devices.length}`;

const BYTES = 2 * STAGING_CHUNK + 4100; // three chunks, the last one short and not a multiple of 8

function pattern(bytes: number, seed: number): Uint8Array {
  const x = new Uint8Array(bytes);
  let s = seed;
  for (let i = 0; i < bytes; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    x[i] = s >>> 24;
  }
  return x;
}

async function roundTrip(links: PeerLinks, a: CudaDevice, b: CudaDevice, force?: PeerPath): Promise<void> {
  const want = pattern(BYTES, a === b ? 7 : 11);
  const h = hostBuffer(BYTES);
  new Uint8Array(h.sab).set(want);
  const src = a.node.alloc(BYTES);
  const dst = b.node.alloc(BYTES);
  try {
    await upload(a, h, src, BYTES);
    new Uint8Array(h.sab).fill(0);
    await promise((done) => links.copy(a, src, b, dst, BYTES, done, force));
    await download(b, dst, h, BYTES);
    const got = new Uint8Array(h.sab, 0, BYTES);
    const bad = got.findIndex((v, i) => v !== want[i]);
    assert.equal(bad, -1, `first wrong byte at ${bad}`);
  } finally {
    a.node.free(src);
    b.node.free(dst);
  }
}

void describe('cuda peer copies on one GPU', { skip: devices.length > 0 ? false : reason }, () => {
  void it('the staged path (forced) moves data exactly through the pinned chunks', async () => {
    const d = devices[0]!;
    const links = new PeerLinks([d], d.context.driver, { peerAccess: true });
    try {
      assert.equal(links.path(d, d, 'staged'), 'staged');
      await roundTrip(links, d, d, 'staged');
    } finally {
      links.close();
    }
  });
  void it('the peer path (cuMemcpyPeerAsync, same context) and the same-device path move data exactly', async () => {
    const d = devices[0]!;
    const links = new PeerLinks([d], d.context.driver, { peerAccess: true });
    await roundTrip(links, d, d, 'peer');
    await roundTrip(links, d, d);
  });
});

void describe('cuda peer copies between GPUs', { skip: devices.length === 0 ? reason : multi }, () => {
  void it('every ordered pair: peer where enabled, and staged, move data exactly', async () => {
    const links = new PeerLinks(devices, devices[0]!.context.driver, { peerAccess: true });
    console.log(`# peer access ${JSON.stringify(links.access)} ${links.notes.join('; ')}`);
    try {
      for (const a of devices)
        for (const b of devices) {
          if (a === b) continue;
          await roundTrip(links, a, b);
          await roundTrip(links, a, b, 'staged');
        }
    } finally {
      links.close();
    }
  });
});
