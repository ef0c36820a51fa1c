/** The training memory plan: its parameter count is the model's, and a batch that cannot fit is refused
 * with the numbers and the largest batch that does. */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { isTandemError } from '../../src/core/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { Nn } from '../../src/nn/context.js';
import { gptMemoryPlan, gptParameterCount, planBytes, requireFits } from '../../src/nn/memory.js';
import { Gpt, gptConfig } from '../../src/nn/models/gpt.js';
import { cpuRuntime } from '../runtime/helpers.js';

let rt: Runtime;
before(async () => {
  rt = await cpuRuntime();
});
after(async () => {
  await rt.close();
});

void it('the GPT parameter count of the plan is the model’s (gpt-mini, and gpt2 = 124,475,904)', () => {
  const nn = new Nn(rt, { precision: 'f32' });
  const c = gptConfig('gpt-mini');
  assert.equal(gptParameterCount(c), new Gpt(nn, c).parameterCount());
  assert.equal(gptParameterCount(gptConfig('gpt2')), 124_475_904);
});

void it('a batch that cannot fit: TANDEM_ERR_OUT_OF_MEMORY naming the need, the device and the largest batch that fits', () => {
  const plan = gptMemoryPlan(gptConfig('gpt2'), 'bf16');
  const available = 80 * 2 ** 30;
  const largest = Math.floor((available - plan.fixed) / plan.perSample);
  assert.ok(
    largest >= 1 && planBytes(plan, largest) <= available && planBytes(plan, largest + 1) > available,
  );
  assert.doesNotThrow(() => requireFits(plan, largest, available, 'cuda0'));
  assert.throws(
    () => requireFits(plan, largest + 1, available, 'cuda0'),
    (e) =>
      isTandemError(e, 'TANDEM_ERR_OUT_OF_MEMORY') &&
      e.message.includes(`largest batch that fits is ${largest}`) &&
      e.message.includes('cuda0'),
  );
  assert.throws(
    () => requireFits(plan, 1, plan.fixed / 2, 'cuda0'),
    (e) => isTandemError(e, 'TANDEM_ERR_OUT_OF_MEMORY') && /even the weights/.test(e.message),
  );
});
