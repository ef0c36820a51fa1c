/**
 * Typed koffi bindings of NCCL (`nccl.h`, 2.x): one process drives every GPU, so communicators come
 * from ncclCommInitAll and each collective is issued once per rank inside ncclGroupStart/End (a
 * single thread calling the ranks one after another outside a group would deadlock on the first).
 * Communicators, streams and device pointers are 64-bit integers, as in the driver bindings.
 *
 * NVLink SHARP multicast stays off: NCCL_NVLS_ENABLE=0 is set before the library is loaded (it reads
 * the variable at its first communicator), and nothing here calls cuMulticastCreate.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { readdirSync } from 'node:fs';
import type { DType } from '../../../core/dtype.js';
import { TandemError } from '../../../core/errors.js';
import { LibraryNotFound, loadLibrary, type KoffiLib } from './loader.js';

/** ncclDataType_t (nccl.h). */
export const NCCL_DTYPE: Readonly<Partial<Record<DType, number>>> = {
  i32: 2,
  f16: 6,
  f32: 7,
  f64: 8,
  bf16: 9,
};

/** ncclRedOp_t (nccl.h): the built-in reductions used here. */
export const NCCL_OP = { sum: 0, prod: 1, max: 2, min: 3, avg: 4 } as const;
export type NcclReduceOp = keyof typeof NCCL_OP;

export const NCCL_SONAMES = ['libnccl.so.2', 'libnccl.so'] as const;

interface NcclApi {
  ncclGetVersion(v: [number]): number;
  ncclGetErrorString(rc: number): string;
  ncclCommInitAll(comms: Buffer, ndev: number, devlist: Buffer): number;
  ncclCommDestroy(comm: number): number;
  ncclAllReduce(
    send: number,
    recv: number,
    count: number,
    dtype: number,
    op: number,
    comm: number,
    stream: number,
  ): number;
  ncclReduceScatter(
    send: number,
    recv: number,
    recvCount: number,
    dtype: number,
    op: number,
    comm: number,
    stream: number,
  ): number;
  ncclAllGather(
    send: number,
    recv: number,
    sendCount: number,
    dtype: number,
    comm: number,
    stream: number,
  ): number;
  ncclBroadcast(
    send: number,
    recv: number,
    count: number,
    dtype: number,
    root: number,
    comm: number,
    stream: number,
  ): number;
  ncclGroupStart(): number;
  ncclGroupEnd(): number;
}

const DECLS: Record<keyof NcclApi, string> = {
  ncclGetVersion: 'int ncclGetVersion(_Out_ int *version)',
  ncclGetErrorString: 'const char *ncclGetErrorString(int rc)',
  // ncclComm_t *comm (an array of ndev handles) and const int *devlist: Buffers, written in place.
  ncclCommInitAll: 'int ncclCommInitAll(void *comms, int ndev, const void *devlist)',
  ncclCommDestroy: 'int ncclCommDestroy(uint64_t comm)',
  ncclAllReduce:
    'int ncclAllReduce(uint64_t send, uint64_t recv, size_t count, int dtype, int op, uint64_t comm, uint64_t stream)',
  ncclReduceScatter:
    'int ncclReduceScatter(uint64_t send, uint64_t recv, size_t recvcount, int dtype, int op, uint64_t comm, uint64_t stream)',
  ncclAllGather:
    'int ncclAllGather(uint64_t send, uint64_t recv, size_t sendcount, int dtype, uint64_t comm, uint64_t stream)',
  ncclBroadcast:
    'int ncclBroadcast(uint64_t send, uint64_t recv, size_t count, int dtype, int root, uint64_t comm, uint64_t stream)',
  ncclGroupStart: 'int ncclGroupStart()',
  ncclGroupEnd: 'int ncclGroupEnd()',
};

/**
 * Where libnccl.so.2 may be: explicit directories (TANDEM_NCCL_PATH, options), LD_LIBRARY_PATH, the
 * pip wheel `nvidia-nccl-cu13`/`-cu12` under every Python's site-packages (how PyTorch ships it), the
 * CUDA toolkit directories, then the system loader.
 */
export function ncclDirs(extra: readonly string[], toolkit: readonly string[]): string[] {
  const env = process.env;
  const dirs: string[] = [...extra];
  if (env['TANDEM_NCCL_PATH']) dirs.push(...env['TANDEM_NCCL_PATH'].split(delimiter));
  dirs.push(...(env['LD_LIBRARY_PATH'] ?? '').split(delimiter).filter((p) => p.length > 0));
  const prefixes = ['/usr/local/lib', '/usr/lib', '/opt/conda/lib', join(homedir(), '.local/lib')];
  for (const v of ['VIRTUAL_ENV', 'CONDA_PREFIX']) if (env[v]) prefixes.unshift(join(env[v]!, 'lib'));
  for (const prefix of prefixes) {
    for (const py of safeReaddir(prefix).filter((n) => n.startsWith('python3'))) {
      for (const pk of ['site-packages', 'dist-packages']) {
        const lib = join(prefix, py, pk, 'nvidia', 'nccl', 'lib');
        if (existsSync(lib)) dirs.push(lib);
      }
    }
  }
  dirs.push(...toolkit, '/usr/lib/x86_64-linux-gnu', '/usr/lib64');
  return [...new Set(dirs)];
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export class Nccl {
  readonly api: NcclApi;
  readonly version: number;

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const api = {} as Record<string, unknown>;
    for (const [name, decl] of Object.entries(DECLS)) api[name] = lib.func(decl);
    this.api = api as unknown as NcclApi;
    const v: [number] = [0];
    this.check(this.api.ncclGetVersion(v), 'ncclGetVersion');
    this.version = v[0];
  }

  /** 22703 → "2.27.3" (NCCL ≥ 2.9 encodes major*10000 + minor*100 + patch). */
  get versionString(): string {
    const v = this.version;
    return `${Math.floor(v / 10000)}.${Math.floor((v % 10000) / 100)}.${v % 100}`;
  }

  check(rc: number, call: string): void {
    if (rc !== 0)
      throw new TandemError(
        'TANDEM_ERR_DRIVER',
        `${call} failed: ${this.api.ncclGetErrorString(rc)} (ncclResult ${rc})`,
        { call, ncclResult: rc },
      );
  }

  /** One communicator per ordinal (rank i drives CUDA device ordinals[i]). */
  initAll(ordinals: readonly number[]): number[] {
    const comms = Buffer.alloc(8 * ordinals.length);
    const devlist = Buffer.from(Int32Array.from(ordinals).buffer);
    this.check(this.api.ncclCommInitAll(comms, ordinals.length, devlist), 'ncclCommInitAll');
    return ordinals.map((_, i) => Number(comms.readBigUInt64LE(8 * i)));
  }

  destroy(comm: number): void {
    this.api.ncclCommDestroy(comm);
  }

  /** Runs `body` between ncclGroupStart and ncclGroupEnd (End runs even when body throws). */
  group(body: () => void): void {
    this.check(this.api.ncclGroupStart(), 'ncclGroupStart');
    let failure: unknown = null;
    try {
      body();
    } catch (e) {
      failure = e;
    }
    const rc = this.api.ncclGroupEnd();
    if (failure !== null) throw failure;
    this.check(rc, 'ncclGroupEnd');
  }
}

/** NCCL's data type for `dtype`, or a TANDEM_ERR_DTYPE naming the ones it has. */
export function ncclDtype(dtype: DType): number {
  const t = NCCL_DTYPE[dtype];
  if (t === undefined)
    throw new TandemError(
      'TANDEM_ERR_DTYPE',
      `NCCL has no ${dtype} type (collectives take ${Object.keys(NCCL_DTYPE).join(', ')})`,
    );
  return t;
}

let loaded: Nccl | null = null;

/**
 * Loads NCCL once per process (NVLS off first). A missing library is TANDEM_ERR_UNSUPPORTED with
 * every path tried, never a crash: callers fall back to the portable collectives.
 */
export function loadNccl(extraDirs: readonly string[] = [], toolkit: readonly string[] = []): Nccl {
  if (loaded !== null) return loaded;
  // NCCL reads it when the first communicator is made; an explicit setting by the user is kept.
  process.env['NCCL_NVLS_ENABLE'] ??= '0';
  try {
    const { lib, path } = loadLibrary(NCCL_SONAMES, ncclDirs(extraDirs, toolkit));
    loaded = new Nccl(lib, path);
    return loaded;
  } catch (e) {
    if (e instanceof TandemError) throw e;
    const why = e instanceof LibraryNotFound ? e.message : e instanceof Error ? e.message : String(e);
    throw new TandemError('TANDEM_ERR_UNSUPPORTED', `NCCL could not be loaded: ${why}`, {
      library: 'libnccl.so.2',
    });
  }
}
