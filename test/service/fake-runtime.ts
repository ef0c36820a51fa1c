/**
 * A stand-in runtime for service tests: one "cpu0" device, float64 host tensors and a naive GEMM run
 * asynchronously, with observer events like the real runtime's. It lets the service tests run fast
 * and deterministically on any machine; one test also runs against the real Runtime when it opens.
 */
import {
  hostView,
  toNumbers,
  fromNumbers,
  bytesPerElement,
  type DType,
  type HostArray,
} from '../../src/core/dtype.js';
import { TandemError } from '../../src/core/errors.js';
import { nowUs, type Observer } from '../../src/obs/observer.js';
import type { ServiceRuntimeHost } from '../../src/service/service.js';

interface FakeTensor {
  readonly shape: number[];
  readonly dtype: DType;
  data: Float64Array;
}

export interface FakeRuntimeOptions {
  /** Extra milliseconds every task takes (for cancellation and health-under-load tests). */
  readonly taskDelayMs?: number;
  /** Corrupt results (to test the reference check). */
  readonly wrongResults?: boolean;
}

export function fakeRuntime(opts: FakeRuntimeOptions = {}): ServiceRuntimeHost & { tasksRun: number } {
  const observers: Observer[] = [];
  let nextTask = 1;
  let used = 0;
  const rt = {
    tasksRun: 0,
    devices: [
      {
        info: {
          id: 'cpu0',
          kind: 'cpu',
          name: 'fake cpu',
          memoryBytes: 1 << 30,
          peakFlops: { f32: 1e9 },
          details: {},
        },
        node: { name: 'host' },
      },
    ],
    backends: [{ kind: 'cpu', available: true, devices: [], copies: [] }],
    tensor(shape: number[], dtype: DType = 'f32', data?: HostArray): FakeTensor {
      const n = shape.reduce((a, b) => a * b, 1);
      used += n * bytesPerElement(dtype);
      return { shape: [...shape], dtype, data: data ? toNumbers(dtype, data) : new Float64Array(n) };
    },
    submit(req: {
      kernel: string;
      args: Record<string, FakeTensor>;
      name?: string;
      tags?: Record<string, string>;
      device?: string;
    }) {
      const id = nextTask++;
      if (req.kernel !== 'gemm') throw new TandemError('TANDEM_ERR_UNKNOWN_KERNEL', req.kernel);
      if (req.device && req.device !== 'cpu' && req.device !== 'cpu0')
        throw new TandemError('TANDEM_ERR_NO_DEVICE', `no device ${req.device}`);
      const { a, b, c } = req.args as { a: FakeTensor; b: FakeTensor; c: FakeTensor };
      const submitUs = nowUs();
      const done = new Promise<void>((resolve) => {
        setTimeout(() => {
          const startUs = nowUs();
          const base = {
            taskId: id,
            name: req.name ?? 'gemm',
            op: 'gemm',
            deviceId: 'cpu0',
            queueId: 'cpu0/q0',
            submitUs,
            readyUs: submitUs,
            startUs,
            flops: 0,
            bytes: 0,
            ok: true,
            endUs: startUs,
            ...(req.tags ? { tags: req.tags } : {}),
          };
          for (const o of observers) o.onTaskStart?.(base);
          const [m, k] = a.shape as [number, number];
          const n = b.shape[1]!;
          for (let i = 0; i < m; i++)
            for (let j = 0; j < n; j++) {
              let s = 0;
              for (let q = 0; q < k; q++) s += a.data[i * k + q]! * b.data[q * n + j]!;
              c.data[i * n + j] = opts.wrongResults ? s + 1 : s;
            }
          rt.tasksRun++;
          const endUs = nowUs();
          for (const o of observers) {
            o.onTransfer?.({
              tensorId: 1,
              bytes: m * k * 4,
              from: 'host',
              to: 'host',
              engine: 'copy',
              startUs,
              endUs: startUs + 1,
              ...(req.tags ? { tags: req.tags } : {}),
            });
            o.onTaskEnd?.({ ...base, endUs, flops: 2 * m * n * k });
          }
          resolve();
        }, opts.taskDelayMs ?? 0);
      });
      return { id, name: req.name ?? 'gemm', state: 'ready', error: null, done, deviceId: 'cpu0' };
    },
    async read(t: FakeTensor): Promise<HostArray> {
      const out = hostView(
        t.dtype,
        new ArrayBuffer(t.data.length * bytesPerElement(t.dtype)),
        0,
        t.data.length,
      );
      fromNumbers(t.dtype, t.data, out);
      return out;
    },
    async write() {},
    free(t: FakeTensor) {
      used -= t.data.length * bytesPerElement(t.dtype);
    },
    registerKernel() {},
    memoryUsage: () => [
      {
        node: 'host',
        kind: 'host',
        usedBytes: used,
        budgetBytes: 1 << 30,
        capacityBytes: 1 << 30,
        peakBytes: used,
        allocations: 0,
      },
    ],
    addObserver: (o: Observer) => observers.push(o),
    removeObserver: (o: Observer) => {
      const i = observers.indexOf(o);
      if (i >= 0) observers.splice(i, 1);
    },
    async close() {},
  };
  return rt as unknown as ServiceRuntimeHost & { tasksRun: number };
}
