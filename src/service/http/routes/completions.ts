/**
 * OpenAI-compatible `POST /v1/completions` over the generative models of the interactive lane (kind
 * 'gpt'): the official clients work unchanged. Non-streaming answers one `text_completion` object;
 * `stream: true` answers server-sent events, one `data: {…}` chunk per piece of text, a last chunk with
 * the finish reason (and, with stream_options.include_usage, a usage chunk), then `data: [DONE]`.
 * A client that goes away aborts its sequence: the engine frees its slot at the next step.
 *
 * Errors use OpenAI's envelope `{error: {message, type, param, code}}` with Tandem's codes and statuses
 * (404 unknown model, 400 bad field or over the context, 429 with Retry-After when the engine's queue is
 * full). The route depends only on `lookup`, so it serves whatever model repository is wired to it.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { TandemError, failedStep, messageText } from '../../../core/errors.js';
import { toTandemError } from '../errors.js';
import type { ServedModel } from '../../serving/model.js';
import { parseCompletionRequest, requestedModel } from '../../serving/generation/completion-request.js';
import type { GenerateResult } from '../../serving/generation/engine.js';
import { isGenerative } from '../../serving/generation/generative.js';
import { CompletionText } from '../../serving/generation/stop-text.js';
import { DeferredSse } from '../deferred-sse.js';

export interface CompletionsRouteOptions {
  /** The served model (its newest ready version) of a name; undefined when there is none. */
  lookup(name: string): ServedModel | undefined | Promise<ServedModel | undefined>;
}

const EXAMPLE_BODY = {
  model: 'gpt2-small',
  prompt: 'Once upon a time',
  max_tokens: 32,
  temperature: 0.8,
  seed: 7,
};

/** A model name as quoted in a message: a client's 100 kB "name" is not echoed back whole. */
function namePreview(name: string): string {
  return name.length <= 80
    ? JSON.stringify(name)
    : `${JSON.stringify(name.slice(0, 80))}… (${name.length} characters)`;
}

function errorType(status: number): string {
  if (status === 401 || status === 403) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

export function openAiError(err: TandemError): { error: Record<string, unknown> } {
  const message = messageText(err);
  const param = typeof err.details['param'] === 'string' ? err.details['param'] : null;
  return { error: { message, type: errorType(err.httpStatus), param, code: err.code } };
}

function sendOpenAiError(reply: FastifyReply, err: TandemError): FastifyReply {
  if (err.httpStatus === 429) void reply.header('retry-after', String(err.details['retryAfterSeconds'] ?? 1));
  return reply.code(err.httpStatus).type('application/json').send(openAiError(err));
}

function usage(r: GenerateResult): Record<string, number> {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.tokens.length,
    total_tokens: r.promptTokens + r.tokens.length,
  };
}

export function completionsRoutes(opts: CompletionsRouteOptions) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post(
      '/v1/completions',
      {
        schema: {
          operationId: 'createCompletion',
          summary:
            "OpenAI-compatible text completion by a generative model (kind 'gpt'): continuous batching with a KV cache; stream: true answers server-sent events",
          tags: ['serving'],
          body: { type: 'object', examples: [EXAMPLE_BODY] },
        },
      },
      async (req, reply) => {
        const ac = new AbortController();
        // The client going away (before the answer is complete) aborts the sequence.
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) ac.abort();
        });
        let streaming = false;
        const sse = new DeferredSse(reply.raw);
        try {
          const name = requestedModel(req.body);
          const model = await opts.lookup(name);
          if (model === undefined)
            throw new TandemError('TANDEM_ERR_NOT_FOUND', `no model named ${namePreview(name)}`, {
              param: 'model',
            });
          if (!isGenerative(model))
            throw new TandemError(
              'TANDEM_ERR_INVALID_ARGUMENT',
              `model ${name} (kind ${model.kind}) does not generate`,
              {
                param: 'model',
              },
            );
          const gen = model.generator;
          const body = parseCompletionRequest(req.body as Record<string, unknown>, gen);
          const id = `cmpl-${randomUUID()}`;
          const created = Math.floor(Date.now() / 1000);
          const text = new CompletionText(gen.codec, body.stop);
          // One SSE event per token: the fixed part of the chunk is serialized once per request (the same
          // bytes JSON.stringify gives the whole object), only the piece and the finish reason per chunk.
          const head = `data: {"id":${JSON.stringify(id)},"object":"text_completion","created":${created},"model":${JSON.stringify(name)},"choices":[{"text":`;
          const chunk = (piece: string, finish: string | null): string =>
            `${head}${JSON.stringify(piece)},"index":0,"logprobs":null,"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
          const startStream = (): void => {
            if (streaming) return;
            streaming = true;
            reply.hijack();
            reply.raw.writeHead(200, {
              'content-type': 'text/event-stream; charset=utf-8',
              'cache-control': 'no-cache',
              connection: 'keep-alive',
            });
          };
          const result = await gen.engine().generate({
            prompt: body.prompt,
            maxTokens: body.maxTokens,
            sampling: body.sampling,
            stopTokens: gen.codec?.eot === null || gen.codec === null ? [] : [gen.codec.eot],
            signal: ac.signal,
            onToken: (token) => {
              const piece = text.push(token);
              // A model without a tokenizer streams one (empty) chunk per token: progress and time to first token.
              if (body.stream && (piece.length > 0 || gen.codec === null)) {
                startStream();
                sse.write(chunk(piece, null));
              }
              return text.stopped;
            },
          });
          const rest = text.finish();
          if (!body.stream)
            return reply.send({
              id,
              object: 'text_completion',
              created,
              model: name,
              choices: [{ text: text.value, index: 0, logprobs: null, finish_reason: result.finishReason }],
              usage: usage(result),
            });
          startStream();
          sse.write(chunk(rest, result.finishReason));
          if (body.includeUsage)
            sse.write(
              `data: ${JSON.stringify({ id, object: 'text_completion', created, model: name, choices: [], usage: usage(result) })}\n\n`,
            );
          sse.end('data: [DONE]\n\n');
          return reply;
        } catch (e) {
          const err = failedStep(toTandemError(e), 'generation');
          if (!streaming) return sendOpenAiError(reply, err);
          // Mid-stream: an error event (if anyone is still listening), then the end.
          if (!sse.closing) sse.end(`data: ${JSON.stringify(openAiError(err))}\n\n`);
          return reply;
        }
      },
    );
  };
}
