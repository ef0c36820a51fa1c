/**
 * Two builds of the service side by side in one process: submit and get through inject() (no socket),
 * interleaved in rounds so machine noise falls on both alike; medians and the ratio B/A. For a route
 * change, A = a build of main, B = this tree (autocannon's socket figures: bench/service.ts).
 * Usage: node dist/bench/service-ab.js <root A> <root B> [normal|full] [--rounds 15]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

interface Injected {
  json(): unknown;
}
interface AnyService {
  app: { inject(o: object): Promise<Injected> };
  bootstrapKey: { key: string } | null;
  close(): Promise<void>;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '15' } },
});
const [rootA, rootB, durability = 'normal'] = positionals;
if (!rootA || !rootB) throw new Error('usage: service-ab.js <root A> <root B> [normal|full]');
const N = 1000;
const CONC = 64;

async function open(root: string) {
  const abs = resolve(root);
  const { loadServiceConfig } = (await import(join(abs, 'dist/src/service/config.js'))) as {
    loadServiceConfig(env: object, o: object): object;
  };
  const { createService } = (await import(join(abs, 'dist/src/service/service.js'))) as {
    createService(c: object, o: object): Promise<AnyService>;
  };
  const dir = mkdtempSync(join(tmpdir(), 'tandem-ab-'));
  const svc = await createService(
    loadServiceConfig(
      {},
      {
        dataDir: dir,
        logLevel: 'silent',
        durability,
        maxRunningJobs: 1,
        rateLimitPerSec: 1e8,
        rateLimitBurst: 1e8,
        quotas: { maxConcurrentJobs: 4, maxDeviceMemoryBytes: 2 ** 40, maxQueuedJobs: 1e8 },
      },
    ),
    { runtime: null },
  );
  const auth = { authorization: `Bearer ${svc.bootstrapKey?.key ?? ''}` };
  return { root, svc, dir, auth, submit: [] as number[], get: [] as number[] };
}
type Side = Awaited<ReturnType<typeof open>>;

async function inParallel(count: number, one: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < count) await one(next++);
    }),
  );
  return count / ((performance.now() - t0) / 1000);
}

async function round(s: Side): Promise<void> {
  const ids: string[] = [];
  s.submit.push(
    await inParallel(N, async () => {
      const r = await s.svc.app.inject({
        method: 'POST',
        url: '/v1/jobs',
        headers: s.auth,
        payload: { type: 'sleep', params: { ms: 1 } },
      });
      ids.push((r.json() as { id: string }).id);
    }),
  );
  s.get.push(
    await inParallel(N, async (i) => {
      await s.svc.app.inject({ url: `/v1/jobs/${ids[i]}`, headers: s.auth });
    }),
  );
}

const sides = [await open(rootA), await open(rootB)];
for (let i = 0; i < 3; i++) for (const s of sides) await round(s);
for (const s of sides) {
  s.submit = [];
  s.get = [];
}
const rounds = Number(values.rounds);
for (let i = 0; i < rounds; i++) for (const s of i % 2 ? sides : [...sides].reverse()) await round(s);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const [a, b] = sides.map((s) => ({
  root: s.root,
  submitPerSec: Math.round(median(s.submit)),
  getPerSec: Math.round(median(s.get)),
}));
for (const s of sides) {
  await s.svc.close();
  rmSync(s.dir, { recursive: true, force: true });
}
console.log(
  JSON.stringify({
    durability,
    rounds,
    jobsPerRound: N,
    concurrency: CONC,
    a,
    b,
    ratio: {
      submit: +(b!.submitPerSec / a!.submitPerSec).toFixed(3),
      get: +(b!.getPerSec / a!.getPerSec).toFixed(3),
    },
  }),
);
