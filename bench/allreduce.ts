/**
 * All-reduce bandwidth through NCCL (koffi binding, the CUDA backend's collective group) over the first
 * --gpus GPUs, the way nccl-tests reports it: algbw = bytes / time, busbw = algbw · 2(n−1)/n (0 with one
 * rank: nothing crosses a link, so one GPU measures only the call's overhead and the local copy).
 * bench/torch/allreduce.py measures torch.distributed.all_reduce the same way; run both in one call.
 *   node dist/bench/allreduce.js [--mib 256] [--gpus 1] [--iters 20] [--dtype f32]
 */
import { parseArgs } from 'node:util';
import type { DType } from '../src/core/dtype.js';
import type { CollectiveGroup } from '../src/devices/device.js';
import type { CudaDevice } from '../src/devices/cuda/cuda-device.js';
import { Runtime } from '../src/runtime/runtime.js';

Object.assign(process.env, {
  NCCL_NVLS_ENABLE: '0',
  TORCH_SYMM_MEM_DISABLE_MULTICAST: '1',
  NVSHMEM_DISABLE_NVLS: '1',
});
const { values } = parseArgs({
  options: {
    mib: { type: 'string', default: '256' },
    gpus: { type: 'string', default: '1' },
    iters: { type: 'string', default: '20' },
    dtype: { type: 'string', default: 'f32' },
  },
});
const bytes = Number(values.mib) * 2 ** 20;
const iters = Number(values.iters);
const dtype = values.dtype as DType;
const elem = dtype === 'f32' ? 4 : 2;
const rt = await Runtime.create({ backends: ['cuda'], calibrate: false });
try {
  const st = rt.backends.find((b) => b.kind === 'cuda');
  const gpus = (st?.devices ?? []).slice(0, Number(values.gpus)) as CudaDevice[];
  if (!st?.collectives || gpus.length < Number(values.gpus)) {
    console.log(JSON.stringify({ skipped: st?.reason ?? `fewer than ${values.gpus} GPUs` }));
  } else {
    const g: CollectiveGroup = st.collectives(gpus);
    const bufs = gpus.map((d) => d.node.alloc(bytes));
    const run = (): Promise<void> =>
      new Promise((res, rej) =>
        g.run(
          [{ op: 'allReduce', reduce: 'sum', root: 0, dtype, count: bytes / elem, send: bufs, recv: bufs }],
          (e) => (e ? rej(e) : res()),
        ),
      );
    for (let i = 0; i < 5; i++) await run();
    const t0 = performance.now();
    await Promise.all(Array.from({ length: iters }, run));
    const s = (performance.now() - t0) / 1000 / iters;
    const n = gpus.length;
    const algbw = bytes / s / 1e9;
    console.log(
      JSON.stringify({
        impl: 'tandem-nccl',
        engine: g.engine,
        ranks: n,
        dtype,
        mib: Number(values.mib),
        ms: +(s * 1000).toFixed(3),
        algbwGBs: +algbw.toFixed(2),
        busbwGBs: +((algbw * 2 * (n - 1)) / n).toFixed(2),
      }),
    );
    gpus.forEach((d, i) => d.node.free(bufs[i]!));
    g.close();
  }
} finally {
  await rt.close();
}
