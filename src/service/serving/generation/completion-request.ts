/**
 * The body of an OpenAI `POST /v1/completions` request, checked by hand (so every refusal names the
 * field with a stable code) into what the engine takes. Fields OpenAI defines that change nothing here
 * are accepted at their neutral values only (n = 1, best_of = 1, echo = false, logprobs = null,
 * penalties 0); unknown fields are ignored, as OpenAI's own server does for clients that send extras.
 */
import { TandemError } from '../../../core/errors.js';
import type { SamplingOptions } from '../../../nn/inference/index.js';
import { tokensAtLeast } from './codec.js';
import type { Generator } from './generative.js';

export interface CompletionRequest {
  readonly model: string;
  readonly prompt: number[];
  readonly maxTokens: number;
  readonly sampling: SamplingOptions;
  readonly stop: string[];
  readonly stream: boolean;
  readonly includeUsage: boolean;
}

function invalid(message: string, param: string): TandemError {
  return new TandemError('TANDEM_ERR_INVALID_ARGUMENT', message, { param });
}

function num(
  body: Record<string, unknown>,
  key: string,
  fallback: number,
  ok: (v: number) => boolean,
  what: string,
): number {
  const v = body[key];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !ok(v)) throw invalid(`${key} must be ${what}, got ${JSON.stringify(v)}`, key);
  return v;
}

/** The model name alone (to look it up before the rest is checked against its limits). */
export function requestedModel(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new TandemError('TANDEM_ERR_MALFORMED_REQUEST', 'the body must be a JSON object');
  const model = (body as Record<string, unknown>)['model'];
  if (typeof model !== 'string' || model.length === 0)
    throw invalid('model must be a non-empty string', 'model');
  return model;
}

function promptTokens(raw: unknown, gen: Generator): number[] {
  let p = raw;
  // OpenAI accepts a batch of prompts; one (as a one-element array) is what n = 1 serving takes.
  if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
  if (typeof p === 'string') {
    if (gen.codec === null)
      throw invalid('this model has no tokenizer: give the prompt as an array of token ids', 'prompt');
    if (p.length === 0) throw invalid('prompt is empty', 'prompt');
    const atLeast = tokensAtLeast(gen.codec, p);
    if (atLeast > gen.maxLength)
      throw new TandemError(
        'TANDEM_ERR_LIMIT',
        `prompt (at least ${atLeast} tokens) exceeds the model's ${gen.maxLength} positions`,
        { param: 'prompt' },
      );
    return gen.codec.encode(p);
  }
  if (Array.isArray(p) && p.every((t) => typeof t === 'number')) {
    const bad = p.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= gen.vocab);
    if (bad >= 0)
      throw invalid(`prompt[${bad}] = ${String(p[bad])} is not a token id in [0, ${gen.vocab})`, 'prompt');
    if (p.length === 0) throw invalid('prompt is empty', 'prompt');
    return p as number[];
  }
  throw invalid('prompt must be a string or an array of token ids (one prompt per request)', 'prompt');
}

export function parseCompletionRequest(body: Record<string, unknown>, gen: Generator): CompletionRequest {
  const model = requestedModel(body);
  const prompt = promptTokens(body['prompt'], gen);
  const n = num(body, 'n', 1, (v) => v === 1, '1 (one completion per request)');
  const bestOf = num(body, 'best_of', 1, (v) => v === 1, '1');
  void n;
  void bestOf;
  if (body['echo'] !== undefined && body['echo'] !== false) throw invalid('echo is not supported', 'echo');
  if (body['logprobs'] !== undefined && body['logprobs'] !== null)
    throw invalid('logprobs is not supported', 'logprobs');
  if (body['suffix'] !== undefined && body['suffix'] !== null)
    throw invalid('suffix is not supported', 'suffix');
  for (const k of ['presence_penalty', 'frequency_penalty'])
    num(body, k, 0, (v) => v === 0, '0 (penalties are not supported)');
  const maxTokens = num(body, 'max_tokens', 16, (v) => Number.isInteger(v) && v >= 1, 'a positive integer');
  const temperature = num(body, 'temperature', 1, (v) => Number.isFinite(v) && v >= 0 && v <= 2, 'in [0, 2]');
  const topP = num(body, 'top_p', 1, (v) => v > 0 && v <= 1, 'in (0, 1]');
  const topK = num(body, 'top_k', 0, (v) => Number.isInteger(v) && v >= 0, 'an integer ≥ 0 (0: off)');
  const seedRaw = body['seed'];
  if (
    seedRaw !== undefined &&
    seedRaw !== null &&
    !(typeof seedRaw === 'number' && Number.isSafeInteger(seedRaw))
  )
    throw invalid('seed must be an integer', 'seed');
  const stopRaw = body['stop'] ?? [];
  const stop = typeof stopRaw === 'string' ? [stopRaw] : stopRaw;
  if (!Array.isArray(stop) || stop.length > 4 || !stop.every((s) => typeof s === 'string' && s.length > 0))
    throw invalid('stop must be a non-empty string or an array of up to 4 of them', 'stop');
  const stream = body['stream'] ?? false;
  if (typeof stream !== 'boolean') throw invalid('stream must be a boolean', 'stream');
  const so = body['stream_options'];
  let includeUsage = false;
  if (so !== undefined && so !== null) {
    // As OpenAI's own server: options of a stream, only with one, and include_usage a boolean.
    if (typeof so !== 'object' || Array.isArray(so))
      throw invalid('stream_options must be an object {include_usage?: boolean}', 'stream_options');
    if (!stream) throw invalid('stream_options is only allowed with stream: true', 'stream_options');
    const iu = (so as Record<string, unknown>)['include_usage'];
    if (iu !== undefined && iu !== null && typeof iu !== 'boolean')
      throw invalid('stream_options.include_usage must be a boolean', 'stream_options');
    includeUsage = iu === true;
  }
  const sampling: SamplingOptions = {
    temperature,
    ...(topP < 1 ? { topP } : {}),
    ...(topK > 0 ? { topK } : {}),
    // Seeds wider than 53 bits fold into the generator's range.
    ...(typeof seedRaw === 'number' ? { seed: Math.abs(seedRaw) % 2 ** 53 } : {}),
  };
  return { model, prompt, maxTokens, sampling, stop: stop as string[], stream, includeUsage };
}
