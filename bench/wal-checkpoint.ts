/**
 * The job store's commits with SQLite's automatic WAL checkpoint (on the committing thread) against the
 * service's background checkpointer (store/checkpointer.ts): a ?wait job's two commits (insert already
 * running, then finish), one job after another with an event-loop turn between, p50/p99/max of each and
 * of their sum, and the WAL file's size.
 *   node dist/bench/wal-checkpoint.js [--jobs 20000] [--durability normal|full] [--mode auto|background]
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { WalCheckpointer } from '../src/service/store/checkpointer.js';
import { openDatabase } from '../src/service/store/db.js';
import { JobStore } from '../src/service/store/job-store.js';
import { quantile } from './quantile.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    durability: { type: 'string', default: 'normal' },
    mode: { type: 'string', default: 'background' },
    // Event-loop time between a job's commits and between jobs (what HTTP and the run take).
    gapUs: { type: 'string', default: '300' },
  },
});
const jobs = Number(values.jobs);
const gapUs = Number(values.gapUs);
const dir = mkdtempSync(join(tmpdir(), 'tandem-wal-'));
const db = openDatabase(dir, values.durability === 'full' ? 'full' : 'normal');
const ckpt =
  values.mode === 'background'
    ? new WalCheckpointer(db, { log: (l, m) => console.error(`[${l}] ${m}`) })
    : null;
const store = new JobStore(db);
const wal = join(dir, 'tandem.sqlite-wal');
const walSize = (): number => {
  try {
    return statSync(wal).size;
  } catch {
    return 0;
  }
};
const spin = (us: number): void => {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
};
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const params = { spot: 100, strike: 100, rate: 0.05, vol: 0.2, maturity: 1, paths: 1000, seed: 1 };
const ins: number[] = [];
const fin: number[] = [];
const both: number[] = [];
let maxWal = 0;
for (let k = 0; k < jobs; k++) {
  const t0 = performance.now();
  const [o] = store.insertMany(
    [
      {
        tenantId: 't',
        type: 'option',
        params: { ...params, seed: k },
        priority: 0,
        jobClass: 'latency',
        memBytes: 0,
        idempotencyKey: null,
      },
    ],
    Date.now(),
    [{ device: 'cpu0', placement: 'rule latency=cpu' }],
  );
  const t1 = performance.now();
  await turn();
  spin(gapUs / 2);
  const t2 = performance.now();
  if (!o?.ok) throw new Error('insert failed');
  store.finish(o.job.id, 1, {
    state: 'succeeded',
    result: { price: 10.4 + k * 1e-6, stdError: 0.46, analytic: 10.45, paths: 1000 },
  });
  const t3 = performance.now();
  ins.push(t1 - t0);
  fin.push(t3 - t2);
  both.push(t1 - t0 + (t3 - t2));
  await turn();
  spin(gapUs / 2);
  if (k % 500 === 0) maxWal = Math.max(maxWal, walSize());
}
maxWal = Math.max(maxWal, walSize());
const fmt = (a: number[]): string => {
  a.sort((x, y) => x - y);
  const q = (p: number): number => quantile(a, p);
  return `p50 ${q(0.5).toFixed(3)} p99 ${q(0.99).toFixed(3)} p99.9 ${q(0.999).toFixed(3)} max ${a[a.length - 1]!.toFixed(3)} ms`;
};
console.log(
  `${jobs} jobs, durability ${values.durability}, checkpoints ${values.mode}: insert ${fmt(ins)}; finish ${fmt(fin)}; insert+finish ${fmt(both)}; WAL max ${(maxWal / 2 ** 20).toFixed(1)} MiB, at the end ${(walSize() / 2 ** 20).toFixed(1)} MiB`,
);
if (ckpt) {
  const r = await ckpt.checkpointNow();
  console.log(`a last checkpoint: ${r.copied} of ${r.walFrames} frames in the database file`);
  await ckpt.close();
}
db.close();
rmSync(dir, { recursive: true, force: true });
