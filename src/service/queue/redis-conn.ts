/**
 * Redis connections for BullMQ. At start an unreachable Redis is a clear TANDEM_ERR_UNAVAILABLE naming
 * the URL (a typo must not look like an idle queue); once connected, ioredis reconnects with capped
 * backoff and holds commands until it is back (maxRetriesPerRequest: null, which BullMQ workers need),
 * so a Redis restart delays work but loses nothing that was acknowledged.
 */
import { Redis } from 'ioredis';
import { TandemError } from '../../core/errors.js';
import { errorMessage, redactUrl } from './queue.js';

export type RedisConn = Redis;

export function newRedis(url: string): Redis {
  return new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // 100 ms, 200 ms, ... capped at 2 s: quick to come back after a blip, gentle during an outage.
    retryStrategy: (times: number) => Math.min(times * 100, 2000),
  });
}

/** Connects and pings within `timeoutMs`, or throws TANDEM_ERR_UNAVAILABLE naming the URL. */
export async function connectRedis(url: string, timeoutMs = 3000): Promise<Redis> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TandemError('TANDEM_ERR_CONFIG', `queue URL "${redactUrl(url)}" is not a URL`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:')
    throw new TandemError('TANDEM_ERR_CONFIG', `queue URL "${redactUrl(url)}" is not redis:// or rediss://`);
  const r = newRedis(url);
  let lastError = '';
  r.on('error', (e: unknown) => {
    lastError = errorMessage(e);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      r.connect().then(() => r.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(lastError || `no answer in ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return r;
  } catch (e) {
    r.disconnect();
    throw new TandemError(
      'TANDEM_ERR_UNAVAILABLE',
      `Redis at ${redactUrl(url)} is unreachable: ${lastError || errorMessage(e)}`,
      { url: redactUrl(url) },
    );
  } finally {
    clearTimeout(timer);
  }
}
