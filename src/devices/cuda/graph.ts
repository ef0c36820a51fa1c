/**
 * CUDA graphs: a chain of small launches recorded once by stream capture and replayed with one
 * cuGraphLaunch, which removes the per-launch driver cost (about 5 us through koffi) from each kernel.
 */
import { TandemError } from '../../core/errors.js';
import type { Done, Scalars } from '../device.js';
import type { CompletionPoller } from './completion.js';
import type { CudaContext } from './context.js';
import type { CudaArg, CudaKernelImpl } from './kernel-api.js';
import type { Launcher } from './launcher.js';

/**
 * What a graph needs of its device (CudaDevice provides it). Declared here rather than importing
 * CudaDevice, which itself builds graphs: the two files would form an import cycle.
 */
export interface GraphDevice {
  readonly id: string;
  readonly context: CudaContext;
  readonly launcher: Launcher;
  readonly poller: CompletionPoller;
  /** The memory node's epoch: a graph recorded before a device reset is dead. */
  readonly node: { readonly epoch: number };
}

export type GraphLaunch = (impl: CudaKernelImpl, args: readonly CudaArg[], scalars: Scalars) => void;

const CU_STREAM_CAPTURE_MODE_RELAXED = 2;

export class CudaGraph {
  private destroyed = false;

  private constructor(
    private readonly device: GraphDevice,
    private readonly graph: number,
    private readonly exec: number,
    private readonly epoch: number,
    /** Kernels recorded in the graph. */
    readonly launches: number,
  ) {}

  /**
   * Records `body`'s launches. `scratch` hands out device memory for kernels that need it: it must stay
   * valid for as long as the graph may be replayed (the caller owns it; without `scratch` such kernels
   * refuse to be captured).
   */
  static capture(
    device: GraphDevice,
    body: (launch: GraphLaunch) => void,
    scratch?: (bytes: number) => number,
  ): CudaGraph {
    const ctx = device.context;
    const d = ctx.driver;
    ctx.makeCurrent();
    const stream = ctx.streams.compute;
    let launches = 0;
    d.check(d.api.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED), 'cuStreamBeginCapture_v2');
    ctx.capturing = true;
    try {
      body((impl, args, scalars) => {
        const check = device.launcher.run(
          impl,
          args,
          scalars,
          stream,
          scratch ??
            (() => {
              throw new TandemError(
                'TANDEM_ERR_INVALID_ARGUMENT',
                'kernels that need scratch memory cannot be captured in this CUDA graph',
              );
            }),
        );
        // A replay could not run the check (cuSOLVER reports a failed factorization in device memory).
        if (check !== null)
          throw new TandemError(
            'TANDEM_ERR_INVALID_ARGUMENT',
            'kernels that check their result after running cannot be captured in a CUDA graph',
          );
        launches++;
      });
    } catch (e) {
      // Always end the capture (or the stream stays in capture mode), and drop what was recorded.
      const out: [number] = [0];
      if (d.api.cuStreamEndCapture(stream, out) === 0 && out[0] !== 0) d.api.cuGraphDestroy(out[0]);
      throw e;
    } finally {
      ctx.capturing = false;
    }
    const graph = d.out1('cuStreamEndCapture', (o) => d.api.cuStreamEndCapture(stream, o));
    let exec: number;
    try {
      exec = d.out1('cuGraphInstantiateWithFlags', (o) => d.api.cuGraphInstantiateWithFlags(o, graph, 0));
    } catch (e) {
      d.api.cuGraphDestroy(graph);
      throw e;
    }
    return new CudaGraph(device, graph, exec, device.node.epoch, launches);
  }

  /** Replays the graph `times` times on the compute stream; `done` runs when the last replay finished. */
  launch(done: Done, times = 1): void {
    if (this.destroyed || this.epoch !== this.device.node.epoch) {
      queueMicrotask(() =>
        done(
          new TandemError(
            'TANDEM_ERR_DATA_LOST',
            `${this.device.id}: this CUDA graph was destroyed or lost in a device reset`,
          ),
        ),
      );
      return;
    }
    const ctx = this.device.context;
    ctx.makeCurrent();
    for (let i = 0; i < times; i++) {
      const rc = ctx.driver.api.cuGraphLaunch(this.exec, ctx.streams.compute);
      if (rc !== 0) {
        const err = ctx.driver.error(rc, 'cuGraphLaunch');
        queueMicrotask(() => done(err));
        return;
      }
    }
    this.device.poller.watch(ctx.streams.compute, done);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (this.epoch !== this.device.node.epoch) return; // died with the old context
    const ctx = this.device.context;
    ctx.makeCurrent();
    ctx.driver.api.cuGraphExecDestroy(this.exec);
    ctx.driver.api.cuGraphDestroy(this.graph);
  }
}
