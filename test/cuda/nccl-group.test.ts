/**
 * The NCCL group's own logic over the fake driver (test/cuda/fake-driver.ts) and a recording stand-in
 * for libnccl's entry points (the real library runs in test/gpu/nccl.test.ts on the H200; here there is
 * none): the comm stream waits on an event recorded on the compute stream before the NCCL calls, every
 * call sits inside one ncclGroupStart/End with the right pointers, counts, types and reductions, the
 * completion comes from the comm stream, and an NCCL error fails the call (the group is still ended).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import { Nccl } from '../../src/devices/cuda/ffi/nccl.js';
import type { CudaBuffer } from '../../src/devices/cuda/memory-node.js';
import { NcclGroup } from '../../src/devices/cuda/nccl-group.js';
import { FakeGpu } from './fake-driver.js';

function fakeNccl(log: string[], failOn = ''): Nccl {
  const api = {
    ncclGetVersion: (v: [number]) => ((v[0] = 22703), 0),
    ncclGetErrorString: (rc: number) => `fake error ${rc}`,
    ncclCommInitAll: (comms: Buffer, n: number, devs: Buffer) => {
      log.push(`initAll ${n} [${Array.from({ length: n }, (_, i) => devs.readInt32LE(4 * i)).join(',')}]`);
      for (let i = 0; i < n; i++) comms.writeBigUInt64LE(BigInt(0xc000 + i), 8 * i);
      return 0;
    },
    ncclCommDestroy: (c: number) => (log.push(`destroy ${c}`), 0),
    ncclGroupStart: () => (log.push('groupStart'), 0),
    ncclGroupEnd: () => (log.push('groupEnd'), 0),
    ncclAllReduce: (s: number, r: number, n: number, t: number, op: number, c: number, st: number) => (
      log.push(`allReduce ${s} ${r} ${n} ${t} ${op} ${c} ${st}`),
      failOn === 'allReduce' ? 5 : 0
    ),
    ncclReduceScatter: (s: number, r: number, n: number, t: number, op: number, c: number, st: number) => (
      log.push(`reduceScatter ${s} ${r} ${n} ${t} ${op} ${c} ${st}`),
      0
    ),
    ncclAllGather: (s: number, r: number, n: number, t: number, c: number, st: number) => (
      log.push(`allGather ${s} ${r} ${n} ${t} ${c} ${st}`),
      0
    ),
    ncclBroadcast: (s: number, r: number, n: number, t: number, root: number, c: number, st: number) => (
      log.push(`broadcast ${s} ${r} ${n} ${t} ${root} ${c} ${st}`),
      0
    ),
  };
  const nccl = Object.create(Nccl.prototype) as Nccl;
  Object.assign(nccl, { api, path: 'fake-libnccl', version: 22703 });
  return nccl;
}

void describe('NcclGroup over the fake driver', () => {
  void it('orders the comm stream after the compute stream by event, groups the calls, completes', async () => {
    const gpu = new FakeGpu();
    const log: string[] = [];
    const api = gpu.api as Record<string, unknown>;
    const record = api['cuEventRecord'] as (ev: number, s: number) => number;
    api['cuEventRecord'] = (ev: number, s: number) => (log.push(`record ${ev} on ${s}`), record(ev, s));
    api['cuStreamWaitEvent'] = (s: number, ev: number) => (log.push(`wait ${s} for ${ev}`), 0);
    const dev = gpu.device();
    const g = new NcclGroup(fakeNccl(log), [dev]);
    assert.equal(g.engine, 'nccl 2.27.3');
    assert.deepEqual(g.queueIds, ['cuda0.comm']);
    assert.deepEqual(log, ['initAll 1 [0]']);
    const a = dev.node.alloc(1024) as CudaBuffer;
    const b = dev.node.alloc(1024) as CudaBuffer;
    log.length = 0;
    await new Promise<void>((res, rej) =>
      g.run(
        [
          { op: 'allReduce', reduce: 'avg', root: 0, dtype: 'bf16', count: 512, send: [a], recv: [a] },
          { op: 'allGather', reduce: 'sum', root: 0, dtype: 'f32', count: 256, send: [a], recv: [b] },
        ],
        (e) => (e ? rej(e) : res()),
      ),
    );
    const compute = dev.context.streams.compute;
    const rec = log[0]!.match(/^record (\d+) on (\d+)$/);
    assert.ok(rec && Number(rec[2]) === compute, `first the event on the compute stream: ${log.join(' | ')}`);
    const wait = log[1]!.match(/^wait (\d+) for (\d+)$/);
    assert.ok(wait && wait[2] === rec[1], 'then the comm stream waits for it');
    const comm = Number(wait[1]);
    assert.notEqual(comm, compute);
    assert.deepEqual(log.slice(2, 6), [
      'groupStart',
      `allReduce ${a.ptr} ${a.ptr} 512 9 4 ${0xc000} ${comm}`,
      `allGather ${a.ptr} ${b.ptr} 256 7 ${0xc000} ${comm}`,
      'groupEnd',
    ]);
    assert.ok(
      log.slice(6).some((l) => l.endsWith(` on ${comm}`)),
      `completion watched by an event on the comm stream: ${log.slice(6).join(' | ')}`,
    );
    g.close();
    assert.ok(log.includes(`destroy ${0xc000}`));
  });

  void it('an NCCL error fails the call with TANDEM_ERR_DRIVER and still ends the group', async () => {
    const gpu = new FakeGpu();
    const log: string[] = [];
    const dev = gpu.device();
    const g = new NcclGroup(fakeNccl(log, 'allReduce'), [dev]);
    const a = dev.node.alloc(64) as CudaBuffer;
    await assert.rejects(
      new Promise<void>((res, rej) =>
        g.run(
          [{ op: 'allReduce', reduce: 'sum', root: 0, dtype: 'f32', count: 16, send: [a], recv: [a] }],
          (e) => (e ? rej(e) : res()),
        ),
      ),
      (e) => isTandemError(e) && e.code === 'TANDEM_ERR_DRIVER' && /fake error 5/.test(e.message),
    );
    assert.equal(log.at(-1), 'groupEnd');
    assert.throws(
      () => new NcclGroup(fakeNccl(log), [dev, dev]),
      (e) => isTandemError(e) && e.code === 'TANDEM_ERR_INVALID_ARGUMENT',
    );
  });
});
