import { FakeGpu } from '../dist/test/cuda/fake-driver.js';
import { cudaCopyRoutes } from '../dist/src/devices/cuda/copy-routes.js';
import { Runtime } from '../dist/src/runtime/runtime.js';
import { KERNEL_IMPLS } from '../dist/src/kernels/register.js';
const gpu = new FakeGpu();
const dev = gpu.device();
const backend = {
  kind: 'cuda',
  open: async () => ({ kind: 'cuda', available: true, devices: [dev], copies: cudaCopyRoutes([dev]) }),
};
const rt = await Runtime.create({ backends: ['cpu', backend], calibrate: false });
const x = rt.tensor([256], 'f32', new Float32Array(256).fill(1));
async function chain(n) {
  const t0 = performance.now();
  let last;
  for (let i = 0; i < n; i++)
    last = rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: 'cuda' }).done;
  await last;
  await rt.idle();
  return n / ((performance.now() - t0) / 1000);
}
await chain(5000);
console.log('runtime chain tasks/s (fake gpu)', (await chain(100000)).toFixed(0));
const impl = KERNEL_IMPLS.find((e) => e.op === 'scale' && e.backend === 'cuda').impl;
const buf = dev.node.alloc(1024);
const desc = { shape: [256], dtype: 'f32', bytes: 1024 };
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
await rt.close();
