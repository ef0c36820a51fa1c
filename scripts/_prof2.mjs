import { FakeGpu } from '../dist/test/cuda/fake-driver.js';
import { cudaCopyRoutes } from '../dist/src/devices/cuda/copy-routes.js';
import { Runtime } from '../dist/src/runtime/runtime.js';
const gpu = new FakeGpu();
const dev = gpu.device();
const backend = {
  kind: 'cuda',
  open: async () => ({ kind: 'cuda', available: true, devices: [dev], copies: cudaCopyRoutes([dev]) }),
};
const rt = await Runtime.create({ backends: ['cpu', backend], calibrate: false });
const x = rt.tensor([256], 'f32', new Float32Array(256).fill(1));
try {
  await rt.submit({ kernel: 'scale', args: { x }, scalars: { alpha: 1 }, device: 'cuda' }).done;
  console.log('ok');
} catch (e) {
  console.log(e);
}
await rt.close();
