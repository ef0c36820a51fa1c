import { FakeGpu } from '../dist/test/cuda/fake-driver.js';
import { cudaCopyRoutes } from '../dist/src/devices/cuda/copy-routes.js';
import { Runtime } from '../dist/src/runtime/runtime.js';
const gpu = new FakeGpu();
const dev = gpu.device();
const trivial = process.argv[2] === 'trivial';
if (trivial) dev.queues[0].launch = (req, done) => queueMicrotask(() => done(null));
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
for (let i = 0; i < 4; i++)
  console.log(
    trivial ? 'trivial queue' : 'fake gpu',
    'runtime chain tasks/s',
    (await chain(50000)).toFixed(0),
  );
await rt.close();
