/**
 * The CUDA completion poller's counters (src/devices/cuda/completion.ts `stats`), read from a device of
 * any backend: benches report how completion was observed and what its callbacks cost. Null for a device
 * without a poller (CPU, WebGPU, sim).
 */
import type { Device } from '../src/devices/device.js';

export interface PollStats {
  readonly immediatePolls: number;
  readonly timerPolls: number;
  readonly spins: number;
  /** Time spent in completion callbacks (the runtime's bookkeeping and the launches they release). */
  readonly callbackMs: number;
}

export function pollStats(device: Device | undefined): PollStats | null {
  return (device as { poller?: { stats?: PollStats } } | undefined)?.poller?.stats ?? null;
}
