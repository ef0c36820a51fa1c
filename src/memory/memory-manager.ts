/**
 * Byte accounting and the out-of-memory path for every memory node, once, above the backends:
 * budget check → ask the node to trim its caches → evict clean replicas (least recently used) →
 * fail with requested / available / capacity.
 */
import { TandemError, formatBytes } from '../core/errors.js';
import type { DeviceBuffer, MemoryNode } from '../devices/device.js';

export interface Evictor {
  /** Try to free at least `bytes` on `node`; returns bytes freed. */
  evict(node: MemoryNode, bytes: number): number;
}

export interface NodeUsage {
  readonly node: string;
  readonly kind: string;
  readonly usedBytes: number;
  readonly budgetBytes: number;
  readonly capacityBytes: number;
  readonly peakBytes: number;
  readonly allocations: number;
}

class NodeAccount {
  used = 0;
  peak = 0;
  allocations = 0;
  constructor(
    readonly node: MemoryNode,
    public budget: number,
  ) {}
}

export class MemoryManager {
  private readonly accounts: NodeAccount[] = [];
  evictor: Evictor | null = null;

  attach(node: MemoryNode, budgetBytes?: number): void {
    node.index = this.accounts.length;
    this.attached.push(node);
    this.accounts.push(
      new NodeAccount(node, Math.min(budgetBytes ?? node.capacityBytes, node.capacityBytes)),
    );
  }

  get nodes(): readonly MemoryNode[] {
    return this.accounts.map((a) => a.node);
  }

  /** The nodes by index, one array kept up to date (unlike `nodes`, no new one per call: per-copy lookups). */
  get nodeList(): readonly MemoryNode[] {
    return this.attached;
  }
  private readonly attached: MemoryNode[] = [];

  setBudget(node: MemoryNode, bytes: number): void {
    this.account(node).budget = bytes;
  }

  private account(node: MemoryNode): NodeAccount {
    const a = this.accounts[node.index];
    if (!a || a.node !== node)
      throw new TandemError('TANDEM_ERR_INTERNAL', `memory node ${node.name} is not attached`);
    return a;
  }

  alloc(node: MemoryNode, bytes: number): DeviceBuffer {
    const a = this.account(node);
    if (a.used + bytes > a.budget) {
      const need = a.used + bytes - a.budget;
      if (this.evictor) this.evictor.evict(node, need);
    }
    if (a.used + bytes > a.budget) throw this.oom(a, bytes, 'over the node budget');
    let buf: DeviceBuffer;
    try {
      buf = node.alloc(bytes);
    } catch (first) {
      // A backend's own refusal (over an adapter limit, device lost) is not an out-of-memory case.
      if (first instanceof TandemError && first.code !== 'TANDEM_ERR_OUT_OF_MEMORY') throw first;
      // The device itself is out: drop cached blocks and clean replicas, then try once more.
      node.trim?.();
      if (this.evictor) this.evictor.evict(node, bytes);
      try {
        buf = node.alloc(bytes);
      } catch (second) {
        if (second instanceof TandemError && second.code !== 'TANDEM_ERR_OUT_OF_MEMORY') throw second;
        throw this.oom(a, bytes, second instanceof Error ? second.message : String(first));
      }
    }
    a.used += bytes;
    a.allocations++;
    if (a.used > a.peak) a.peak = a.used;
    return buf;
  }

  free(buf: DeviceBuffer): void {
    const a = this.account(buf.node);
    a.used -= buf.bytes;
    buf.node.free(buf);
  }

  usage(): NodeUsage[] {
    return this.accounts.map((a) => ({
      node: a.node.name,
      kind: a.node.kind,
      usedBytes: a.used,
      budgetBytes: a.budget,
      capacityBytes: a.node.capacityBytes,
      peakBytes: a.peak,
      allocations: a.allocations,
    }));
  }

  usedBytes(node: MemoryNode): number {
    return this.account(node).used;
  }

  budgetBytes(node: MemoryNode): number {
    return this.account(node).budget;
  }

  private oom(a: NodeAccount, bytes: number, why: string): TandemError {
    const available = Math.max(0, a.budget - a.used);
    return new TandemError(
      'TANDEM_ERR_OUT_OF_MEMORY',
      `cannot allocate ${formatBytes(bytes)} on ${a.node.name}: ${formatBytes(available)} available of ` +
        `${formatBytes(a.budget)} (${why})`,
      {
        node: a.node.name,
        requestedBytes: bytes,
        availableBytes: available,
        budgetBytes: a.budget,
        capacityBytes: a.node.capacityBytes,
      },
    );
  }
}
