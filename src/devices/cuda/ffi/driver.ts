/**
 * Typed koffi bindings of the CUDA driver API (CUDA 13 `cuda.h`: the `_v2` symbols are the real ones).
 * Handles (contexts, streams, events, modules, functions, graphs) and device pointers are passed as
 * 64-bit integers: that keeps every hot call free of koffi object marshalling, and host/device
 * addresses stay below 2^53 on x86-64.
 */
import koffi from 'koffi';
import { TandemError } from '../../../core/errors.js';
import type { KoffiLib } from './loader.js';

/** An out-parameter cell: koffi writes element 0. */
export type Out<T> = [T];

export const CUDA_SUCCESS = 0;
export const CUDA_ERROR_NOT_READY = 600;
export const CUDA_ERROR_OUT_OF_MEMORY = 2;
export const CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;
export const CUDA_ERROR_ALREADY_MAPPED = 208;
export const CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

export const ATTR = {
  smCount: 16,
  pciBusId: 33,
  l2Bytes: 38,
  unifiedAddressing: 41,
  ccMajor: 75,
  ccMinor: 76,
  hostPointerForRegisteredMem: 91,
} as const;

export interface CudaDriverApi {
  cuInit(flags: number): number;
  cuDriverGetVersion(v: Out<number>): number;
  cuDeviceGetCount(n: Out<number>): number;
  cuDeviceGet(dev: Out<number>, ordinal: number): number;
  cuDeviceGetName(name: Buffer, len: number, dev: number): number;
  cuDeviceTotalMem_v2(bytes: Out<number>, dev: number): number;
  cuDeviceGetAttribute(v: Out<number>, attr: number, dev: number): number;
  cuDevicePrimaryCtxRetain(ctx: Out<number>, dev: number): number;
  cuDevicePrimaryCtxRelease_v2(dev: number): number;
  cuDevicePrimaryCtxReset_v2(dev: number): number;
  cuCtxSetCurrent(ctx: number): number;
  cuCtxCreate_v4(ctx: Out<number>, params: number, flags: number, dev: number): number;
  cuCtxDestroy_v2(ctx: number): number;
  cuCtxSynchronize(): number;
  cuMemAlloc_v2(ptr: Out<number>, bytes: number): number;
  cuMemFree_v2(ptr: number): number;
  cuMemGetInfo_v2(free: Out<number>, total: Out<number>): number;
  cuMemHostAlloc(ptr: Out<number>, bytes: number, flags: number): number;
  cuMemFreeHost(ptr: number): number;
  cuMemHostRegister_v2(ptr: number, bytes: number, flags: number): number;
  cuMemHostUnregister(ptr: number): number;
  cuMemcpyAsync(dst: number, src: number, bytes: number, stream: number): number;
  cuMemcpyHtoD_v2(dst: number, src: Uint8Array, bytes: number): number;
  cuMemcpyDtoH_v2(dst: Uint8Array, src: number, bytes: number): number;
  cuMemsetD32Async(dst: number, value: number, count: number, stream: number): number;
  cuStreamCreate(stream: Out<number>, flags: number): number;
  cuStreamDestroy_v2(stream: number): number;
  cuStreamSynchronize(stream: number): number;
  cuEventCreate(ev: Out<number>, flags: number): number;
  cuEventRecord(ev: number, stream: number): number;
  cuEventQuery(ev: number): number;
  cuEventSynchronize(ev: number): number;
  cuEventDestroy_v2(ev: number): number;
  cuEventElapsedTime_v2(ms: Out<number>, start: number, end: number): number;
  cuStreamWaitEvent(stream: number, ev: number, flags: number): number;
  cuModuleLoadData(mod: Out<number>, image: Uint8Array): number;
  cuModuleUnload(mod: number): number;
  cuModuleGetFunction(fn: Out<number>, mod: number, name: string): number;
  cuFuncSetAttribute(fn: number, attribute: number, value: number): number;
  cuLaunchKernel(
    fn: number,
    gx: number,
    gy: number,
    gz: number,
    bx: number,
    by: number,
    bz: number,
    sharedBytes: number,
    stream: number,
    params: number,
    extra: number,
  ): number;
  cuStreamBeginCapture_v2(stream: number, mode: number): number;
  cuStreamEndCapture(stream: number, graph: Out<number>): number;
  cuGraphInstantiateWithFlags(exec: Out<number>, graph: number, flags: number): number;
  cuGraphLaunch(exec: number, stream: number): number;
  cuGraphExecDestroy(exec: number): number;
  cuGraphDestroy(graph: number): number;
  cuGetErrorName(rc: number, name: Out<string | null>): number;
  cuGetErrorString(rc: number, text: Out<string | null>): number;
  cuDeviceCanAccessPeer(can: Out<number>, dev: number, peerDev: number): number;
  cuCtxEnablePeerAccess(peerCtx: number, flags: number): number;
  cuMemcpyPeerAsync(
    dst: number,
    dstCtx: number,
    src: number,
    srcCtx: number,
    bytes: number,
    stream: number,
  ): number;
}

const DECLS: Record<keyof CudaDriverApi, string> = {
  cuInit: 'int cuInit(uint flags)',
  cuDriverGetVersion: 'int cuDriverGetVersion(_Out_ int *v)',
  cuDeviceGetCount: 'int cuDeviceGetCount(_Out_ int *n)',
  cuDeviceGet: 'int cuDeviceGet(_Out_ int *dev, int ordinal)',
  cuDeviceGetName: 'int cuDeviceGetName(uint8_t *name, int len, int dev)',
  cuDeviceTotalMem_v2: 'int cuDeviceTotalMem_v2(_Out_ size_t *bytes, int dev)',
  cuDeviceGetAttribute: 'int cuDeviceGetAttribute(_Out_ int *v, int attr, int dev)',
  cuDevicePrimaryCtxRetain: 'int cuDevicePrimaryCtxRetain(_Out_ uint64_t *ctx, int dev)',
  cuDevicePrimaryCtxRelease_v2: 'int cuDevicePrimaryCtxRelease_v2(int dev)',
  cuDevicePrimaryCtxReset_v2: 'int cuDevicePrimaryCtxReset_v2(int dev)',
  cuCtxSetCurrent: 'int cuCtxSetCurrent(uint64_t ctx)',
  cuCtxCreate_v4: 'int cuCtxCreate_v4(_Out_ uint64_t *ctx, uint64_t params, uint flags, int dev)',
  cuCtxDestroy_v2: 'int cuCtxDestroy_v2(uint64_t ctx)',
  cuCtxSynchronize: 'int cuCtxSynchronize()',
  cuMemAlloc_v2: 'int cuMemAlloc_v2(_Out_ uint64_t *ptr, size_t bytes)',
  cuMemFree_v2: 'int cuMemFree_v2(uint64_t ptr)',
  cuMemGetInfo_v2: 'int cuMemGetInfo_v2(_Out_ size_t *free, _Out_ size_t *total)',
  cuMemHostAlloc: 'int cuMemHostAlloc(_Out_ uint64_t *ptr, size_t bytes, uint flags)',
  cuMemFreeHost: 'int cuMemFreeHost(uint64_t ptr)',
  cuMemHostRegister_v2: 'int cuMemHostRegister_v2(uint64_t ptr, size_t bytes, uint flags)',
  cuMemHostUnregister: 'int cuMemHostUnregister(uint64_t ptr)',
  cuMemcpyAsync: 'int cuMemcpyAsync(uint64_t dst, uint64_t src, size_t bytes, uint64_t stream)',
  cuMemcpyHtoD_v2: 'int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes)',
  cuMemcpyDtoH_v2: 'int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes)',
  cuMemsetD32Async: 'int cuMemsetD32Async(uint64_t dst, uint value, size_t count, uint64_t stream)',
  cuStreamCreate: 'int cuStreamCreate(_Out_ uint64_t *stream, uint flags)',
  cuStreamDestroy_v2: 'int cuStreamDestroy_v2(uint64_t stream)',
  cuStreamSynchronize: 'int cuStreamSynchronize(uint64_t stream)',
  cuEventCreate: 'int cuEventCreate(_Out_ uint64_t *ev, uint flags)',
  cuEventRecord: 'int cuEventRecord(uint64_t ev, uint64_t stream)',
  cuEventQuery: 'int cuEventQuery(uint64_t ev)',
  cuEventSynchronize: 'int cuEventSynchronize(uint64_t ev)',
  cuEventDestroy_v2: 'int cuEventDestroy_v2(uint64_t ev)',
  cuEventElapsedTime_v2: 'int cuEventElapsedTime_v2(_Out_ float *ms, uint64_t start, uint64_t end)',
  cuStreamWaitEvent: 'int cuStreamWaitEvent(uint64_t stream, uint64_t ev, uint flags)',
  cuModuleLoadData: 'int cuModuleLoadData(_Out_ uint64_t *mod, const void *image)',
  cuModuleUnload: 'int cuModuleUnload(uint64_t mod)',
  cuModuleGetFunction: 'int cuModuleGetFunction(_Out_ uint64_t *fn, uint64_t mod, const char *name)',
  cuFuncSetAttribute: 'int cuFuncSetAttribute(uint64_t fn, int attrib, int value)',
  cuLaunchKernel:
    'int cuLaunchKernel(uint64_t f, uint gx, uint gy, uint gz, uint bx, uint by, uint bz, uint shmem, uint64_t stream, uint64_t params, uint64_t extra)',
  cuStreamBeginCapture_v2: 'int cuStreamBeginCapture_v2(uint64_t stream, int mode)',
  cuStreamEndCapture: 'int cuStreamEndCapture(uint64_t stream, _Out_ uint64_t *graph)',
  cuGraphInstantiateWithFlags:
    'int cuGraphInstantiateWithFlags(_Out_ uint64_t *exec, uint64_t graph, uint64_t flags)',
  cuGraphLaunch: 'int cuGraphLaunch(uint64_t exec, uint64_t stream)',
  cuGraphExecDestroy: 'int cuGraphExecDestroy(uint64_t exec)',
  cuGraphDestroy: 'int cuGraphDestroy(uint64_t graph)',
  cuGetErrorName: 'int cuGetErrorName(int rc, _Out_ const char **name)',
  cuGetErrorString: 'int cuGetErrorString(int rc, _Out_ const char **text)',
  cuDeviceCanAccessPeer: 'int cuDeviceCanAccessPeer(_Out_ int *can, int dev, int peerDev)',
  cuCtxEnablePeerAccess: 'int cuCtxEnablePeerAccess(uint64_t peerCtx, uint flags)',
  cuMemcpyPeerAsync:
    'int cuMemcpyPeerAsync(uint64_t dst, uint64_t dstCtx, uint64_t src, uint64_t srcCtx, size_t bytes, uint64_t stream)',
};

/** The raw koffi function objects, for the few places that use `.async` (the completion probe). */
export type RawFunctions = Record<keyof CudaDriverApi, ReturnType<KoffiLib['func']>>;

export class CudaDriver {
  readonly api: CudaDriverApi;
  readonly raw: RawFunctions;

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const raw = {} as RawFunctions;
    for (const [name, decl] of Object.entries(DECLS) as [keyof CudaDriverApi, string][])
      raw[name] = lib.func(decl);
    this.raw = raw;
    this.api = raw as unknown as CudaDriverApi;
  }

  /** "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a CUresult. */
  describe(rc: number): string {
    const name: Out<string | null> = [null];
    const text: Out<string | null> = [null];
    this.api.cuGetErrorName(rc, name);
    this.api.cuGetErrorString(rc, text);
    return `${name[0] ?? `CUresult ${rc}`} (${text[0] ?? 'no description'})`;
  }

  /** Turns a non-zero CUresult into TANDEM_ERR_DRIVER naming the call, the error name and its text. */
  check(rc: number, call: string): void {
    if (rc !== CUDA_SUCCESS) throw this.error(rc, call);
  }

  error(rc: number, call: string): TandemError {
    return new TandemError('TANDEM_ERR_DRIVER', `${call} failed: ${this.describe(rc)}`, {
      call,
      cuResult: rc,
    });
  }

  /** Calls a driver function with one out-parameter and returns it, checking the status. */
  out1(call: string, f: (o: Out<number>) => number): number {
    const o: Out<number> = [0];
    this.check(f(o), call);
    return Number(o[0]);
  }
}

/** A device attribute value; CU_DEVICE_ATTRIBUTE_* numbers are in ATTR. */
export function deviceAttribute(d: CudaDriver, attr: number, dev: number): number {
  return d.out1('cuDeviceGetAttribute', (o) => d.api.cuDeviceGetAttribute(o, attr, dev));
}

export function deviceName(d: CudaDriver, dev: number): string {
  const buf = Buffer.alloc(256);
  d.check(d.api.cuDeviceGetName(buf, buf.length, dev), 'cuDeviceGetName');
  const end = buf.indexOf(0);
  return buf.subarray(0, end < 0 ? buf.length : end).toString('utf8');
}

/** The native address of a typed array's first byte (SharedArrayBuffer backing stores never move). */
export function addressOf(view: ArrayBufferView): number {
  return Number(koffi.address(view));
}
