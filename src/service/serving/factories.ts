/**
 * The model kinds the service can serve: one line per factory (src/service/serving/model.ts's
 * ModelFactory). Other kinds (GPT scoring, the option pricer, ONNX) export their factory from their
 * own file and are added here.
 */
import { cnnFactory, mlpFactory } from './classifier-model.js';
import type { ModelFactory } from './model.js';

export function builtinModelFactories(): ModelFactory[] {
  return [mlpFactory, cnnFactory];
}
