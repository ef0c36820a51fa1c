/**
 * Per-task runtime overhead of this build beside another build of Tandem (the "before"), both loaded in
 * this one process and measured alternately (these 2-core machines are shared and noisy: only a
 * side-by-side in one run means anything). Empty tasks as in bench/overhead.ts: independent, one chain,
 * 8 chains; then this build with two share groups competing (the fair-sharing path).
 *
 *   node dist/bench/overhead-ab.js --base /path/to/other/dist [--tasks 50000] [--rounds 15]
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Runtime } from '../src/runtime/runtime.js';
import { quantile } from './quantile.js';

interface Submitter {
  submit(req: { kernel: string; deps?: unknown[] }): unknown;
  idle(): Promise<void>;
  close(): Promise<void>;
}

async function measure(rts: readonly Submitter[], tasks: number, chains: number): Promise<number> {
  const t0 = performance.now();
  const last: unknown[] = new Array<unknown>(chains).fill(undefined);
  for (let i = 0; i < tasks; i++) {
    const c = i % Math.max(1, chains);
    const prev = chains > 0 ? last[c] : undefined;
    // Several submitters (share views) take turns task by task.
    const t = rts[i % rts.length]!.submit(prev ? { kernel: 'noop', deps: [prev] } : { kernel: 'noop' });
    if (chains > 0) last[c] = t;
  }
  await rts[0]!.idle();
  return ((performance.now() - t0) * 1e3) / tasks;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      base: { type: 'string' },
      tasks: { type: 'string', default: '50000' },
      rounds: { type: 'string', default: '15' },
    },
  });
  if (!values.base) throw new Error('--base <dist directory of the other build> is required');
  const url = pathToFileURL(resolve(values.base, 'src/runtime/runtime.js')).href;
  const other = (await import(url)) as { Runtime: { create(c: object): Promise<Submitter> } };
  const opts = { backends: ['cpu'], calibrate: false, scheduler: 'eager', log: () => undefined };
  const base = await other.Runtime.create(opts);
  const mine = await Runtime.create(opts);
  const shared = [mine.withShare('a'), mine.withShare('b')] as unknown as Submitter[];
  const n = Number(values.tasks);
  const patterns: [string, number][] = [
    ['independent', 0],
    ['one chain', 1],
    ['8 chains', 8],
  ];
  const runs = new Map<string, number[]>();
  const add = (k: string, us: number): void => void (runs.get(k) ?? runs.set(k, []).get(k)!).push(us);
  await measure([base], 20_000, 0);
  await measure([mine as unknown as Submitter], 20_000, 0);
  for (let r = 0; r < Number(values.rounds); r++)
    for (const [p, c] of patterns) {
      const order = r % 2 ? ['this', 'base'] : ['base', 'this'];
      for (const k of order)
        add(`${k} ${p}`, await measure(k === 'base' ? [base] : [mine as unknown as Submitter], n, c));
    }
  // After the single-group rounds (a runtime enters the fair path for good once a group shows up).
  for (let r = 0; r < Number(values.rounds); r++)
    for (const [p, c] of patterns) add(`shared ${p}`, await measure(shared, n, c));
  const med = (k: string): number =>
    quantile(
      [...runs.get(k)!].sort((a, b) => a - b),
      0.5,
    );
  console.log('pattern       base µs/task  this µs/task  this/base   this, 2 share groups µs/task (medians)');
  for (const [p] of patterns)
    console.log(
      `${p.padEnd(14)}${med(`base ${p}`).toFixed(2).padStart(12)}${med(`this ${p}`).toFixed(2).padStart(14)}` +
        `${(med(`this ${p}`) / med(`base ${p}`)).toFixed(3).padStart(11)}${med(`shared ${p}`).toFixed(2).padStart(14)}`,
    );
  await base.close();
  await mine.close();
}

await main();
