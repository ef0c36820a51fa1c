/**
 * The runtime clock, shared by every layer that stamps events (memory's copies, the executor's tasks,
 * simulated devices), so their timestamps line up on one trace.
 */

/** Microseconds on the runtime clock (performance.now() * 1000). */
export function nowUs(): number {
  return performance.now() * 1000;
}
