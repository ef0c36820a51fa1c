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

/** Prepared sequences recorded and replayed as CUDA graphs (src/devices/cuda/sequence-graphs.ts `stats`). */
export interface GraphStats {
  readonly captured: number;
  readonly replayed: number;
  readonly declined: number;
  readonly refused: number;
}

/** The sum of every CUDA device's sequence-graph counters (null without a CUDA device). */
export function graphStats(rt: { readonly devices: readonly Device[] }): GraphStats | null {
  const sum = { captured: 0, replayed: 0, declined: 0, refused: 0 };
  let found = false;
  for (const d of rt.devices) {
    const s = (d as { sequenceGraphs?: { stats?: GraphStats } }).sequenceGraphs?.stats;
    if (s === undefined) continue;
    found = true;
    sum.captured += s.captured;
    sum.replayed += s.replayed;
    sum.declined += s.declined;
    sum.refused += s.refused;
  }
  return found ? sum : null;
}
