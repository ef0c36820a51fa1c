/** Small pieces job types share: needing a runtime, and waiting for tasks while honouring a cancel. */
import { TandemError } from '../../../core/errors.js';
import type { JobContext, ServiceRuntime } from '../job-type.js';

export function requireRuntime<P>(ctx: JobContext<P>): ServiceRuntime {
  if (!ctx.rt)
    throw new TandemError('TANDEM_ERR_DEVICE_UNAVAILABLE', 'the service has no runtime (no device opened)');
  return ctx.rt;
}

/**
 * Resolves with `work`, or on abort waits for `drain` (tasks already on a device cannot be pulled back;
 * their tensors must not be freed under them) and then rejects with TANDEM_ERR_CANCELLED.
 */
export async function awaitOrAbort<T>(
  work: Promise<T>,
  signal: AbortSignal,
  drain: Promise<unknown>,
): Promise<T> {
  if (signal.aborted) {
    await drain;
    throw new TandemError('TANDEM_ERR_CANCELLED', 'cancelled');
  }
  let onAbort: (() => void) | null = null;
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const winner = await Promise.race([work, aborted]);
    if (winner === 'aborted' && signal.aborted) {
      await drain;
      throw new TandemError('TANDEM_ERR_CANCELLED', 'cancelled while its tasks were running');
    }
    return winner as T;
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
