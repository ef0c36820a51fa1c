/**
 * Bus model: bandwidth and latency per ordered pair of memory nodes, so that placement can weigh
 * "move the data" against "run where the data is". Measured through the backends' copy routes at
 * startup when calibrating, cached on disk by the pair's node and device names; a pair that was never
 * measured is reported as such and priced with a conservative assumption (PCIe-3-like: 10 GB/s,
 * 10 µs, the figures StarPU's sampling ships for sirocco).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CopyRoute, DeviceBuffer, MemoryNode } from '../devices/device.js';

export interface Link {
  /** Bytes per second. */
  readonly bandwidth: number;
  readonly latencyUs: number;
  readonly source: 'measured' | 'cache' | 'table' | 'assumed' | 'local';
}

export const ASSUMED_LINK: Link = { bandwidth: 10e9, latencyUs: 10, source: 'assumed' };
const LOCAL: Link = { bandwidth: Infinity, latencyUs: 0, source: 'local' };
const CACHE_VERSION = 1;

export class BusModel {
  private links: Link[][] = [];
  readonly names: string[] = [];

  set(from: number, to: number, link: Link): void {
    (this.links[from] ??= [])[to] = link;
  }

  name(index: number, name: string): void {
    this.names[index] = name;
  }

  link(from: number, to: number): Link {
    if (from === to) return LOCAL;
    return this.links[from]?.[to] ?? ASSUMED_LINK;
  }

  /** Expected time to move `bytes` from one node to another (µs). */
  transferUs(bytes: number, from: number, to: number): number {
    if (from === to || bytes === 0) return 0;
    const l = this.link(from, to);
    return l.latencyUs + (bytes / l.bandwidth) * 1e6;
  }

  pairs(): Array<{ from: string; to: string; link: Link }> {
    const out: Array<{ from: string; to: string; link: Link }> = [];
    this.links.forEach((row, i) =>
      row?.forEach((l, j) => {
        if (l) out.push({ from: this.names[i] ?? `node${i}`, to: this.names[j] ?? `node${j}`, link: l });
      }),
    );
    return out;
  }
}

function copyOnce(route: CopyRoute, src: DeviceBuffer, dst: DeviceBuffer, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    route.copy(src, dst, bytes, (err) => (err ? reject(err) : resolve((performance.now() - t0) * 1000)));
  });
}

async function medianOf(n: number, f: () => Promise<number>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await f());
  xs.sort((a, b) => a - b);
  return xs[n >> 1]!;
}

/** Times one route: a 4 KiB copy for latency, an 8 MiB one for bandwidth (medians of 5). */
export async function measureLink(route: CopyRoute, from: MemoryNode, to: MemoryNode): Promise<Link> {
  const big = 8 << 20;
  const small = 4096;
  const src = from.alloc(big);
  const dst = to.alloc(big);
  try {
    await copyOnce(route, src, dst, big); // warm-up (first-touch, pinning)
    const latencyUs = await medianOf(5, () => copyOnce(route, src, dst, small));
    const bigUs = await medianOf(5, () => copyOnce(route, src, dst, big));
    const bandwidth = big / (Math.max(bigUs - latencyUs, 1) / 1e6);
    return { bandwidth, latencyUs, source: 'measured' };
  } finally {
    from.free(src);
    to.free(dst);
  }
}

interface CacheFile {
  version: number;
  links: Record<string, { bandwidth: number; latencyUs: number }>;
}

/**
 * Fills `bus` for every ordered pair of `nodes` that has a route: from the cache, or measured when
 * `calibrate` is set (then cached). `deviceKey(node)` names what is behind a node (device model).
 */
export async function calibrateBus(
  bus: BusModel,
  nodes: readonly MemoryNode[],
  routes: readonly CopyRoute[],
  opts: {
    cacheDir: string;
    calibrate: boolean;
    deviceKey: (n: MemoryNode) => string;
    log: (m: string) => void;
  },
): Promise<void> {
  const file = join(opts.cacheDir, 'bus-model.json');
  let cache: CacheFile = { version: CACHE_VERSION, links: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as CacheFile;
    if (parsed.version === CACHE_VERSION && parsed.links && typeof parsed.links === 'object') cache = parsed;
    else opts.log(`${file}: stale version, the bus will be measured again`);
  } catch {
    // no cache yet (or unreadable): measure
  }
  let changed = false;
  for (const n of nodes) bus.name(n.index, n.name);
  for (const a of nodes) {
    for (const b of nodes) {
      if (a === b) continue;
      const route = routes.find((r) => r.from === a.kind && r.to === b.kind);
      if (!route) continue;
      const key = `${opts.deviceKey(a)}>${opts.deviceKey(b)}`;
      const hit = cache.links[key];
      if (hit && hit.bandwidth > 0 && hit.latencyUs >= 0) {
        bus.set(a.index, b.index, { ...hit, source: 'cache' });
        continue;
      }
      if (!opts.calibrate) continue;
      try {
        const l = await measureLink(route, a, b);
        bus.set(a.index, b.index, l);
        cache.links[key] = { bandwidth: l.bandwidth, latencyUs: l.latencyUs };
        changed = true;
      } catch (e) {
        opts.log(`bus calibration ${a.name} -> ${b.name} failed: ${(e as Error).message}`);
      }
    }
  }
  if (changed) {
    try {
      mkdirSync(opts.cacheDir, { recursive: true });
      writeFileSync(file, JSON.stringify(cache, null, 2));
    } catch (e) {
      opts.log(`cannot write ${file}: ${(e as Error).message}`);
    }
  }
}
