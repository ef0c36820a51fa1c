/**
 * A stand-in for libcuda/NVRTC/cuBLAS so the CUDA backend's own logic (completion polling, fault
 * reset, data-loss epochs, the launch path's JS cost) runs on machines without a GPU. Work "finishes"
 * when the test says so (`complete()`), and a fault is injected by setting `faultCode`.
 */
import type { Cublas } from '../../src/devices/cuda/ffi/cublas.js';
import { CudaDriver, type CudaDriverApi, type Out } from '../../src/devices/cuda/ffi/driver.js';
import type { Nvrtc } from '../../src/devices/cuda/ffi/nvrtc.js';
import { CudaContext } from '../../src/devices/cuda/context.js';
import { CudaDevice } from '../../src/devices/cuda/cuda-device.js';
import { ProgramCache } from '../../src/devices/cuda/program-cache.js';

export class FakeGpu {
  /** Events recorded and not yet completed. */
  readonly pendingEvents = new Set<number>();
  /** When set, cuEventQuery of a pending event returns this (e.g. 700, illegal address). */
  faultCode = 0;
  autoComplete = true;
  /** What the H200 does (driver 580): after an illegal address no context can be had in this process. */
  refuseRecovery = false;
  launches = 0;
  resets = 0;
  /** cuFuncSetAttribute calls: [function, attribute, value]. */
  readonly attributes: Array<[number, number, number]> = [];
  private next = 0x1000;
  private readonly handle = (o: Out<number>): number => {
    o[0] = this.next += 0x100;
    return 0;
  };

  readonly api: Partial<CudaDriverApi> = {
    cuDevicePrimaryCtxRetain: (o) => (this.refuseRecovery && this.resets > 0 ? 700 : this.handle(o)),
    cuCtxCreate_v4: () => (this.refuseRecovery ? 700 : 0),
    cuDevicePrimaryCtxReset_v2: () => {
      this.resets++;
      this.faultCode = 0;
      this.pendingEvents.clear();
      return 0;
    },
    cuStreamCreate: (o) => this.handle(o),
    cuMemAlloc_v2: (o, bytes) => (bytes > 2 ** 40 ? 2 : this.handle(o)),
    cuMemGetInfo_v2: (f, t) => {
      f[0] = 1 << 30;
      t[0] = 2 ** 31;
      return 0;
    },
    cuEventCreate: (o) => this.handle(o),
    cuEventRecord: (ev) => {
      this.pendingEvents.add(ev);
      return 0;
    },
    cuEventQuery: (ev) => {
      if (!this.pendingEvents.has(ev)) return 0;
      if (this.faultCode) return this.faultCode;
      if (this.autoComplete) {
        this.pendingEvents.delete(ev);
        return 0;
      }
      return 600;
    },
    cuModuleLoadData: (o) => this.handle(o),
    cuModuleGetFunction: (o) => this.handle(o),
    cuFuncSetAttribute: (fn, attribute, value) => {
      this.attributes.push([fn, attribute, value]);
      return 0;
    },
    cuLaunchKernel: () => {
      this.launches++;
      return 0;
    },
    cuGetErrorName: (rc, o) => {
      o[0] = rc === 700 ? 'CUDA_ERROR_ILLEGAL_ADDRESS' : `CUDA_ERROR_${rc}`;
      return 0;
    },
    cuGetErrorString: (_rc, o) => {
      o[0] = 'fake';
      return 0;
    },
  };

  complete(): void {
    this.pendingEvents.clear();
  }

  driver(): CudaDriver {
    const api = new Proxy(this.api, {
      get: (t, k: string) => t[k as keyof CudaDriverApi] ?? (() => 0),
    }) as CudaDriverApi;
    const d = Object.create(CudaDriver.prototype) as CudaDriver;
    Object.assign(d, { api, raw: {}, path: 'fake-libcuda' });
    return d;
  }

  /** `registerSabs`: page-lock large host SABs (off by default: most tests stage through pinned chunks). */
  device(registerSabs = false): CudaDevice {
    const driver = this.driver();
    const cublas = {
      create: () => 1,
      destroy: () => {},
      setStream: () => {},
      setWorkspace: () => {},
      gemmEx: () => {},
      version: () => 0,
    } as unknown as Cublas;
    const nvrtc = {
      version: 'fake',
      compile: () => ({ cubin: new Uint8Array(8), log: '', lowered: 'k' }),
    } as unknown as Nvrtc;
    const context = new CudaContext(driver, cublas, 0);
    context.open();
    const dev = new CudaDevice({
      id: 'cuda0',
      driver,
      context,
      programs: new ProgramCache(driver, nvrtc, 'sm_90', null),
      memoryBytes: 2 ** 31,
      smCount: 132,
      view: (_p, bytes) => new Uint8Array(bytes),
      registerSabs,
    });
    dev.info = {
      id: 'cuda0',
      kind: 'cuda',
      name: 'fake GPU',
      memoryBytes: 2 ** 31,
      peakFlops: {},
      details: {},
    };
    return dev;
  }
}
