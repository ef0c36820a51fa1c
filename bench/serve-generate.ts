/**
 * B.8: continuous batching for generation. 256 concurrent requests (prompt 32 tokens, max_new uniform in
 * [16, 256], seeded) arrive at once; the engine admits them at iteration level and each leaves when done.
 * Output tokens/s and time-to-first-token p50/p99, in-process through the engine and (with --http) over
 * /v1/completions (streamed, the clients on --client-threads worker threads); with --torch, bench/torch/static_generate.py's figures for the same requests and the
 * ratios. --write-requests FILE writes the request set (for the PyTorch side) and exits.
 *   node dist/bench/serve-generate.js [--weights W] [--requests FILE] [--torch FILE] [--http]
 *       [--client-threads 4] [--no-plans] [--preset gpt2] [--precision bf16] [--device cuda0] [--count 256] [--prompt 32] [--min-new 16] [--max-new 256]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, intOption } from '../src/cli/output.js';
import { seededRandom } from '../src/core/seeded-random.js';
import { loadParameters } from '../src/nn/checkpoint.js';
import { Nn, type Precision } from '../src/nn/context.js';
import { GptInference } from '../src/nn/inference/index.js';
import { Gpt, gptConfig } from '../src/nn/models/gpt.js';
import { Runtime } from '../src/runtime/runtime.js';
import { GenerationEngine } from '../src/service/serving/generation/engine.js';
import { gptModelFactory } from '../src/service/serving/models/gpt.js';
import { type RequestSet, type RunFigures, runOverHttp } from './serve-generate-http.js';

const { values } = parse(process.argv.slice(2), {
  weights: { type: 'string' },
  requests: { type: 'string' },
  'write-requests': { type: 'string' },
  torch: { type: 'string' },
  http: { type: 'boolean' },
  'client-threads': { type: 'string' },
  // No kept plans (each decode step built and submitted anew): the A/B for the decode plans.
  'no-plans': { type: 'boolean' },
  preset: { type: 'string', default: 'gpt2' },
  precision: { type: 'string', default: 'bf16' },
  device: { type: 'string', default: 'cuda0' },
  count: { type: 'string' },
  prompt: { type: 'string' },
  'min-new': { type: 'string' },
  'max-new': { type: 'string' },
  seed: { type: 'string' },
});

const config = gptConfig(String(values['preset']));
const count = intOption(values['count'], 'count', 256);
const promptLen = intOption(values['prompt'], 'prompt', 32);
const minNew = intOption(values['min-new'], 'min-new', 16);
const maxNew = intOption(values['max-new'], 'max-new', 256);

function makeRequests(): RequestSet {
  const rnd = seededRandom(intOption(values['seed'], 'seed', 8));
  return {
    prompts: Array.from({ length: count }, () =>
      Array.from({ length: promptLen }, () => Math.floor(rnd() * config.vocab)),
    ),
    maxNew: Array.from({ length: count }, () => minNew + Math.floor(rnd() * (maxNew - minNew + 1))),
  };
}

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

function report(system: string, f: RunFigures, extra: Record<string, unknown> = {}): Record<string, number> {
  const line = {
    tokens: f.tokens,
    wallS: Number(f.wallS.toFixed(3)),
    tokPerSec: Number((f.tokens / f.wallS).toFixed(1)),
    ttftP50Ms: Number(pct(f.ttftMs, 50).toFixed(1)),
    ttftP99Ms: Number(pct(f.ttftMs, 99).toFixed(1)),
  };
  console.log(JSON.stringify({ system, ...line, ...extra }));
  return line;
}

if (values['write-requests'] !== undefined) {
  writeFileSync(String(values['write-requests']), JSON.stringify(makeRequests()));
  process.exit(0);
}
const reqs: RequestSet =
  values['requests'] !== undefined
    ? (JSON.parse(readFileSync(String(values['requests']), 'utf8')) as RequestSet)
    : makeRequests();
const precision = String(values['precision']) as Precision;
const device = String(values['device']);
const maxLength = Math.max(...reqs.prompts.map((p, i) => p.length + reqs.maxNew[i]!));
const rt = await Runtime.create({ backends: [device.replace(/\d+$/, '')], log: () => undefined });
try {
  const model = new Gpt(new Nn(rt, { precision, device, seed: 1 }), config);
  if (values['weights'] !== undefined) await loadParameters(model, String(values['weights']));
  const plans = values['no-plans'] === true ? { plans: { maxRows: 0 } } : {};
  const engine = new GenerationEngine(new GptInference(model, undefined, plans), {
    maxSequences: reqs.prompts.length,
    maxLength,
    prefillTokensPerStep: 1 << 16,
    place: () => ({ device }),
  });
  // Warm-up: the whole request set once (kernels compiled; GEMM heuristics for the prefill size and for
  // every decode size from 256 rows down to 1 cached), reported as the cold run.
  const cold = performance.now();
  const coldResults = await Promise.all(
    reqs.prompts.map((prompt, i) => engine.generate({ prompt, maxTokens: reqs.maxNew[i]! })),
  );
  report('tandem-engine-cold', {
    tokens: coldResults.reduce((s, r) => s + r.tokens.length, 0),
    wallS: (performance.now() - cold) / 1000,
    ttftMs: coldResults.map((r) => r.firstTokenMs),
  });
  const before = engine.stats();
  const t0 = performance.now();
  const results = await Promise.all(
    reqs.prompts.map((prompt, i) => engine.generate({ prompt, maxTokens: reqs.maxNew[i]! })),
  );
  const wallS = (performance.now() - t0) / 1000;
  const inProcess = report(
    'tandem-engine',
    {
      tokens: results.reduce((s, r) => s + r.tokens.length, 0),
      wallS,
      ttftMs: results.map((r) => r.firstTokenMs),
    },
    {
      requests: results.length,
      steps: engine.stats().steps - before.steps,
      // Per step: wall time to its tokens, and the synchronous part (building and enqueueing its kernels).
      stepMs: Number(
        ((engine.stats().stepMs - before.stepMs) / (engine.stats().steps - before.steps)).toFixed(3),
      ),
      submitMs: Number(
        ((engine.stats().submitMs - before.submitMs) / (engine.stats().steps - before.steps)).toFixed(3),
      ),
      precision,
      plans: values['no-plans'] !== true,
      cacheMiB: engine.stats().cacheBytes / 2 ** 20,
    },
  );
  await engine.close();
  if (values['http'] === true) {
    const served = await gptModelFactory.create(
      {
        name: 'gpt2-bench',
        version: 1,
        kind: 'gpt',
        config: {
          preset: String(values['preset']),
          precision,
          tokenizer: 'none',
          generation: { maxSequences: reqs.prompts.length, maxLength, maxWaiting: 4 * reqs.prompts.length },
        },
        ...(values['weights'] !== undefined ? { weightsPath: String(values['weights']) } : {}),
        placement: { kinds: [device.startsWith('cuda') ? 'cuda' : 'cpu'] },
      },
      rt,
    );
    try {
      const threads = intOption(values['client-threads'], 'client-threads', 4);
      report('tandem-http', await runOverHttp(rt, served, reqs, threads), { clientThreads: threads });
    } finally {
      await served.unload();
    }
  }
  if (values['torch'] !== undefined) {
    const lines = readFileSync(String(values['torch']), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'));
    const t = JSON.parse(lines.at(-1)!) as { tokPerSec: number; ttftP50Ms: number; ttftP99Ms: number };
    console.log(
      JSON.stringify({
        ratio: 'tandem-engine / pytorch-static',
        tokPerSec: Number((inProcess.tokPerSec! / t.tokPerSec).toFixed(2)),
        ttftP50: Number((inProcess.ttftP50Ms! / t.ttftP50Ms).toFixed(2)),
        goal: 'tokPerSec >= 2 and ttftP50 < 1',
      }),
    );
  }
} finally {
  await rt.close();
}
