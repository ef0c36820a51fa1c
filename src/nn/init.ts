/** Seeded parameter initialisers (host-side: a model is built once, then lives on its devices). */
import { seededRandom } from '../core/seeded-random.js';

export function uniform(n: number, bound: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (2 * rnd() - 1) * bound;
  return out;
}

/** Normal(0, std) by Box–Muller. */
export function normal(n: number, std: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = 1 - rnd();
    const r = Math.sqrt(-2 * Math.log(u)) * std;
    const a = 2 * Math.PI * rnd();
    out[i] = r * Math.cos(a);
    if (i + 1 < n) out[i + 1] = r * Math.sin(a);
  }
  return out;
}

export function constant(n: number, value: number): Float32Array {
  return new Float32Array(n).fill(value);
}
