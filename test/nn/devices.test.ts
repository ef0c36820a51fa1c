/**
 * The same training steps on every device kind present, against the CPU: an MLP (linear, ReLU, fused
 * cross-entropy, AdamW) pinned to a WebGPU device (Dawn on Mesa in CI) or a CUDA GPU gives the CPU's
 * losses and weights within f32 tolerance over five steps. A device that is absent skips, saying why.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seededRandom } from '../../src/core/seeded-random.js';
import { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import { Mlp } from '../../src/nn/models/classifiers.js';
import { AdamW } from '../../src/nn/optim/adamw.js';

let rt: Runtime;
before(async () => {
  rt = await Runtime.create({ backends: ['cpu', 'webgpu', 'cuda'], calibrate: false, log: () => undefined });
});
after(async () => {
  await rt.close();
});

async function train(device: string, steps: number): Promise<{ losses: number[]; weights: Float64Array }> {
  const nn = new Nn(rt, { precision: 'f32', device, seed: 21 });
  const model = new Mlp(nn, { sizes: [64, 48, 10] });
  const opt = new AdamW(nn, model.parameters(), { lr: 1e-2, maxNorm: 1 });
  const r = seededRandom(5);
  const losses: number[] = [];
  for (let s = 0; s < steps; s++) {
    const x = nn.input(
      Float32Array.from({ length: 32 * 64 }, () => r()),
      [32, 64],
    );
    const y = nn.input(
      Int32Array.from({ length: 32 }, () => Math.floor(r() * 10)),
      [32],
      'i32',
    );
    const loss = model.loss(x, y);
    await loss.backward();
    opt.step();
    opt.zeroGrad();
    losses.push(await loss.item());
  }
  return { losses, weights: await model.layers[0]!.weight.values() };
}

void describe('an MLP trains alike on every device kind', () => {
  for (const kind of ['webgpu', 'cuda'] as const) {
    it(`${kind} against the CPU`, async (t) => {
      const dev = rt.devices.find((d) => d.info.kind === kind);
      if (!dev) {
        const why = rt.backends.find((b) => b.kind === kind)?.reason ?? 'not opened';
        t.skip(`no ${kind} device: ${why}`);
        return;
      }
      const cpu = await train('cpu', 5);
      const other = await train(dev.info.id, 5);
      cpu.losses.forEach((l, i) =>
        assert.ok(
          Math.abs(other.losses[i]! - l) <= 1e-4 * Math.abs(l),
          `step ${i + 1}: ${kind} ${other.losses[i]}, cpu ${l}`,
        ),
      );
      let worst = 0;
      cpu.weights.forEach((w, i) => (worst = Math.max(worst, Math.abs(other.weights[i]! - w))));
      assert.ok(worst < 1e-4, `weights after 5 steps differ by up to ${worst}`);
      assert.ok(cpu.losses[4]! < cpu.losses[0]!, 'the loss fell');
    });
  }
});
