/**
 * Typed koffi bindings of cuBLASLt, used for GEMM when calibration shows it beats cublasGemmEx on this
 * GPU (it can pick different kernels). Descriptors and the heuristic's algorithms are cached per GEMM
 * shape, so a call is one cublasLtMatmul; a caller may pass a `Tuner` that picks among the heuristic's
 * candidates by timing them once per shape (lt-autotune.ts), else the heuristic's first is used.
 */
import { TandemError } from '../../../core/errors.js';
import type { KoffiLib } from './loader.js';
import type { Out } from './driver.js';
import type { TuneResult } from '../lt-autotune.js';

const DESC_TRANSA = 3;
const DESC_TRANSB = 4;
const PREF_MAX_WORKSPACE_BYTES = 1;
// cublasLtMatmulDescAttributes_t, cublasLtMatrixLayoutAttribute_t, cublasLtMatmulPreferenceAttributes_t
// (cublasLt.h, CUDA 12/13).
const DESC_EPILOGUE = 7; // uint32_t (cublasLtEpilogue_t)
const DESC_BIAS_POINTER = 8; // void *
const DESC_EPILOGUE_AUX_POINTER = 11; // void *
const DESC_EPILOGUE_AUX_LD = 12; // int64_t
const DESC_BIAS_DATA_TYPE = 26; // int32_t (cudaDataType)
const LAYOUT_BATCH_COUNT = 5; // int32_t
const LAYOUT_STRIDED_BATCH_OFFSET = 6; // int64_t
const PREF_MIN_ALIGNMENT_A_BYTES = 5; // uint32_t; B, C, D follow as 6, 7, 8
const STATUS_NOT_SUPPORTED = 15;
const STATUS_INVALID_VALUE = 7;

/** cublasLtEpilogue_t values (cublasLt.h). */
export const LT_EPILOGUE = {
  default: 1,
  bias: 4,
  geluAuxBias: 164,
  dgelu: 192,
  bgradb: 512,
} as const;
/** sizeof(cublasLtMatmulHeuristicResult_t): algo (8 x u64) + workspaceSize + state + wavesCount + int[4]. */
const HEURISTIC_BYTES = 96;
/**
 * Candidates asked of the heuristic for a shape (only a Tuner looks past the first): 8, or
 * TANDEM_LT_CANDIDATES (1-64) for experiments with a wider search.
 */
const CANDIDATES = Math.min(64, Math.max(1, Number(process.env['TANDEM_LT_CANDIDATES']) || 8));

type AttrBuffer = Int32Array | Uint32Array | BigInt64Array | BigUint64Array;

interface CublasLtApi {
  cublasLtCreate(h: Out<number>): number;
  cublasLtDestroy(h: number): number;
  cublasLtMatmulDescCreate(d: Out<number>, compute: number, scale: number): number;
  cublasLtMatmulDescDestroy(d: number): number;
  cublasLtMatmulDescSetAttribute(d: number, attr: number, buf: AttrBuffer, bytes: number): number;
  cublasLtMatrixLayoutCreate(l: Out<number>, type: number, rows: number, cols: number, ld: number): number;
  cublasLtMatrixLayoutSetAttribute(l: number, attr: number, buf: AttrBuffer, bytes: number): number;
  cublasLtMatrixLayoutDestroy(l: number): number;
  cublasLtMatmulPreferenceCreate(p: Out<number>): number;
  cublasLtMatmulPreferenceDestroy(p: number): number;
  cublasLtMatmulPreferenceSetAttribute(p: number, attr: number, buf: AttrBuffer, bytes: number): number;
  cublasLtMatmulAlgoGetHeuristic(
    h: number,
    d: number,
    a: number,
    b: number,
    c: number,
    dd: number,
    pref: number,
    requested: number,
    results: Uint8Array,
    returned: Out<number>,
  ): number;
  cublasLtMatmul(
    h: number,
    d: number,
    alpha: Float32Array | Float64Array,
    a: number,
    ad: number,
    b: number,
    bd: number,
    beta: Float32Array | Float64Array,
    c: number,
    cd: number,
    dptr: number,
    dd: number,
    algo: Uint8Array,
    ws: number,
    wsBytes: number,
    stream: number,
  ): number;
}

const DECLS: Record<keyof CublasLtApi, string> = {
  cublasLtCreate: 'int cublasLtCreate(_Out_ uint64_t *h)',
  cublasLtDestroy: 'int cublasLtDestroy(uint64_t h)',
  cublasLtMatmulDescCreate: 'int cublasLtMatmulDescCreate(_Out_ uint64_t *d, int compute, int scale)',
  cublasLtMatmulDescDestroy: 'int cublasLtMatmulDescDestroy(uint64_t d)',
  cublasLtMatmulDescSetAttribute:
    'int cublasLtMatmulDescSetAttribute(uint64_t d, int attr, const void *buf, size_t bytes)',
  cublasLtMatrixLayoutCreate:
    'int cublasLtMatrixLayoutCreate(_Out_ uint64_t *l, int type, uint64_t rows, uint64_t cols, int64_t ld)',
  cublasLtMatrixLayoutDestroy: 'int cublasLtMatrixLayoutDestroy(uint64_t l)',
  cublasLtMatrixLayoutSetAttribute:
    'int cublasLtMatrixLayoutSetAttribute(uint64_t l, int attr, const void *buf, size_t bytes)',
  cublasLtMatmulPreferenceCreate: 'int cublasLtMatmulPreferenceCreate(_Out_ uint64_t *p)',
  cublasLtMatmulPreferenceDestroy: 'int cublasLtMatmulPreferenceDestroy(uint64_t p)',
  cublasLtMatmulPreferenceSetAttribute:
    'int cublasLtMatmulPreferenceSetAttribute(uint64_t p, int attr, const void *buf, size_t bytes)',
  cublasLtMatmulAlgoGetHeuristic:
    'int cublasLtMatmulAlgoGetHeuristic(uint64_t h, uint64_t d, uint64_t a, uint64_t b, uint64_t c, uint64_t dd, uint64_t pref, int requested, uint8_t *results, _Out_ int *returned)',
  cublasLtMatmul:
    'int cublasLtMatmul(uint64_t h, uint64_t d, const void *alpha, uint64_t a, uint64_t ad, uint64_t b, uint64_t bd, const void *beta, uint64_t c, uint64_t cd, uint64_t dptr, uint64_t dd, const void *algo, uint64_t ws, size_t wsBytes, uint64_t stream)',
};

/** A column-major GEMM shape as cuBLASLt sees it. */
export interface LtShape {
  readonly dataType: number;
  readonly compute: number;
  readonly scaleType: number;
  readonly ta: number;
  readonly tb: number;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly lda: number;
  readonly ldb: number;
  readonly ldc: number;
}

/**
 * A column-major matmul with an epilogue and a strided batch, as cuBLASLt sees it. Bias and aux have
 * the data type of D; pointer alignments (bytes, powers of two up to 256) steer the heuristic.
 */
export interface LtEpilogueShape extends LtShape {
  readonly epilogue: number;
  readonly hasBias: boolean;
  /** Leading dimension of the aux matrix in elements; 0 without aux. */
  readonly auxLd: number;
  readonly batchCount: number;
  readonly strideA: number;
  readonly strideB: number;
  readonly strideC: number;
  /** Alignments of A, B, C(=D) in bytes. */
  readonly align: readonly [number, number, number];
}

interface Plan {
  readonly desc: number;
  readonly a: number;
  readonly b: number;
  readonly c: number;
  /** The algorithm every call uses: the heuristic's first until a Tuner has chosen. */
  algo: Uint8Array;
  /** The heuristic's candidates while the shape is untuned and has more than one; then null. */
  pending: Uint8Array[] | null;
  /** A tuner chose the caller's alternative (matmul's `alternative`) over every cuBLASLt algorithm. */
  alternative?: boolean;
}

/** Stands for the caller's alternative among the candidates a Tuner times (never passed to cuBLASLt). */
const ALTERNATIVE = new Uint8Array(0);

/**
 * Picks one of a shape's candidate algorithms (`chosen`, an index into `candidates`, with the ms per
 * run it measured for each), given a function that enqueues the shape's matmul with an algorithm;
 * null: not now (the shape stays untuned).
 */
export type Tuner = (
  candidates: readonly Uint8Array[],
  run: (algo: Uint8Array) => number,
) => TuneResult | null;

/** A shape a Tuner timed: cuBLASLt's (column-major) m, n, k, the epilogue, and what was measured. */
export interface TunedShape {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  /** cuBLASLt's epilogue number (1: none). */
  readonly epilogue: number;
  /** Candidate 0 was the caller's alternative (cublasGemmEx), the cuBLASLt algorithms after it. */
  readonly alternativeFirst: boolean;
  readonly chosen: number;
  readonly ms: readonly number[];
  /** The first candidate and the fastest other timed again head to head, where they were. */
  readonly confirm?: readonly [number, number];
}

/** How many tuned shapes `CublasLt.tuned` keeps (the most recent), for benchmarks and diagnosis. */
const TUNED_KEPT = 64;

/** The candidates of a heuristic query's results (each result's first 64 bytes are its algorithm). */
function candidatesOf(results: Uint8Array, returned: number): Uint8Array[] {
  return Array.from({ length: returned }, (_, i) =>
    results.subarray(i * HEURISTIC_BYTES, i * HEURISTIC_BYTES + 64),
  );
}

export class CublasLt {
  private readonly api: CublasLtApi;
  private handle = 0;
  private readonly plans = new Map<string, Plan>();
  private readonly epiloguePlans = new Map<string, Plan | null>();
  /** Calls that ran with an epilogue and calls declined by cuBLASLt (benchmarks report them). */
  readonly epilogueCalls = { fused: 0, declined: 0 };
  /** Shapes a Tuner timed, and how many of them it moved off the heuristic's first choice. */
  readonly tuning = { shapes: 0, changed: 0 };
  /** The last TUNED_KEPT shapes a Tuner timed, with every candidate's time (benchmarks print them). */
  readonly tuned: TunedShape[] = [];

  constructor(
    lib: KoffiLib,
    readonly path: string,
  ) {
    const api = {} as Record<string, unknown>;
    for (const [name, decl] of Object.entries(DECLS)) api[name] = lib.func(decl);
    this.api = api as unknown as CublasLtApi;
  }

  private check(rc: number, call: string): void {
    if (rc !== 0)
      throw new TandemError('TANDEM_ERR_DRIVER', `${call} failed: cublasStatus ${rc}`, {
        call,
        cublasStatus: rc,
      });
  }

  private out(call: string, f: (o: Out<number>) => number): number {
    const o: Out<number> = [0];
    this.check(f(o), call);
    return Number(o[0]);
  }

  /** Up to CANDIDATES algorithms from cuBLASLt's heuristic for D = C in place, best first. */
  private heuristic(
    desc: number,
    a: number,
    b: number,
    c: number,
    pref: number,
  ): { rc: number; candidates: Uint8Array[] } {
    const results = new Uint8Array(HEURISTIC_BYTES * CANDIDATES);
    const returned: Out<number> = [0];
    const rc = this.api.cublasLtMatmulAlgoGetHeuristic(
      this.handle,
      desc,
      a,
      b,
      c,
      c,
      pref,
      CANDIDATES,
      results,
      returned,
    );
    return { rc, candidates: rc === 0 ? candidatesOf(results, returned[0]) : [] };
  }

  /** Descriptors and the heuristic's best algorithm for a shape, made once. */
  private plan(s: LtShape, workspaceBytes: number): Plan {
    const key = `${s.dataType},${s.compute},${s.ta},${s.tb},${s.m},${s.n},${s.k},${s.lda},${s.ldb},${s.ldc}`;
    const known = this.plans.get(key);
    if (known) return known;
    const api = this.api;
    if (this.handle === 0) this.handle = this.out('cublasLtCreate', (o) => api.cublasLtCreate(o));
    const desc = this.out('cublasLtMatmulDescCreate', (o) =>
      api.cublasLtMatmulDescCreate(o, s.compute, s.scaleType),
    );
    this.check(
      api.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSA, Int32Array.of(s.ta), 4),
      'cublasLtMatmulDescSetAttribute',
    );
    this.check(
      api.cublasLtMatmulDescSetAttribute(desc, DESC_TRANSB, Int32Array.of(s.tb), 4),
      'cublasLtMatmulDescSetAttribute',
    );
    const layout = (rows: number, cols: number, ld: number): number =>
      this.out('cublasLtMatrixLayoutCreate', (o) =>
        api.cublasLtMatrixLayoutCreate(o, s.dataType, rows, cols, ld),
      );
    const a = s.ta ? layout(s.k, s.m, s.lda) : layout(s.m, s.k, s.lda);
    const b = s.tb ? layout(s.n, s.k, s.ldb) : layout(s.k, s.n, s.ldb);
    const c = layout(s.m, s.n, s.ldc);
    const pref = this.out('cublasLtMatmulPreferenceCreate', (o) => api.cublasLtMatmulPreferenceCreate(o));
    try {
      this.check(
        api.cublasLtMatmulPreferenceSetAttribute(
          pref,
          PREF_MAX_WORKSPACE_BYTES,
          BigUint64Array.of(BigInt(workspaceBytes)),
          8,
        ),
        'cublasLtMatmulPreferenceSetAttribute',
      );
      const { rc, candidates } = this.heuristic(desc, a, b, c, pref);
      this.check(rc, 'cublasLtMatmulAlgoGetHeuristic');
      if (candidates.length < 1)
        throw new TandemError('TANDEM_ERR_DRIVER', 'cublasLtMatmulAlgoGetHeuristic found no algorithm');
      const plan = {
        desc,
        a,
        b,
        c,
        algo: candidates[0]!,
        pending: candidates.length > 1 ? candidates : null,
      };
      this.plans.set(key, plan);
      return plan;
    } finally {
      api.cublasLtMatmulPreferenceDestroy(pref);
    }
  }

  /** One cublasLtMatmul with a plan (C is also D: in place); returns cuBLAS's status. */
  private enqueue(
    p: Plan,
    algo: Uint8Array,
    alpha: Float32Array | Float64Array,
    a: number,
    b: number,
    beta: Float32Array | Float64Array,
    c: number,
    workspace: number,
    workspaceBytes: number,
    stream: number,
  ): number {
    return this.api.cublasLtMatmul(
      this.handle,
      p.desc,
      alpha,
      a,
      p.a,
      b,
      p.b,
      beta,
      c,
      p.c,
      c,
      p.c,
      algo,
      workspace,
      workspaceBytes,
      stream,
    );
  }

  /**
   * Enqueues the matmul, or returns false without enqueuing anything where a tuner chose `alternative`
   * for this shape: the same product by other means (cublasGemmEx), which enqueues it on `stream` and
   * returns 0. Given one, the tuner times it as its first candidate, the one to beat.
   */
  matmul(
    s: LtShape,
    alpha: Float32Array | Float64Array,
    a: number,
    b: number,
    beta: Float32Array | Float64Array,
    c: number,
    workspace: number,
    workspaceBytes: number,
    stream: number,
    tuner: Tuner | null = null,
    alternative: (() => number) | null = null,
  ): boolean {
    const p = this.plan(s, workspaceBytes);
    if (p.pending !== null && tuner !== null)
      this.tune(
        p,
        s,
        LT_EPILOGUE.default,
        tuner,
        (algo) => this.enqueue(p, algo, alpha, a, b, beta, c, workspace, workspaceBytes, stream),
        alternative,
      );
    if (p.alternative === true) return false;
    const rc = this.enqueue(p, p.algo, alpha, a, b, beta, c, workspace, workspaceBytes, stream);
    if (rc !== 0) this.check(rc, 'cublasLtMatmul');
    return true;
  }

  /** Lets the tuner choose among the plan's candidates (once: a plan it declines stays pending). */
  private tune(
    p: Plan,
    s: LtShape,
    epilogue: number,
    tuner: Tuner,
    run: (algo: Uint8Array) => number,
    alternative: (() => number) | null = null,
  ): void {
    const algos = p.pending!;
    const candidates = alternative ? [ALTERNATIVE, ...algos] : algos;
    const result = tuner(candidates, alternative ? (x) => (x === ALTERNATIVE ? alternative() : run(x)) : run);
    if (result === null) return;
    const { chosen, ms, confirm } = result;
    p.pending = null;
    p.alternative = candidates[chosen] === ALTERNATIVE;
    p.algo = p.alternative ? algos[0]! : candidates[chosen]!;
    this.tuning.shapes++;
    if (chosen !== 0) this.tuning.changed++;
    if (this.tuned.length === TUNED_KEPT) this.tuned.shift();
    this.tuned.push({
      m: s.m,
      n: s.n,
      k: s.k,
      epilogue,
      alternativeFirst: alternative !== null,
      chosen,
      ms,
      ...(confirm ? { confirm } : {}),
    });
  }

  private setDesc(desc: number, attr: number, buf: AttrBuffer): void {
    this.check(
      this.api.cublasLtMatmulDescSetAttribute(desc, attr, buf, buf.byteLength),
      'cublasLtMatmulDescSetAttribute',
    );
  }

  private pointer(desc: number, attr: number, ptr: number): void {
    this.setDesc(desc, attr, BigUint64Array.of(BigInt(ptr)));
  }

  /**
   * Descriptors and the heuristic's best algorithm for a matmul with an epilogue, made once per
   * shape; null (remembered too) when cuBLASLt supports no algorithm for it.
   */
  private epiloguePlan(s: LtEpilogueShape, workspaceBytes: number, bias: number, aux: number): Plan | null {
    const key = [s.dataType, s.compute, s.ta, s.tb, s.m, s.n, s.k, s.lda, s.ldb, s.ldc, s.epilogue, s.hasBias]
      .concat([s.auxLd, s.batchCount, s.strideA, s.strideB, s.strideC, ...s.align])
      .join(',');
    const known = this.epiloguePlans.get(key);
    if (known !== undefined) return known;
    const api = this.api;
    if (this.handle === 0) this.handle = this.out('cublasLtCreate', (o) => api.cublasLtCreate(o));
    const desc = this.out('cublasLtMatmulDescCreate', (o) =>
      api.cublasLtMatmulDescCreate(o, s.compute, s.scaleType),
    );
    const layouts: number[] = [];
    const pref = this.out('cublasLtMatmulPreferenceCreate', (o) => api.cublasLtMatmulPreferenceCreate(o));
    let plan: Plan | null = null;
    try {
      this.setDesc(desc, DESC_TRANSA, Int32Array.of(s.ta));
      this.setDesc(desc, DESC_TRANSB, Int32Array.of(s.tb));
      this.setDesc(desc, DESC_EPILOGUE, Uint32Array.of(s.epilogue));
      if (s.hasBias) {
        this.setDesc(desc, DESC_BIAS_DATA_TYPE, Int32Array.of(s.dataType));
        this.pointer(desc, DESC_BIAS_POINTER, bias);
      }
      if (s.auxLd > 0) {
        this.pointer(desc, DESC_EPILOGUE_AUX_POINTER, aux);
        this.setDesc(desc, DESC_EPILOGUE_AUX_LD, BigInt64Array.of(BigInt(s.auxLd)));
      }
      const layout = (rows: number, cols: number, ld: number, stride: number): number => {
        const l = this.out('cublasLtMatrixLayoutCreate', (o) =>
          api.cublasLtMatrixLayoutCreate(o, s.dataType, rows, cols, ld),
        );
        layouts.push(l);
        if (s.batchCount > 1) {
          const set = (attr: number, buf: AttrBuffer): void =>
            this.check(
              api.cublasLtMatrixLayoutSetAttribute(l, attr, buf, buf.byteLength),
              'cublasLtMatrixLayoutSetAttribute',
            );
          set(LAYOUT_BATCH_COUNT, Int32Array.of(s.batchCount));
          set(LAYOUT_STRIDED_BATCH_OFFSET, BigInt64Array.of(BigInt(stride)));
        }
        return l;
      };
      const a = s.ta ? layout(s.k, s.m, s.lda, s.strideA) : layout(s.m, s.k, s.lda, s.strideA);
      const b = s.tb ? layout(s.n, s.k, s.ldb, s.strideB) : layout(s.k, s.n, s.ldb, s.strideB);
      const c = layout(s.m, s.n, s.ldc, s.strideC);
      const setPref = (attr: number, buf: AttrBuffer): void =>
        this.check(
          api.cublasLtMatmulPreferenceSetAttribute(pref, attr, buf, buf.byteLength),
          'cublasLtMatmulPreferenceSetAttribute',
        );
      setPref(PREF_MAX_WORKSPACE_BYTES, BigUint64Array.of(BigInt(workspaceBytes)));
      const [alignA, alignB, alignC] = s.align;
      setPref(PREF_MIN_ALIGNMENT_A_BYTES, Uint32Array.of(alignA));
      setPref(PREF_MIN_ALIGNMENT_A_BYTES + 1, Uint32Array.of(alignB));
      setPref(PREF_MIN_ALIGNMENT_A_BYTES + 2, Uint32Array.of(alignC));
      setPref(PREF_MIN_ALIGNMENT_A_BYTES + 3, Uint32Array.of(alignC));
      const { rc, candidates } = this.heuristic(desc, a, b, c, pref);
      // NOT_SUPPORTED and INVALID_VALUE both mean "not this combination" here: the caller falls back.
      if (rc !== STATUS_NOT_SUPPORTED && rc !== STATUS_INVALID_VALUE)
        this.check(rc, 'cublasLtMatmulAlgoGetHeuristic');
      if (rc === 0 && candidates.length >= 1) {
        plan = { desc, a, b, c, algo: candidates[0]!, pending: candidates.length > 1 ? candidates : null };
      }
    } finally {
      api.cublasLtMatmulPreferenceDestroy(pref);
      if (plan === null) {
        for (const l of layouts) api.cublasLtMatrixLayoutDestroy(l);
        api.cublasLtMatmulDescDestroy(desc);
      }
    }
    this.epiloguePlans.set(key, plan);
    return plan;
  }

  /**
   * One matmul with an epilogue (D = C in place). Returns false, enqueuing nothing, when cuBLASLt has
   * no algorithm for it; the bias and aux pointers are set on the cached descriptor for every call.
   */
  matmulEpilogue(
    s: LtEpilogueShape,
    alpha: Float32Array,
    a: number,
    b: number,
    beta: Float32Array,
    c: number,
    bias: number,
    aux: number,
    workspace: number,
    workspaceBytes: number,
    stream: number,
    tuner: Tuner | null = null,
  ): boolean {
    const p = this.epiloguePlan(s, workspaceBytes, bias, aux);
    if (p === null) {
      this.epilogueCalls.declined++;
      return false;
    }
    if (s.hasBias) this.pointer(p.desc, DESC_BIAS_POINTER, bias);
    if (s.auxLd > 0) this.pointer(p.desc, DESC_EPILOGUE_AUX_POINTER, aux);
    if (p.pending !== null && tuner !== null)
      this.tune(p, s, s.epilogue, tuner, (algo) =>
        this.enqueue(p, algo, alpha, a, b, beta, c, workspace, workspaceBytes, stream),
      );
    const rc = this.enqueue(p, p.algo, alpha, a, b, beta, c, workspace, workspaceBytes, stream);
    if (rc === STATUS_NOT_SUPPORTED) {
      this.epilogueCalls.declined++; // nothing was enqueued
      return false;
    }
    if (rc !== 0) this.check(rc, 'cublasLtMatmul(epilogue)');
    this.epilogueCalls.fused++;
    return true;
  }

  /** After a context reset the handle and plans belong to a dead context: start again. */
  forget(): void {
    this.plans.clear();
    this.epiloguePlans.clear();
    this.handle = 0;
  }
}
