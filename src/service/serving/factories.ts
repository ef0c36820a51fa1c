/**
 * The model kinds the service can serve: one line per factory (src/service/serving/model.ts's
 * ModelFactory): the classifiers, GPT scoring and generation, the option pricer and ONNX models.
 */
import { cnnFactory, mlpFactory } from './classifier-model.js';
import type { ModelFactory } from './model.js';
import { gptModelFactory } from './models/gpt.js';
import { onnxFactory } from './models/onnx.js';
import { optionPricerFactory } from './models/option-pricer.js';

export function builtinModelFactories(): ModelFactory[] {
  return [mlpFactory, cnnFactory, gptModelFactory, optionPricerFactory, onnxFactory];
}
