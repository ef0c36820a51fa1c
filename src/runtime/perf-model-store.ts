/**
 * Performance models on disk (`<cacheDir>/perf-models.json`), versioned. A file that does not parse,
 * has another version or malformed entries is ignored with a warning and rewritten from the new
 * measurements: a stale model must never silently steer placement.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BucketState, PerfModels } from './perf-model.js';

export const PERF_MODEL_VERSION = 1;
export const PERF_MODEL_FILE = 'perf-models.json';

interface FileEntry {
  op: string;
  footprint: string;
  device: string;
  bucket: BucketState;
}

function isEntry(x: unknown): x is FileEntry {
  if (!x || typeof x !== 'object') return false;
  const e = x as Record<string, unknown>;
  const b = e['bucket'] as Record<string, unknown> | undefined;
  return (
    typeof e['op'] === 'string' &&
    typeof e['footprint'] === 'string' &&
    typeof e['device'] === 'string' &&
    !!b &&
    typeof b['size'] === 'number' &&
    Array.isArray(b['ring']) &&
    (b['ring'] as unknown[]).every((v) => typeof v === 'number') &&
    typeof b['rejected'] === 'number' &&
    typeof b['total'] === 'number'
  );
}

export function modelFile(cacheDir: string): string {
  return join(cacheDir, PERF_MODEL_FILE);
}

/** Loads what the file holds into `models`; returns the number of buckets, or a warning. */
export function loadModels(file: string, models: PerfModels): { loaded: number; warning?: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { loaded: 0 }; // no file yet: nothing to warn about
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return {
      loaded: 0,
      warning: `${file} is corrupt (${(e as Error).message}); ignoring it, models will be rebuilt`,
    };
  }
  const p = parsed as { version?: unknown; entries?: unknown };
  if (p?.version !== PERF_MODEL_VERSION) {
    return {
      loaded: 0,
      warning: `${file} has version ${JSON.stringify(p?.version)}, expected ${PERF_MODEL_VERSION}; ignoring it, models will be rebuilt`,
    };
  }
  if (!Array.isArray(p.entries) || !p.entries.every(isEntry)) {
    return { loaded: 0, warning: `${file} has malformed entries; ignoring it, models will be rebuilt` };
  }
  for (const e of p.entries) models.import(e.op, e.footprint, e.device, e.bucket);
  return { loaded: p.entries.length };
}

/** Writes atomically (temp file + rename) so a crash mid-write leaves the old file intact. */
export function saveModels(file: string, models: PerfModels): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(
    tmp,
    JSON.stringify({
      version: PERF_MODEL_VERSION,
      savedAt: new Date().toISOString(),
      entries: models.export(),
    }),
  );
  renameSync(tmp, file);
  models.dirty = false;
}
