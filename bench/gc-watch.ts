/**
 * What the garbage collector did during a measured stretch: scavenges (young generation) and
 * mark-compacts with their pause times from PerformanceObserver('gc'), and, from v8.GCProfiler's
 * before/after heap figures, how many bytes the stretch allocated on the JS heap and how many
 * survived each scavenge (a scavenge's cost grows with the survivors it copies, not with the garbage).
 * Cheap enough to leave on during a latency run: the observer's entries are delivered after the fact
 * and the profiler only records the figures V8 already has at each GC.
 */
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';

export interface GcSummary {
  scavenges: number;
  scavengeMs: number;
  maxScavengeMs: number;
  majors: number;
  majorMs: number;
  /** JS heap bytes allocated during the stretch (young and old, large objects included). */
  allocatedBytes: number;
  /** Mean bytes a scavenge kept: left in the young generation plus promoted to the old one. */
  survivedPerScavenge: number;
  /** Pauses as [start, end] in performance.now() milliseconds, to match against slow iterations. */
  pauses: Array<[number, number]>;
}

interface HeapFigures {
  heapStatistics: { usedHeapSize: number };
  heapSpaceStatistics: Array<{ spaceName: string; spaceUsedSize: number }>;
}
interface GcRecord {
  gcType: string;
  beforeGC: HeapFigures;
  afterGC: HeapFigures;
}

const YOUNG = new Set(['new_space', 'new_large_object_space']);
const young = (h: HeapFigures): number =>
  h.heapSpaceStatistics.reduce((s, x) => s + (YOUNG.has(x.spaceName) ? x.spaceUsedSize : 0), 0);

// Node's constant for a scavenge in PerformanceEntry.detail.kind (perf_hooks.constants.NODE_PERFORMANCE_GC_MINOR).
const GC_MINOR = 1;

/** Starts watching; `stop()` ends it and sums up. */
export function watchGc(): { stop(): GcSummary } {
  const entries: PerformanceEntry[] = [];
  const obs = new PerformanceObserver((list) => entries.push(...list.getEntries()));
  obs.observe({ entryTypes: ['gc'] });
  const prof = new GCProfiler();
  prof.start();
  const usedAtStart = process.memoryUsage().heapUsed;
  return {
    stop(): GcSummary {
      const usedAtEnd = process.memoryUsage().heapUsed;
      const stats = (prof.stop()?.statistics ?? []) as GcRecord[];
      // Entries queued but not yet delivered to the callback.
      entries.push(...obs.takeRecords());
      obs.disconnect();
      let freed = 0;
      let survived = 0;
      let scavengeRecords = 0;
      for (const r of stats) {
        freed += r.beforeGC.heapStatistics.usedHeapSize - r.afterGC.heapStatistics.usedHeapSize;
        if (r.gcType === 'Scavenge') {
          scavengeRecords++;
          const promoted = r.afterGC.heapStatistics.usedHeapSize - young(r.afterGC);
          const oldBefore = r.beforeGC.heapStatistics.usedHeapSize - young(r.beforeGC);
          survived += young(r.afterGC) + Math.max(0, promoted - oldBefore);
        }
      }
      const s: GcSummary = {
        scavenges: 0,
        scavengeMs: 0,
        maxScavengeMs: 0,
        majors: 0,
        majorMs: 0,
        allocatedBytes: usedAtEnd - usedAtStart + freed,
        survivedPerScavenge: scavengeRecords ? survived / scavengeRecords : 0,
        pauses: [],
      };
      for (const e of entries) {
        // `detail` is typed only in newer @types/node.
        const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
        s.pauses.push([e.startTime, e.startTime + e.duration]);
        if (kind === GC_MINOR) {
          s.scavenges++;
          s.scavengeMs += e.duration;
          s.maxScavengeMs = Math.max(s.maxScavengeMs, e.duration);
        } else {
          s.majors++;
          s.majorMs += e.duration;
        }
      }
      return s;
    },
  };
}

/** One line for a bench's output: "N scavenges, total X ms, max Y ms; ...". */
export function gcLine(s: GcSummary, iterations: number): string {
  const kib = (b: number): string => (b / 1024).toFixed(1);
  return (
    `${s.scavenges} scavenges, total ${s.scavengeMs.toFixed(2)} ms, max ${s.maxScavengeMs.toFixed(3)} ms` +
    (s.majors ? `; ${s.majors} mark-compact, ${s.majorMs.toFixed(2)} ms` : '') +
    `; ${kib(s.allocatedBytes / iterations)} KiB allocated per run, ` +
    `${kib(s.survivedPerScavenge)} KiB surviving per scavenge`
  );
}

/** How many of the slowest `n` iterations ([start, end] ms) overlap a GC pause. */
export function slowWithGc(
  spans: ReadonlyArray<readonly [number, number]>,
  pauses: ReadonlyArray<readonly [number, number]>,
  n: number,
): number {
  const slow = [...spans].sort((a, b) => b[1] - b[0] - (a[1] - a[0])).slice(0, n);
  return slow.filter(([s, e]) => pauses.some(([ps, pe]) => ps < e && pe > s)).length;
}
