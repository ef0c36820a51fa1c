/**
 * GPU-to-GPU copy routing on the fake driver (runs in CI): peer access enabled where the driver allows
 * it, cuMemcpyPeerAsync between peers, staging through pinned host chunks otherwise or when the
 * peerAccess option is off, a same-GPU copy staying on the compute stream, caps.peerCopy.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CopyRoute } from '../../src/devices/device.js';
import { cudaCopyRoutes } from '../../src/devices/cuda/copy-routes.js';
import type { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { PeerLinks, STAGING_CHUNK, peerPath } from '../../src/devices/cuda/peer.js';
import { FakeGpu } from './fake-driver.js';

interface Rig {
  fake: FakeGpu;
  a: CudaDevice;
  b: CudaDevice;
  links: PeerLinks;
  route: CopyRoute;
  memcpy: { dst: number; src: number; bytes: number; stream: number }[];
  peer: { dst: number; dstCtx: number; src: number; srcCtx: number; bytes: number; stream: number }[];
  enables: number[];
  queries: number;
}

function rig(opts: { canAccess: number; enableRc?: number; peerAccess?: boolean }): Rig {
  const fake = new FakeGpu();
  const r = { memcpy: [], peer: [], enables: [], queries: 0 } as unknown as Rig;
  fake.api.cuDeviceCanAccessPeer = (o) => {
    r.queries++;
    o[0] = opts.canAccess;
    return 0;
  };
  fake.api.cuCtxEnablePeerAccess = (ctx) => {
    r.enables.push(ctx);
    return opts.enableRc ?? 0;
  };
  fake.api.cuMemcpyAsync = (dst, src, bytes, stream) => {
    r.memcpy.push({ dst, src, bytes, stream });
    return 0;
  };
  fake.api.cuMemcpyPeerAsync = (dst, dstCtx, src, srcCtx, bytes, stream) => {
    r.peer.push({ dst, dstCtx, src, srcCtx, bytes, stream });
    return 0;
  };
  let host = 0x7000_0000;
  fake.api.cuMemHostAlloc = (o) => {
    o[0] = host += STAGING_CHUNK;
    return 0;
  };
  const a = fake.device();
  const b = fake.device();
  const links = new PeerLinks([a, b], a.context.driver, { peerAccess: opts.peerAccess ?? true });
  const route = cudaCopyRoutes([a, b], links).find((x) => x.from === 'cuda' && x.to === 'cuda')!;
  return Object.assign(r, { fake, a, b, links, route });
}

function copy(route: CopyRoute, src: CudaDevice, dst: CudaDevice, bytes: number) {
  const s = src.node.alloc(bytes);
  const d = dst.node.alloc(bytes);
  return {
    s,
    d,
    done: new Promise<void>((res, rej) => route.copy(s, d, bytes, (err) => (err ? rej(err) : res()))),
  };
}

void describe('cuda peer route selection (fake driver)', () => {
  void it('peerPath: same device, peers either way, staged otherwise or when forced', () => {
    const access = [
      [false, true, false],
      [false, false, false],
      [false, false, false],
    ];
    assert.equal(peerPath(1, 1, access), 'same');
    assert.equal(peerPath(0, 1, access), 'peer');
    assert.equal(peerPath(1, 0, access), 'peer'); // cuMemcpyPeerAsync goes direct with access one way
    assert.equal(peerPath(0, 2, access), 'staged');
    assert.equal(peerPath(0, 1, access, 'staged'), 'staged');
    assert.equal(peerPath(0, 0, access, 'staged'), 'staged');
    assert.equal(peerPath(0, 0, access, 'peer'), 'peer');
  });

  void it('enables peer access both ways and copies with cuMemcpyPeerAsync on the source d2h stream', async () => {
    const r = rig({ canAccess: 1 });
    assert.deepEqual(r.links.access, [
      [false, true],
      [true, false],
    ]);
    assert.deepEqual(r.enables, [r.b.context.ctx, r.a.context.ctx]);
    assert.equal(r.a.caps.peerCopy, true);
    assert.equal(r.b.caps.peerCopy, true);
    assert.equal(r.route.engine(r.a.node.alloc(8), r.b.node.alloc(8)), `${r.a.id}.d2h`);
    const c = copy(r.route, r.a, r.b, 3 << 20);
    await c.done;
    assert.deepEqual(r.peer, [
      {
        dst: c.d.ptr,
        dstCtx: r.b.context.ctx,
        src: c.s.ptr,
        srcCtx: r.a.context.ctx,
        bytes: 3 << 20,
        stream: r.a.context.streams.d2h,
      },
    ]);
    assert.equal(r.memcpy.length, 0);
  });

  void it('counts "already enabled" as access, and a refused enable as none', () => {
    assert.equal(rig({ canAccess: 1, enableRc: 704 }).links.access[0]![1], true);
    const refused = rig({ canAccess: 1, enableRc: 217 });
    assert.equal(refused.links.access[0]![1], false);
    assert.equal(refused.a.caps.peerCopy, false);
    assert.match(refused.links.notes.join('\n'), /cuCtxEnablePeerAccess failed/);
  });

  void it('without peer access, stages through two pinned chunks: d2h on the source, h2d on the destination', async () => {
    const r = rig({ canAccess: 0 });
    assert.equal(r.enables.length, 0);
    assert.equal(r.a.caps.peerCopy, false);
    const bytes = 2 * STAGING_CHUNK + 12345;
    const c = copy(r.route, r.a, r.b, bytes);
    await c.done;
    assert.equal(r.peer.length, 0);
    const d2h = r.memcpy.filter((m) => m.stream === r.a.context.streams.d2h);
    const h2d = r.memcpy.filter((m) => m.stream === r.b.context.streams.h2d);
    assert.equal(d2h.length, 3);
    assert.equal(h2d.length, 3);
    assert.deepEqual(
      d2h.map((m) => [m.src - c.s.ptr, m.bytes]),
      [
        [0, STAGING_CHUNK],
        [STAGING_CHUNK, STAGING_CHUNK],
        [2 * STAGING_CHUNK, 12345],
      ],
    );
    assert.deepEqual(
      h2d.map((m) => m.dst - c.d.ptr),
      [0, STAGING_CHUNK, 2 * STAGING_CHUNK],
    );
    // Each chunk goes up from the pinned slot it came down to; consecutive chunks alternate slots.
    for (let i = 0; i < 3; i++) assert.equal(h2d[i]!.src, d2h[i]!.dst);
    assert.notEqual(d2h[0]!.dst, d2h[1]!.dst);
    assert.equal(d2h[0]!.dst, d2h[2]!.dst);
  });

  void it('peerAccess: false stages even where the driver allows peers, and never asks it', async () => {
    const r = rig({ canAccess: 1, peerAccess: false });
    assert.equal(r.queries, 0);
    assert.equal(r.a.caps.peerCopy, false);
    await copy(r.route, r.b, r.a, 1 << 20).done;
    assert.equal(r.peer.length, 0);
    assert.equal(r.memcpy.length, 2);
    assert.equal(r.memcpy[0]!.stream, r.b.context.streams.d2h);
    assert.equal(r.memcpy[1]!.stream, r.a.context.streams.h2d);
  });

  void it('two staged copies from one GPU take turns with its staging chunks', async () => {
    const r = rig({ canAccess: 0 });
    const x = copy(r.route, r.a, r.b, 1 << 20);
    const y = copy(r.route, r.a, r.b, 1 << 20);
    await Promise.all([x.done, y.done]);
    assert.equal(r.memcpy.length, 4);
    assert.deepEqual(
      r.memcpy.map((m) => m.bytes),
      [1 << 20, 1 << 20, 1 << 20, 1 << 20],
    );
  });

  void it('a copy within one GPU stays on its compute stream', async () => {
    const r = rig({ canAccess: 1 });
    const c = copy(r.route, r.a, r.a, 4096);
    await c.done;
    assert.deepEqual(r.memcpy, [
      { dst: c.d.ptr, src: c.s.ptr, bytes: 4096, stream: r.a.context.streams.compute },
    ]);
    assert.equal(r.peer.length, 0);
  });
});
