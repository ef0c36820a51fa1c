/** The service's CLI commands end to end against a spawned `tandem serve` (no devices: sleep jobs). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { tempDir } from './helpers.js';

const MAIN = join(process.cwd(), 'dist', 'src', 'cli', 'main.js');
const run = promisify(execFile);

void test(
  'tandem submit --wait, jobs, status, cancel, trace, keys against a running service',
  { timeout: 60_000 },
  async () => {
    const dir = tempDir('tandem-cli-');
    const child = spawn(
      process.execPath,
      [MAIN, 'serve', '--port', '0', '--data-dir', dir, '--backends', 'none', '--max-running', '1', '--json'],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`tandem serve exited with ${code} before answering`)));
      });
      const url = (JSON.parse(line) as { url: string }).url;
      const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
      const env = { ...process.env, TANDEM_URL: url, TANDEM_KEY: key };
      const cli = async (...args: string[]) =>
        (await run(process.execPath, [MAIN, ...args], { env, cwd: dir })).stdout;

      const waited = JSON.parse(
        await cli('submit', 'sleep', '--param', 'ms=50', '--param', 'steps=2', '--wait', '--json'),
      ) as {
        job: { id: string; state: string };
        result: { sleptMs: number };
      };
      assert.equal(waited.job.state, 'succeeded');
      assert.equal(waited.result.sleptMs, 50);

      const long = JSON.parse(
        await cli('submit', 'sleep', '-p', 'ms=60000', '--priority', '3', '--json'),
      ) as { id: string };
      const jobs = JSON.parse(await cli('jobs', '--json')) as { id: string }[];
      assert.deepEqual(jobs.map((j) => j.id).sort(), [waited.job.id, long.id].sort());
      assert.match(await cli('jobs'), /ID\s+TYPE\s+TENANT\s+STATE/);
      assert.match(await cli('status', waited.job.id), /succeeded/);
      const cancelled = JSON.parse(await cli('cancel', long.id, '--json')) as { outcome: string };
      assert.ok(['cancelled', 'cancelling'].includes(cancelled.outcome));

      const out = join(dir, 'trace.json');
      await cli('trace', waited.job.id, '-o', out);
      assert.ok(existsSync(out));
      const trace = JSON.parse(readFileSync(out, 'utf8')) as { traceEvents: { name: string }[] };
      assert.ok(trace.traceEvents.some((e) => e.name === 'run sleep'));

      // Without -o the trace goes under .tandem/traces of the working directory, not into it.
      const traced = JSON.parse(await cli('trace', waited.job.id, '--json')) as { file: string };
      assert.equal(traced.file, join(dir, '.tandem', 'traces', `${waited.job.id}.trace.json`));
      assert.ok(existsSync(traced.file));

      // The job types with their schemas, from the service named by TANDEM_URL.
      const types = JSON.parse(await cli('types', '--json')) as {
        source: string;
        types: { name: string; params: Record<string, unknown> }[];
      };
      assert.equal(types.source, url);
      assert.ok(types.types.some((t) => t.name === 'sleep' && t.params['type'] === 'object'));

      const created = JSON.parse(await cli('keys', 'create', 'carol', '--weight', '2', '--json')) as {
        key: string;
        tenant: { name: string };
      };
      assert.equal(created.tenant.name, 'carol');
      const asCarol = await run(process.execPath, [MAIN, 'jobs', '--json'], {
        env: { ...env, TANDEM_KEY: created.key },
      });
      assert.deepEqual(JSON.parse(asCarol.stdout), [], "carol does not see the admin's jobs");

      // An unknown job type is answered with the closest known one (from the service's list).
      const typo = await run(process.execPath, [MAIN, 'submit', 'gemmm'], { env }).catch(
        (e: { code: number; stderr: string }) => e,
      );
      assert.equal((typo as { code: number }).code, 2);
      assert.match(
        (typo as { stderr: string }).stderr,
        /TANDEM_ERR_UNKNOWN_JOB_TYPE: unknown job type "gemmm" \(did you mean gemm\?\)/,
      );

      // Errors keep their codes and exit non-zero.
      const bad = await run(process.execPath, [MAIN, 'submit', 'gemm', '--param', 'n=999999', '--json'], {
        env,
      }).catch((e: { code: number; stdout: string }) => e);
      assert.equal((bad as { code: number }).code, 2);
      assert.match((bad as { stdout: string }).stdout, /TANDEM_ERR_INVALID_ARGUMENT/);
    } finally {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
