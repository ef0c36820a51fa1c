/**
 * Kill-an-agent chaos: N jobs (sleep 200-800 ms) through BullMQ to 4 agent processes that commit to
 * PostgreSQL; every --kill-every ms a random agent is killed with -9 and a fresh one started. At the end:
 * jobs lost (not succeeded), jobs committed more than once, duplicate executions, and per stalled job the
 * time from the kill to its re-run on another agent.
 * `node dist/bench/scale-chaos.js [--jobs 1000] [--agents 4] [--kill-every 2000] [--concurrency 8]`
 */
import { parseArgs } from 'node:util';
import { BullQueue } from '../src/service/queue/bullmq-queue.js';
import { PgJobStore } from '../src/service/store/pg-store.js';
import { startPostgres, startRedis } from '../test/scale/harness.js';
import { pct, sleep, startAgent, stopAgent, type AgentProc } from './scale-common.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    agents: { type: 'string', default: '4' },
    'kill-every': { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '8' },
    timeout: { type: 'string', default: '180000' },
  },
});
const N = Number(values.jobs);

async function main(): Promise<void> {
  const r = await startRedis();
  if (!r.ok) throw new Error(r.reason);
  const p = await startPostgres();
  if (!p.ok) throw new Error(p.reason);
  const prefix = 'chaos';
  const queue = await BullQueue.open({ url: r.server.url, prefix });
  const store = await PgJobStore.open(p.server.url, 4);
  const args = [
    '--queue',
    r.server.url,
    '--pg',
    p.server.url,
    '--prefix',
    prefix,
    '--concurrency',
    String(values.concurrency),
  ];
  let next = 0;
  const live: AgentProc[] = [];
  const killedAt = new Map<string, number>();
  for (let i = 0; i < Number(values.agents); i++) live.push(await startAgent(`a${next++}`, args));

  const ins = await store.insertMany(
    Array.from({ length: N }, (_, i) => ({
      tenantId: 'chaos',
      type: 'sleep',
      params: { ms: 200 + ((i * 7919) % 600), steps: 4 },
      priority: 0,
      jobClass: 'latency',
      memBytes: 0,
      idempotencyKey: null,
    })),
  );
  const jobs = ins.map((o) =>
    o.ok
      ? o.job
      : (() => {
          throw o.error;
        })(),
  );
  const t0 = Date.now();
  await queue.add(
    jobs.map((j) => ({ id: j.id, deviceClass: 'cpu', priority: 0, memBytes: 0, data: {}, attempts: 5 })),
  );
  let kills = 0;
  const deadline = t0 + Number(values.timeout);
  let lastKill = Date.now();
  for (;;) {
    const s = await store.stats();
    if (s.counts.succeeded + s.counts.failed >= N || Date.now() > deadline) break;
    if (Date.now() - lastKill >= Number(values['kill-every']) && s.counts.queued > 0) {
      lastKill = Date.now();
      const victim = live.splice(Math.floor(Math.random() * live.length), 1)[0]!;
      victim.child.kill('SIGKILL');
      killedAt.set(victim.name, Date.now());
      kills++;
      live.push(await startAgent(`a${next++}`, args));
    }
    await sleep(100);
  }
  const seconds = (Date.now() - t0) / 1000;
  const stats = await store.stats();
  const perJob = await store.query<{ job_id: string; committed: string }>(
    `SELECT job_id, COUNT(*) FILTER (WHERE outcome IN ('succeeded', 'failed', 'cancelled')) AS committed
     FROM tandem_attempts GROUP BY job_id`,
  );
  const committedTwice = perJob.rows.filter((x) => Number(x.committed) > 1).length;
  const lostAttempts = await store.query<{
    job_id: string;
    agent: string;
    attempt: number;
    next_start: string;
  }>(
    `SELECT a.job_id, a.agent, a.attempt, b.started_at AS next_start FROM tandem_attempts a
     JOIN tandem_attempts b ON b.job_id = a.job_id AND b.attempt = a.attempt + 1
     WHERE a.outcome = 'lost'`,
  );
  const recovery = lostAttempts.rows
    .map((x) => Number(x.next_start) - (killedAt.get(x.agent) ?? NaN))
    .filter((x) => Number.isFinite(x))
    .sort((a, b) => a - b);
  const row = {
    jobs: N,
    seconds: +seconds.toFixed(1),
    kills,
    succeeded: stats.counts.succeeded,
    lost: N - stats.counts.succeeded,
    committedMoreThanOnce: committedTwice,
    duplicateExecutions: stats.duplicateExecutions,
    stalledJobsRecovered: recovery.length,
    recoveryMs: { min: recovery[0], p50: pct(recovery, 50), p95: pct(recovery, 95), max: recovery.at(-1) },
  };
  console.log(JSON.stringify(row));
  await Promise.all(live.map((a) => stopAgent(a)));
  await queue.close();
  await store.close();
  await r.server.stop();
  await p.server.stop();
}

await main();
