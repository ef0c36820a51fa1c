/**
 * Issue 3 end to end on a real GPU: a supervised `tandem serve` runs a custom CUDA kernel that writes to
 * an illegal address. That job fails with TANDEM_ERR_DEVICE_FAULT, exactly once; on a driver that keeps
 * the fault sticky for the process (the H200's: every new context is refused) the server drains and its
 * supervisor relaunches it on the same URL; either way a later `gemm` job on the GPU succeeds.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../service/helpers.js';
import { apiClient, startServe } from '../service/serve-process.js';
import { openCuda } from './cuda-harness.js';

const status = await openCuda();
const skip = status.available && status.devices.length > 0 ? false : (status.reason ?? 'no CUDA device');
if (skip) console.log(`# skip service fault test: ${skip}`);

const FAULT_SOURCE =
  'extern "C" __global__ void tdm_fault(float* p) { *(volatile float*)(p + (1ll << 44)) = 1.0f; }';

interface Job {
  id: string;
  state: string;
  attempt: number;
  error: { code: string; message: string; details?: Record<string, unknown> } | null;
  result?: { devices?: string[]; check?: { ok: boolean } } | null;
}

void describe('service: a faulting CUDA kernel under the supervisor', { skip }, () => {
  void it(
    'fails the faulting job with TANDEM_ERR_DEVICE_FAULT, relaunches, and a later cuda gemm succeeds',
    { timeout: 180_000 },
    async (t) => {
      const dir = tempDir('tandem-gpu-fault-');
      // Warnings logged: a failure's message, which quotes stderr, then shows what the devices did.
      const serve = startServe(dir, ['--backends', 'cuda,cpu', '--no-calibrate'], { TANDEM_LOG: 'warn' });
      try {
        const first = await serve.next(60_000);
        const key = readFileSync(join(dir, 'admin-key.txt'), 'utf8').trim();
        // Retries connection errors: the server is away for a moment while it is relaunched.
        const call = apiClient(first.url, key, { retryConnectionErrors: 300 });
        const finished = async (id: string, timeoutMs = 120_000): Promise<Job> => {
          const deadline = Date.now() + timeoutMs;
          for (;;) {
            const job = await call<Job>('GET', `/v1/jobs/${id}`);
            if (['succeeded', 'failed', 'cancelled'].includes(job.state)) return job;
            if (Date.now() > deadline)
              throw new Error(`job ${id} still ${job.state}; stderr:\n${serve.stderr()}`);
            await new Promise((r) => setTimeout(r, 100));
          }
        };

        const before = await finished(
          (await call<Job>('POST', '/v1/jobs', { type: 'gemm', params: { n: 256, device: 'cuda' } })).id,
        );
        assert.equal(
          before.state,
          'succeeded',
          `the GPU works before the fault: ${JSON.stringify(before.error)}`,
        );

        const faulting = await call<Job>('POST', '/v1/jobs', {
          type: 'custom-kernel',
          params: {
            language: 'cuda',
            source: FAULT_SOURCE,
            entry: 'tdm_fault',
            tensors: [{ name: 'p', shape: [256], dtype: 'f32', mode: 'rw' }],
            params: [{ tensor: 'p' }],
            grid: [1],
            block: [1],
          },
        });
        const faulted = await finished(faulting.id);
        assert.equal(faulted.state, 'failed');
        assert.equal(faulted.error?.code, 'TANDEM_ERR_DEVICE_FAULT', faulted.error?.message);
        assert.match(faulted.error?.message ?? '', /ILLEGAL_ADDRESS/);
        const sticky = faulted.error?.details?.['resetError'] !== undefined;
        if (sticky) {
          const relaunched = await serve.next(120_000);
          assert.equal(relaunched.url, first.url, 'relaunched on the same URL');
          assert.equal(relaunched.restarts, 1);
          assert.notEqual(relaunched.pid, first.pid);
          assert.match(serve.stderr(), /stopped for a relaunch: cuda0 lost/);
          assert.match(serve.stderr(), /asked for a relaunch/);
        } else {
          t.diagnostic('the driver recovered the context in-process: no relaunch was needed');
        }

        const after = await finished(
          (await call<Job>('POST', '/v1/jobs', { type: 'gemm', params: { n: 1024, device: 'cuda' } })).id,
        );
        assert.equal(after.state, 'succeeded', `${JSON.stringify(after.error)}\nstderr:\n${serve.stderr()}`);
        // A job's record carries no result; the result route does.
        const { result } = await call<{ result: Job['result'] }>('GET', `/v1/jobs/${after.id}/result`);
        assert.ok(result?.devices?.includes('cuda0'), JSON.stringify(result));
        assert.equal(result?.check?.ok, true);
        const again = await call<Job>('GET', `/v1/jobs/${faulting.id}`);
        assert.equal(again.state, 'failed');
        assert.equal(again.attempt, 1, 'the faulting job was not run again');
        const health = await call<{ status: string }>('GET', '/healthz');
        assert.equal(health.status, 'ok');

        serve.kill('SIGTERM');
        assert.equal(await serve.exited, 0);
      } finally {
        serve.kill();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
