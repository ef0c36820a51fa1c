import { FakeGpu } from '../dist/test/cuda/fake-driver.js';
import { KERNEL_IMPLS } from '../dist/src/kernels/register.js';
const gpu = new FakeGpu();
const dev = gpu.device();
const impl = KERNEL_IMPLS.find((e) => e.op === 'scale' && e.backend === 'cuda').impl;
const buf = dev.node.alloc(1024);
const desc = { shape: [256], dtype: 'f32', bytes: 1024 };
for (let rep = 0; rep < 3; rep++) {
  let t0 = performance.now();
  let done = 0;
  await new Promise((res) => {
    for (let i = 0; i < 100000; i++)
      dev.queues[0].launch(
        { taskId: i, op: 'scale', impl, args: [{ buffer: buf, desc }], scalars: { alpha: 1 }, after: [] },
        () => {
          if (++done === 100000) res();
        },
      );
  });
  console.log('raw queue launches/s (fake gpu)', (100000 / ((performance.now() - t0) / 1000)).toFixed(0));
}
