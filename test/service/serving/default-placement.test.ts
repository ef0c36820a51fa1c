/**
 * A registration without a placement gets the default order (cuda, webgpu, cpu) kept to the kinds its
 * model kind can run on: the GPT kind has no WebGPU kernels for attention or the KV cache, so its
 * default must leave WebGPU out (otherwise, on a machine with a WebGPU adapter and no CUDA GPU, the model
 * is registered ready and every scoring and completion request fails with TANDEM_ERR_NO_DEVICE).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cnnFactory, mlpFactory } from '../../../src/service/serving/classifier-model.js';
import { gptModelFactory } from '../../../src/service/serving/models/gpt.js';
import { optionPricerFactory } from '../../../src/service/serving/models/option-pricer.js';
import { defaultPlacement } from '../../../src/service/serving/registration.js';

describe('serving: default placement by model kind', () => {
  it('leaves WebGPU out for the gpt kind', () => {
    assert.deepEqual(defaultPlacement(gptModelFactory).kinds, ['cuda', 'cpu']);
  });

  it('leaves WebGPU out for the option pricer', () => {
    assert.deepEqual(defaultPlacement(optionPricerFactory).kinds, ['cuda', 'cpu']);
  });

  it('keeps every kind for the classifiers', () => {
    for (const f of [mlpFactory, cnnFactory])
      assert.deepEqual(defaultPlacement(f).kinds, ['cuda', 'webgpu', 'cpu']);
  });
});
