/**
 * Next-token choice from one row of logits: greedy (temperature 0), or a draw from the softmax at a
 * temperature restricted to the top-k tokens and then to the smallest set whose probability reaches
 * top-p (the order Hugging Face's and vLLM's samplers apply them). Draws come from a per-sequence
 * seeded generator, so a request with a seed gets the same tokens every time.
 */
import { TandemError } from '../../core/errors.js';
import { seededRandom } from '../../core/seeded-random.js';

export interface SamplingOptions {
  /** 0 (default): greedy. Otherwise logits are divided by it before the softmax. */
  readonly temperature?: number;
  /** Keep only the k most likely tokens (0 or absent: all). */
  readonly topK?: number;
  /** Keep the most likely tokens until their probability reaches p (1 or absent: all). */
  readonly topP?: number;
  /** Seed of the sequence's draws (absent: a random seed). */
  readonly seed?: number;
}

export function checkSampling(o: SamplingOptions): void {
  const bad = (what: string): never => {
    throw new TandemError('TANDEM_ERR_INVALID_ARGUMENT', what);
  };
  if (o.temperature !== undefined && !(Number.isFinite(o.temperature) && o.temperature >= 0))
    bad(`temperature must be a finite number ≥ 0, got ${o.temperature}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 0))
    bad(`top_k must be an integer ≥ 0, got ${o.topK}`);
  if (o.topP !== undefined && !(Number.isFinite(o.topP) && o.topP > 0 && o.topP <= 1))
    bad(`top_p must be in (0, 1], got ${o.topP}`);
  if (o.seed !== undefined && !(Number.isInteger(o.seed) && o.seed >= 0 && o.seed < 2 ** 53))
    bad(`seed must be an integer in [0, 2^53), got ${o.seed}`);
}

/** The index of the largest logit (the first one on ties; NaN never wins). */
export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  let bestV = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (v > bestV) {
      bestV = v;
      best = i;
    }
  }
  return best;
}

/** The k largest entries as [index, value], largest first (ties: lower index first). */
export function topEntries(logits: ArrayLike<number>, k: number): Array<[number, number]> {
  const n = Math.min(k, logits.length);
  const heap: Array<[number, number]> = [];
  // A small sorted buffer: k is at most a few hundred, the row up to 50k.
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (Number.isNaN(v)) continue;
    if (heap.length === n && v <= heap[n - 1]![1]) continue;
    let j = heap.length < n ? heap.length : n - 1;
    if (heap.length < n) heap.push([i, v]);
    while (j > 0 && heap[j - 1]![1] < v) {
      heap[j] = heap[j - 1]!;
      j--;
    }
    heap[j] = [i, v];
  }
  return heap;
}

/** A sampler for one sequence: holds its generator, so successive tokens continue one stream. */
export class Sampler {
  private readonly random: () => number;

  constructor(readonly options: SamplingOptions = {}) {
    checkSampling(options);
    this.random = seededRandom(options.seed ?? Math.floor(Math.random() * 2 ** 32));
  }

  get greedy(): boolean {
    return (this.options.temperature ?? 0) === 0;
  }

  next(logits: ArrayLike<number>): number {
    if (this.greedy) return argmax(logits);
    const temperature = this.options.temperature!;
    const k = this.options.topK ?? 0;
    const candidates =
      k > 0
        ? topEntries(logits, k)
        : Array.from(logits, (v, i): [number, number] => [i, v]).filter(([, v]) => !Number.isNaN(v));
    if (candidates.length === 0) return argmax(logits);
    let max = -Infinity;
    for (const [, v] of candidates) max = Math.max(max, v);
    let sum = 0;
    const probs = candidates.map(([i, v]): [number, number] => {
      const p = Math.exp((v - max) / temperature);
      sum += p;
      return [i, p];
    });
    let kept = probs;
    const topP = this.options.topP ?? 1;
    if (topP < 1) {
      kept = [...probs].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
      let acc = 0;
      let cut = kept.length;
      for (let i = 0; i < kept.length; i++) {
        acc += kept[i]![1] / sum;
        if (acc >= topP) {
          cut = i + 1;
          break;
        }
      }
      kept = kept.slice(0, cut);
      sum = kept.reduce((s, [, p]) => s + p, 0);
    }
    let u = this.random() * sum;
    for (const [i, p] of kept) {
      u -= p;
      if (u < 0) return i;
    }
    return kept[kept.length - 1]![0];
  }
}
