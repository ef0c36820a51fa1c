/**
 * Small jobs per second through the scaled-out queue with 4 agent processes on this machine.
 *   queue-only: jobs (sleep 0 ms) go into BullMQ, agents run them and hand the result back to the queue.
 *   with store: the same jobs also stored in PostgreSQL first; each agent opens and commits the attempt
 *               there (two statements per job), so the figure includes exactly-once bookkeeping.
 * `node dist/bench/scale-throughput.js [--jobs 50000] [--agents 4] [--concurrency 64] [--pack 1] [--store]`
 * --pack N: up to N small jobs per BullMQ job (BullQueueOptions.pack).
 */
import { parseArgs } from 'node:util';
import { BullQueue } from '../src/service/queue/bullmq-queue.js';
import type { QueueJobSpec } from '../src/service/queue/queue.js';
import { PgJobStore } from '../src/service/store/pg-store.js';
import { startPostgres, startRedis, type Server } from '../test/scale/harness.js';
import { jobsRan, sleep, startAgent, stopAgent, type AgentProc } from './scale-common.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '50000' },
    agents: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '64' },
    store: { type: 'boolean', default: false },
    pack: { type: 'string', default: '1' },
  },
});
const N = Number(values.jobs);
const AGENTS = Number(values.agents);

async function main(): Promise<void> {
  const r = await startRedis();
  if (!r.ok) throw new Error(r.reason);
  let pgs: Server | null = null;
  if (values.store) {
    const p = await startPostgres();
    if (!p.ok) throw new Error(p.reason);
    pgs = p.server;
  }
  const prefix = 'bench';
  const queue = await BullQueue.open({
    url: r.server.url,
    prefix,
    keepCompleted: 0,
    pack: Number(values.pack),
  });
  const store = pgs ? await PgJobStore.open(pgs.url, 4) : null;
  const agents: AgentProc[] = [];
  for (let i = 0; i < AGENTS; i++)
    agents.push(
      await startAgent(`a${i}`, [
        '--queue',
        r.server.url,
        '--prefix',
        prefix,
        '--concurrency',
        String(values.concurrency),
        ...(pgs ? ['--pg', pgs.url] : []),
      ]),
    );
  const t0 = performance.now();
  const CHUNK = 10_000;
  for (let off = 0; off < N; off += CHUNK) {
    const n = Math.min(CHUNK, N - off);
    let specs: QueueJobSpec[];
    if (store) {
      const ins = await store.insertMany(
        Array.from({ length: n }, () => ({
          tenantId: 'bench',
          type: 'sleep',
          params: { ms: 0 },
          priority: 0,
          jobClass: 'latency',
          memBytes: 0,
          idempotencyKey: null,
        })),
      );
      specs = ins.map((o) => {
        if (!o.ok) throw o.error;
        return { id: o.job.id, deviceClass: 'cpu', priority: 0, memBytes: 0, data: {} };
      });
    } else
      specs = Array.from({ length: n }, (_, i) => ({
        id: `j${off + i}`,
        deviceClass: 'cpu',
        priority: 0,
        memBytes: 0,
        data: { type: 'sleep', params: { ms: 0 } },
      }));
    await queue.add(specs);
  }
  const tAdded = performance.now();
  for (;;) {
    const c = (await queue.counts(['cpu']))['cpu']!;
    if (c.waiting + c.active + c.delayed === 0) break;
    await sleep(20);
  }
  const t1 = performance.now();
  let committed = N;
  if (store) {
    const s = await store.stats();
    committed = s.counts.succeeded;
  }
  const secs = (t1 - t0) / 1000;
  const row = {
    mode: store ? 'queue + PostgreSQL commit' : 'queue only',
    jobs: N,
    agents: AGENTS,
    concurrency: Number(values.concurrency),
    pack: Number(values.pack),
    addSeconds: +((tAdded - t0) / 1000).toFixed(2),
    seconds: +secs.toFixed(2),
    jobsPerSecond: Math.round(N / secs),
    committed,
  };
  await Promise.all(agents.map((a) => stopAgent(a)));
  console.log(JSON.stringify({ ...row, ranByAgents: agents.reduce((s, a) => s + jobsRan(a), 0) }));
  await queue.close();
  await store?.close();
  await r.server.stop();
  await pgs?.stop();
}

await main();
