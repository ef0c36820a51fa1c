/**
 * Least-recently-used eviction of replicas under memory pressure (the MemoryManager's Evictor).
 * Candidates are replicas on the node that no dispatched task uses (`users`) and that no copy is
 * filling (`pending`): stale buffers first (free to drop), then clean copies with another valid copy
 * elsewhere, oldest `lastUse` first. A device's only valid copy (dirty) is written back to host
 * memory first; when the copy route completes at once the buffer is freed in the same call, else it
 * becomes clean and evictable on the next pressure. The host's own last copies are never evicted.
 *
 * Because a task pins all its replicas before fetching any, a task needing two buffers never evicts
 * one of its own to load the other (the ping-pong livelock of StarPU #38): either both fit with the
 * others evicted, or the allocation fails with TANDEM_ERR_OUT_OF_MEMORY and the numbers.
 */
import type { MemoryNode } from '../devices/device.js';
import type { Coherence } from './coherence.js';
import type { Evictor } from './memory-manager.js';
import type { Replica, Tensor } from './tensor.js';

interface Candidate {
  readonly t: Tensor;
  readonly r: Replica;
  /** 0 stale, 1 clean with another copy, 2 dirty (needs write-back). */
  readonly cls: number;
}

export class LruEvictor implements Evictor {
  evictions = 0;
  writebacks = 0;
  bytesEvicted = 0;
  /** Write-backs started and not finished (asynchronous copy routes). */
  inFlight = 0;
  /** Called when a write-back finished: its device copy is clean and evictable now. */
  onWriteback: (() => void) | null = null;

  constructor(
    private readonly coherence: Coherence,
    private readonly tensors: () => Iterable<Tensor>,
  ) {}

  evict(node: MemoryNode, bytes: number): number {
    const host = this.coherence.host;
    const cands: Candidate[] = [];
    for (const t of this.tensors()) {
      const r = t.replicas[node.index];
      if (!r || !r.buffer || r.users > 0 || r.pending) continue;
      if (r.state === 'I') {
        cands.push({ t, r, cls: 0 });
        continue;
      }
      let others = 0;
      for (let j = 0; j < t.replicas.length; j++) {
        const o = t.replicas[j];
        if (j !== node.index && o && o.state !== 'I' && !o.pending) others++;
      }
      if (others > 0) cands.push({ t, r, cls: 1 });
      else if (node !== host && !t.lostReason) cands.push({ t, r, cls: 2 });
    }
    cands.sort((a, b) => a.cls - b.cls || a.r.lastUse - b.r.lastUse);
    let freed = 0;
    for (const c of cands) {
      if (freed >= bytes) break;
      if (c.cls === 2) {
        this.writebacks++;
        this.inFlight++;
        this.coherence.acquireRead(c.t, host, () => {
          this.inFlight--;
          this.onWriteback?.();
        });
        // A synchronous route has finished: the device copy is clean now.
        if (c.r.state === 'I' || c.r.pending || c.r.users > 0) continue;
        const hostCopy = c.t.replicas[host.index];
        if (!hostCopy || hostCopy.state === 'I' || hostCopy.pending) continue;
      }
      freed += this.drop(c.t, c.r);
    }
    return freed;
  }

  private drop(t: Tensor, r: Replica): number {
    const b = r.buffer!;
    this.coherence.memory.free(b);
    r.buffer = null;
    r.state = 'I';
    this.evictions++;
    this.bytesEvicted += b.bytes;
    void t;
    return b.bytes;
  }
}
