/**
 * A simulated machine for the discrete-event simulator: CPU cores sharing host memory and GPUs with a
 * memory node each, timing tables for the run times and a bus model for the transfers. Workers are
 * real WorkerSlots (with inert queues) so the very same SchedulerPolicy objects drive them.
 */
import type { Device, ExecQueue, MemoryNode } from '../../devices/device.js';
import type { SimDeviceType, TimingTable } from '../../devices/sim/tables.js';
import { BusModel } from '../bus-model.js';
import type { WorkerSlot } from '../policies/policy.js';

export interface SimWorker extends WorkerSlot {
  readonly type: SimDeviceType;
}

export interface SimPlatform {
  readonly workers: SimWorker[];
  readonly nodes: number;
  readonly bus: BusModel;
  readonly table: TimingTable;
}

function node(index: number, name: string): MemoryNode {
  return {
    index,
    kind: index === 0 ? 'host' : 'sim',
    name,
    capacityBytes: Number.MAX_SAFE_INTEGER,
    alloc: () => {
      throw new Error('simulated node: no real memory');
    },
    free: () => undefined,
  };
}

function device(id: string, type: SimDeviceType, n: MemoryNode, queues: ExecQueue[]): Device {
  return {
    info: { id, kind: 'sim', name: `simulated ${type}`, memoryBytes: 0, peakFlops: {}, details: { type } },
    node: n,
    queues,
    caps: {},
    close: () => Promise.resolve(),
  };
}

const inertQueue = (id: string): ExecQueue => ({
  id,
  depth: 1,
  launch: () => {
    throw new Error('simulated queue: the simulator runs tasks itself');
  },
});

/** `cpus` cores on the host node plus `gpus` GPUs with one node each; bus from the table. */
export function simPlatform(table: TimingTable, cpus: number, gpus: number): SimPlatform {
  const host = node(0, 'host');
  const workers: SimWorker[] = [];
  const cpuQueues = Array.from({ length: cpus }, (_, i) => inertQueue(`cpu.core${i}`));
  const cpuDev = device('cpu0', 'cpu', host, cpuQueues);
  cpuQueues.forEach((q) =>
    workers.push({ index: workers.length, queue: q, device: cpuDev, node: host, inflight: 0, type: 'cpu' }),
  );
  const bus = new BusModel();
  bus.name(0, 'host');
  for (let g = 0; g < gpus; g++) {
    const n = node(g + 1, `gpu${g}`);
    bus.name(g + 1, n.name);
    const q = inertQueue(`gpu${g}`);
    workers.push({
      index: workers.length,
      queue: q,
      device: device(`gpu${g}`, 'gpu', n, [q]),
      node: n,
      inflight: 0,
      type: 'gpu',
    });
    bus.set(0, g + 1, { ...table.hostToGpu, source: 'table' });
    bus.set(g + 1, 0, { ...table.hostToGpu, source: 'table' });
    for (let h = 0; h < g; h++) {
      bus.set(h + 1, g + 1, { ...table.gpuToGpu, source: 'table' });
      bus.set(g + 1, h + 1, { ...table.gpuToGpu, source: 'table' });
    }
  }
  return { workers, nodes: gpus + 1, bus, table };
}
