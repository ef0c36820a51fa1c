/**
 * What per-job failure isolation costs a group commit: the same group of job inserts in one
 * transaction, plain (before: one failing row failed the whole group), with a SAVEPOINT/RELEASE around
 * each row (the textbook way to roll a failing row back alone), side by side in one process,
 * alternating rounds; and `JobStore.insertMany` as it is now (a try/catch per row: SQLite already
 * rolls back a failing statement alone, so no savepoint is needed), the figure a submission pays.
 *   node dist/bench/group-commit.js [--rounds 200] [--group 64] [--durability normal|full]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/service/store/db.js';
import { JobStore, newJobId, type NewJob } from '../src/service/store/job-store.js';
import { quantile } from './quantile.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '200' },
    group: { type: 'string', default: '64' },
    durability: { type: 'string', default: 'normal' },
  },
});
const rounds = Number(values.rounds);
const group = Number(values.group);
const dir = mkdtempSync(join(tmpdir(), 'tandem-group-'));
const db = openDatabase(dir, values.durability === 'full' ? 'full' : 'normal');
const store = new JobStore(db);

const job: NewJob = {
  tenantId: 't1',
  type: 'sleep',
  params: { ms: 0, steps: 1 },
  priority: 0,
  jobClass: 'latency',
  memBytes: 0,
  idempotencyKey: null,
};
const insert = db.prepare(
  `INSERT INTO jobs (id, tenant_id, type, params, priority, job_class, mem_bytes, state, idempotency_key, created_at)
   VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)`,
);
const row = (now: number): unknown[] => [
  newJobId(now),
  job.tenantId,
  job.type,
  JSON.stringify(job.params),
  job.priority,
  job.jobClass,
  job.memBytes,
  job.idempotencyKey,
  now,
];
const plain = db.transaction((n: number, now: number) => {
  for (let i = 0; i < n; i++) insert.run(...row(now));
});
const savepointed = db.transaction((n: number, now: number) => {
  for (let i = 0; i < n; i++) {
    db.exec('SAVEPOINT job');
    insert.run(...row(now));
    db.exec('RELEASE job');
  }
});

const variants: Record<string, () => void> = {
  'one transaction, no savepoints (before)': () => plain(group, Date.now()),
  'one transaction, a savepoint per row': () => savepointed(group, Date.now()),
  'JobStore.insertMany (now, per-row catch)': () => void store.insertMany(new Array<NewJob>(group).fill(job)),
};
const times = new Map<string, number[]>(Object.keys(variants).map((k) => [k, []]));
for (let r = 0; r < rounds + 10; r++)
  for (const [name, run] of Object.entries(variants)) {
    const t0 = performance.now();
    run();
    const us = ((performance.now() - t0) * 1000) / group;
    if (r >= 10) times.get(name)!.push(us); // the first rounds warm up
  }
console.log(`group of ${group} inserts, durability ${values.durability}, ${rounds} rounds each (µs per job)`);
const base = quantile(
  [...times.get('one transaction, no savepoints (before)')!].sort((a, b) => a - b),
  0.5,
);
for (const [name, ts] of times) {
  ts.sort((a, b) => a - b);
  const p50 = quantile(ts, 0.5);
  console.log(
    `  ${name.padEnd(42)} p50 ${p50.toFixed(2)}  p99 ${quantile(ts, 0.99).toFixed(2)}  (${(p50 / base).toFixed(2)}x)`,
  );
}
db.close();
rmSync(dir, { recursive: true, force: true });
