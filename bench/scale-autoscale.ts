/**
 * Autoscaling step response: no agents; a burst of jobs lands in the queue; the local autoscaler (same
 * signal as the Prometheus gauge) starts agents up to --max; the queue drains; after the idle window the
 * agents are stopped and the pool is back to zero. Prints the time of each step from the burst.
 * `node dist/bench/scale-autoscale.js [--jobs 400] [--job-ms 200] [--max 4] [--idle-ms 3000]`
 */
import { parseArgs } from 'node:util';
import { RedisAgentRegistry } from '../src/service/queue/heartbeat.js';
import { LocalAutoscaler, type ScaleEvent } from '../src/service/autoscale/local.js';
import { DEFAULT_POLICY, ScaleSignal } from '../src/service/autoscale/signal.js';
import { BullQueue } from '../src/service/queue/bullmq-queue.js';
import { startRedis } from '../test/scale/harness.js';
import { MAIN, sleep } from './scale-common.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '400' },
    'job-ms': { type: 'string', default: '200' },
    max: { type: 'string', default: '4' },
    'idle-ms': { type: 'string', default: '3000' },
  },
});

async function main(): Promise<void> {
  const r = await startRedis();
  if (!r.ok) throw new Error(r.reason);
  const prefix = 'auto';
  const queue = await BullQueue.open({ url: r.server.url, prefix });
  const events: ScaleEvent[] = [];
  const max = Number(values.max);
  const scaler = new LocalAutoscaler({
    queue,
    agents: new RedisAgentRegistry(queue.redis, prefix),
    signal: new ScaleSignal({
      ...DEFAULT_POLICY,
      min: 0,
      max,
      jobsPerAgent: 8,
      idleMs: Number(values['idle-ms']),
    }),
    deviceClass: 'cpu',
    agentCommand: [
      process.execPath,
      MAIN,
      'agent',
      '--queue',
      r.server.url,
      '--prefix',
      prefix,
      '--backends',
      'none',
      '--concurrency',
      '8',
    ],
    tickMs: 250,
    onEvent: (e) => events.push(e),
  });
  scaler.start();
  await sleep(1000);
  const t0 = Date.now();
  const N = Number(values.jobs);
  await queue.add(
    Array.from({ length: N }, (_, i) => ({
      id: `burst-${i}`,
      deviceClass: 'cpu',
      priority: 0,
      memBytes: 0,
      data: { type: 'sleep', params: { ms: Number(values['job-ms']) } },
    })),
  );
  let drainedAt = 0;
  for (;;) {
    const c = (await queue.counts(['cpu']))['cpu']!;
    if (!drainedAt && c.waiting + c.active + c.delayed === 0) drainedAt = Date.now();
    if (
      drainedAt &&
      scaler.live === 0 &&
      events.filter((e) => e.kind === 'exit').length >= events.filter((e) => e.kind === 'spawn').length
    )
      break;
    if (Date.now() - t0 > 120_000) break;
    await sleep(100);
  }
  const at = (pred: (e: ScaleEvent) => boolean) => {
    const e = events.find((x) => x.at >= t0 && pred(x));
    return e ? e.at - t0 : null;
  };
  const readies = events.filter((e) => e.kind === 'ready' && e.at >= t0).map((e) => e.at - t0);
  const row = {
    jobs: N,
    jobMs: Number(values['job-ms']),
    max,
    firstSpawnMs: at((e) => e.kind === 'spawn'),
    firstAgentReadyMs: readies[0] ?? null,
    allAgentsReadyMs: readies.length >= max ? readies[max - 1] : null,
    drainedMs: drainedAt ? drainedAt - t0 : null,
    firstStopMs: at((e) => e.kind === 'stop'),
    backToZeroMs: at((e) => e.kind === 'exit' && e.live === 0),
    peakAgents: Math.max(0, ...events.map((e) => e.live)),
  };
  console.log(JSON.stringify(row));
  await scaler.stop();
  await queue.close();
  await r.server.stop();
}

await main();
