/**
 * `sleep`: a job that holds a slot for `ms` without touching a device. It measures the service's own
 * overhead (queue, dispatch, commit) and exercises cancellation and restarts in tests.
 */
import { TandemError } from '../../../core/errors.js';
import { defineJobType } from '../job-type.js';

export interface SleepParams {
  readonly ms: number;
  readonly steps: number;
}

export const sleepJob = defineJobType<SleepParams>({
  name: 'sleep',
  description: 'Waits ms milliseconds in steps (service overhead, cancellation and restart tests).',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ms: { type: 'integer', minimum: 0, maximum: 600_000, default: 0 },
      steps: { type: 'integer', minimum: 1, maximum: 1000, default: 1 },
    },
  },
  parse: (raw) => ({ ms: Number(raw['ms'] ?? 0), steps: Number(raw['steps'] ?? 1) }),
  memoryBytes: () => 0,
  jobClass: () => 'latency',
  defaultTimeoutSeconds: 120,
  async run(ctx) {
    const { ms, steps } = ctx.params;
    for (let i = 0; i < steps; i++) {
      await new Promise<void>((resolve, reject) => {
        if (ctx.signal.aborted) return reject(new TandemError('TANDEM_ERR_CANCELLED', 'cancelled'));
        const timer = setTimeout(() => {
          ctx.signal.removeEventListener('abort', onAbort);
          resolve();
        }, ms / steps);
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while sleeping'));
        };
        ctx.signal.addEventListener('abort', onAbort, { once: true });
      });
      ctx.progress((i + 1) / steps, `step ${i + 1}/${steps}`);
    }
    return { sleptMs: ms, steps };
  },
});
