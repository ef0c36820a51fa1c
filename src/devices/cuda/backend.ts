/**
 * The CUDA backend: loads libcuda, NVRTC and cuBLAS at run time, opens every GPU on its primary
 * context and registers the host<->GPU copy routes. On a machine without a GPU `open` resolves quickly
 * with { available: false, reason } naming what was tried; it never throws.
 */
import koffi from 'koffi';
import { delimiter } from 'node:path';
import type { Backend, BackendContext, BackendStatus, HostBuffer } from '../device.js';
import {
  calibrationFile,
  measureCalibration,
  readCalibration,
  writeCalibration,
  type CudaCalibration,
} from './calibrate.js';
import { CudaContext } from './context.js';
import { cudaCopyRoutes } from './copy-routes.js';
import { CudaDevice } from './cuda-device.js';
import { Cublas } from './ffi/cublas.js';
import { ATTR, CudaDriver, deviceAttribute, deviceName } from './ffi/driver.js';
import {
  LibraryNotFound,
  loadLibrary,
  toolkitDirs,
  type LibrarySearch,
  type LoadedLibrary,
} from './ffi/loader.js';
import { CublasLt } from './ffi/cublaslt.js';
import { CUSOLVER_SONAMES, Cusolver } from './ffi/cusolver.js';
import { Nvrtc } from './ffi/nvrtc.js';
import { loadNccl } from './ffi/nccl.js';
import { ncclCollectives } from './nccl-group.js';
import { PeerLinks } from './peer.js';
import { ProgramCache } from './program-cache.js';

export interface CudaBackendOptions {
  /** Toolkit root holding NVRTC and cuBLAS (default: CUDA_PATH, then /usr/local/cuda*). */
  readonly cudaPath?: string;
  /** Directories searched before the usual ones. */
  readonly libraryPaths?: readonly string[];
  /** Page-lock host SharedArrayBuffers in place (default true); false: always copy through staging. */
  readonly registerHostMemory?: boolean;
  /** Enable peer access between GPUs where the driver allows it (default true); false: stage copies. */
  readonly peerAccess?: boolean;
}

function parseOptions(all: Readonly<Record<string, unknown>>): CudaBackendOptions {
  // The runtime passes every backend's options keyed by kind; a bare object is taken as CUDA's own.
  const nested = all['cuda'];
  const o = typeof nested === 'object' && nested !== null ? (nested as Record<string, unknown>) : all;
  const cudaPath = typeof o['cudaPath'] === 'string' ? o['cudaPath'] : process.env['CUDA_PATH'];
  const libraryPaths = Array.isArray(o['libraryPaths'])
    ? o['libraryPaths'].filter((x): x is string => typeof x === 'string')
    : [];
  return {
    ...(cudaPath ? { cudaPath } : {}),
    libraryPaths,
    registerHostMemory: o['registerHostMemory'] !== false,
    peerAccess: o['peerAccess'] !== false,
  };
}

const unavailable = (reason: string): BackendStatus => ({
  kind: 'cuda',
  available: false,
  reason,
  devices: [],
  copies: [],
});

function describeLoadFailure(e: unknown): string {
  return e instanceof LibraryNotFound ? e.message : e instanceof Error ? e.message : String(e);
}

async function openDevice(
  ordinal: number,
  driver: CudaDriver,
  nvrtc: Nvrtc,
  cublas: Cublas,
  lt: LoadedLibrary | null,
  ctx: BackendContext,
  opts: CudaBackendOptions,
  cusolver: Cusolver | null,
): Promise<CudaDevice> {
  const dev = driver.out1('cuDeviceGet', (o) => driver.api.cuDeviceGet(o, ordinal));
  const name = deviceName(driver, dev);
  const memoryBytes = driver.out1('cuDeviceTotalMem_v2', (o) => driver.api.cuDeviceTotalMem_v2(o, dev));
  const smCount = deviceAttribute(driver, ATTR.smCount, dev);
  const major = deviceAttribute(driver, ATTR.ccMajor, dev);
  const minor = deviceAttribute(driver, ATTR.ccMinor, dev);
  const arch = `sm_${major}${minor}`;
  const context = new CudaContext(driver, cublas, dev, lt ? new CublasLt(lt.lib, lt.path) : null);
  context.cusolver = cusolver;
  context.open();
  const id = `cuda${ordinal}`;
  const device = new CudaDevice({
    id,
    driver,
    context,
    programs: new ProgramCache(driver, nvrtc, arch, ctx.cacheDir),
    memoryBytes,
    smCount,
    view: (ptr, bytes) => new Uint8Array(koffi.view(ptr, bytes)),
    registerSabs: opts.registerHostMemory !== false,
  });
  // Unpin host buffers when the host node frees them (HostNode exposes freeListeners).
  const hostFree = (ctx.hostNode as { freeListeners?: ((b: HostBuffer) => void)[] }).freeListeners;
  hostFree?.push((b) => device.transfers.release(b.sab));
  const driverVersion = driver.out1('cuDriverGetVersion', (o) => driver.api.cuDriverGetVersion(o));
  const cublasVersion = cublas.version(context.blas());
  const file = calibrationFile(ctx.cacheDir, `${name}-${driverVersion}-${cublasVersion}`);
  let cal: CudaCalibration | null = readCalibration(file);
  if (!cal && ctx.calibrate) {
    cal = await measureCalibration(device);
    writeCalibration(file, cal, ctx.cacheDir);
  }
  device.launcher.gemmEngines = { ...(cal?.gemmEngines ?? {}) };
  device.info = {
    id,
    kind: 'cuda',
    name,
    memoryBytes,
    peakFlops: cal?.peakFlops ?? {},
    ...(cal ? { memoryBandwidth: cal.memoryBandwidth } : {}),
    details: {
      computeCapability: `${major}.${minor}`,
      arch,
      smCount,
      l2Bytes: deviceAttribute(driver, ATTR.l2Bytes, dev),
      pciBusId: deviceAttribute(driver, ATTR.pciBusId, dev),
      driverVersion,
      nvrtcVersion: nvrtc.version,
      cublasVersion,
      libcuda: driver.path,
      libnvrtc: nvrtc.path,
      libcublas: cublas.path,
      libcublasLt: lt?.path ?? 'not loaded',
      libcusolver: cusolver?.path ?? 'not loaded (potrf is placed on other devices)',
      gemmEngines: JSON.stringify(cal?.gemmEngines ?? {}),
      ...(cal
        ? { h2dBandwidth: cal.h2dBandwidth, d2hBandwidth: cal.d2hBandwidth, calibratedAt: cal.measuredAt }
        : {}),
    },
  };
  return device;
}

export function createCudaBackend(): Backend {
  return {
    kind: 'cuda',
    async open(ctx: BackendContext): Promise<BackendStatus> {
      const opts = parseOptions(ctx.options);
      const search: LibrarySearch = {
        ...(opts.cudaPath ? { cudaPath: opts.cudaPath } : {}),
        extraDirs: opts.libraryPaths ?? [],
        ldPaths: (process.env['LD_LIBRARY_PATH'] ?? '').split(delimiter).filter((p) => p.length > 0),
      };
      let driver: CudaDriver;
      try {
        const driverDirs = [
          ...(opts.libraryPaths ?? []),
          '/usr/local/nvidia/lib64',
          '/usr/lib/x86_64-linux-gnu',
          '/usr/lib64',
        ];
        const { lib, path } = loadLibrary(['libcuda.so.1', 'libcuda.so'], driverDirs);
        driver = new CudaDriver(lib, path);
      } catch (e) {
        return unavailable(`the CUDA driver library could not be loaded: ${describeLoadFailure(e)}`);
      }
      const rc = driver.api.cuInit(0);
      if (rc !== 0) return unavailable(`cuInit failed: ${driver.describe(rc)} (driver ${driver.path})`);
      const count = driver.out1('cuDeviceGetCount', (o) => driver.api.cuDeviceGetCount(o));
      if (count === 0) return unavailable(`the CUDA driver (${driver.path}) reports no GPU`);
      const dirs = toolkitDirs(search);
      let nvrtc: Nvrtc;
      let cublas: Cublas;
      let lt: LoadedLibrary | null = null;
      try {
        const n = loadLibrary(['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so'], dirs);
        nvrtc = new Nvrtc(n.lib, n.path);
        const c = loadLibrary(['libcublas.so.13', 'libcublas.so.12', 'libcublas.so'], dirs);
        cublas = new Cublas(c.lib, c.path);
        try {
          lt = loadLibrary(['libcublasLt.so.13', 'libcublasLt.so.12', 'libcublasLt.so'], dirs);
        } catch {
          lt = null; // optional: GEMM stays on cublasGemmEx
        }
      } catch (e) {
        return unavailable(`a CUDA toolkit library could not be loaded: ${describeLoadFailure(e)}`);
      }
      let cusolver: Cusolver | null = null;
      try {
        const s = loadLibrary(CUSOLVER_SONAMES, dirs);
        cusolver = new Cusolver(s.lib, s.path);
      } catch (e) {
        ctx.log(`cuda: cuSOLVER not loaded, potrf runs on other devices: ${describeLoadFailure(e)}`);
      }
      const devices: CudaDevice[] = [];
      try {
        for (let i = 0; i < count; i++)
          devices.push(await openDevice(i, driver, nvrtc, cublas, lt, ctx, opts, cusolver));
      } catch (e) {
        for (const d of devices) await d.close();
        return unavailable(`opening the GPUs failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      // Detail for debugging: the runtime's user prints the backend's summary line.
      ctx.debug?.(
        `cuda: ${devices.map((d) => `${d.id} ${d.info.name} (${d.info.details['arch']})`).join(', ')}`,
      );
      const peers = new PeerLinks(devices, driver, { peerAccess: opts.peerAccess !== false, log: ctx.log });
      return {
        kind: 'cuda',
        available: true,
        devices,
        copies: cudaCopyRoutes(devices, peers),
        // NCCL is loaded on the first communicator, not here: most runtimes never make one.
        collectives: ncclCollectives(() => loadNccl(opts.libraryPaths ?? [], dirs), devices),
      };
    },
  };
}

export const cudaBackend: Backend = createCudaBackend();
