/**
 * Host tensors are SharedArrayBuffers, which Node allocates zero-filled (calloc). glibc serves a large
 * calloc from fresh mmap pages (already zero, touched later by whoever writes them) only while the
 * size is above its mmap threshold, and that threshold grows to the size of the largest block freed
 * (up to 32 MiB). After the first big tensor is freed, new ones of that size come from the heap and
 * calloc zero-fills them on the calling thread: ~50 ms for 16 MiB on the VMs measured (page first-touch
 * ~14 µs per 4 KiB), a stall of the event loop on every job that makes a big tensor. Fixing the
 * threshold at 128 KiB keeps every large buffer on fresh pages (allocating 16 MiB: 52 ms -> 0.2 ms).
 * Linux/glibc only; elsewhere, or with TANDEM_MALLOC_TUNING=0, nothing changes. koffi is loaded here
 * and only here, lazily: the runtime imports this module, and a missing native library must not stop a
 * runtime from starting (as with the backends, which load theirs on demand).
 */
import { createRequire } from 'node:module';

const M_MMAP_THRESHOLD = -3;
let done = false;

/** Returns whether glibc's mmap threshold is now fixed at `bytes` (once per process). */
export function freshPagesForLargeBuffers(bytes = 128 * 1024): boolean {
  if (done) return true;
  if (process.platform !== 'linux' || process.env['TANDEM_MALLOC_TUNING'] === '0') return false;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const mallopt = koffi.load('libc.so.6').func('int mallopt(int param, int value)') as (
      param: number,
      value: number,
    ) => number;
    done = mallopt(M_MMAP_THRESHOLD, bytes) === 1;
  } catch {
    done = false; // no koffi binary here, or not glibc (musl has no such tuning)
  }
  return done;
}
