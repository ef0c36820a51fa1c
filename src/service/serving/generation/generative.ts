/**
 * A served model that also generates (GPT kinds): the completions route finds its engine and text codec
 * through this small extension of ServedModel, so the route depends on no model kind's code.
 */
import type { ServedModel } from '../model.js';
import type { TextCodec } from './codec.js';
import type { GenerationEngine } from './engine.js';

export interface Generator {
  /** The model's engine (made on first use: its KV cache is allocated then). */
  engine(): GenerationEngine;
  /** Text ↔ tokens; null when the model has no tokenizer (prompts must be token ids, no text back). */
  readonly codec: TextCodec | null;
  /** Positions per sequence (prompt + completion). */
  readonly maxLength: number;
  readonly vocab: number;
}

export interface GenerativeModel extends ServedModel {
  readonly generator: Generator;
}

export function isGenerative(m: ServedModel): m is GenerativeModel {
  const g = (m as Partial<GenerativeModel>).generator;
  return typeof g === 'object' && g !== null && typeof g.engine === 'function';
}
