/**
 * Generates the WebAssembly text of the SIMD GEMMs (f32 and f64 in one module). The register-blocked
 * micro-kernel is unrolled (MR rows x NR columns of accumulators), which is why this is a small
 * generator rather than hand-written WAT: the block sizes were tuned by measurement (bench/cpu-gemm.ts,
 * bench/RESULTS.md).
 *
 * Algorithm (Goto/BLIS): C = beta*C first; then for each NC-wide column block of C, each KC-deep slice
 * of k, B's slice is packed into NR-column panels; for each MC-high row block, A's block is packed
 * (times alpha) into MR-row panels; the micro-kernel multiplies one A panel by one B panel and adds the
 * MR x NR result into C. Packing absorbs the transposes and pads edges and k with zeros, so the hot
 * loop has one shape. Pointers are byte offsets into the imported (shared) memory.
 */

export interface GemmWatOptions {
  readonly mr: number;
  /** f32 columns per micro-tile, a multiple of 4 (one f32x4 each); f64 uses as many f64x2 vectors (nr / 2 columns). */
  readonly nr: number;
  readonly kc: number;
  readonly mc: number;
  readonly nc: number;
  /** k steps per micro-kernel loop turn (a power of 2); kc is padded with zeros to a multiple of it. */
  readonly unroll: number;
}

export const GEMM_WAT_DEFAULTS: GemmWatOptions = { mr: 2, nr: 16, kc: 256, mc: 128, nc: 512, unroll: 1 };

/** One element type's spelling in WAT. */
interface Elem {
  readonly t: 'f32' | 'f64';
  readonly bytes: number;
  readonly shift: number;
  readonly vec: 'f32x4' | 'f64x2';
  readonly lanes: number;
  /** Function-name prefix: $s_micro, $d_micro. */
  readonly p: 's' | 'd';
}

const F32: Elem = { t: 'f32', bytes: 4, shift: 2, vec: 'f32x4', lanes: 4, p: 's' };
const F64: Elem = { t: 'f64', bytes: 8, shift: 3, vec: 'f64x2', lanes: 2, p: 'd' };

const roundUp = (x: number, m: number): number => Math.ceil(x / m) * m;

function nrOf(o: GemmWatOptions, e: Elem): number {
  return (o.nr / 4) * e.lanes;
}

/** Workspace bytes of one element type: packed A block, packed B block, one MR x NR edge tile. */
function workspaceOf(o: GemmWatOptions, e: Elem): { bOffset: number; tileOffset: number; total: number } {
  const kcp = roundUp(o.kc, o.unroll);
  const nr = nrOf(o, e);
  const bOffset = e.bytes * roundUp(o.mc, o.mr) * kcp;
  const tileOffset = bOffset + e.bytes * kcp * roundUp(o.nc, nr);
  return { bOffset, tileOffset, total: tileOffset + e.bytes * o.mr * nr };
}

/** Workspace bytes the module needs (the larger of its f32 and f64 layouts). */
export function gemmWorkspaceBytes(o: GemmWatOptions): number {
  return Math.max(workspaceOf(o, F32).total, workspaceOf(o, F64).total);
}

function microKernel(o: GemmWatOptions, e: Elem): string {
  const nr = nrOf(o, e);
  const nv = o.nr / 4;
  const vb = 16;
  const acc = (r: number, v: number): string => `$c${r}_${v}`;
  const decl: string[] = [];
  for (let r = 0; r < o.mr; r++) for (let v = 0; v < nv; v++) decl.push(`(local ${acc(r, v)} v128)`);
  for (let v = 0; v < nv; v++) decl.push(`(local $b${v} v128)`);
  const step: string[] = [];
  for (let u = 0; u < o.unroll; u++) {
    for (let v = 0; v < nv; v++) {
      step.push(`(local.set $b${v} (v128.load offset=${e.bytes * u * nr + vb * v} (local.get $bp)))`);
    }
    for (let r = 0; r < o.mr; r++) {
      step.push(
        `(local.set $a (v128.load${8 * e.bytes}_splat offset=${e.bytes * (u * o.mr + r)} (local.get $ap)))`,
      );
      for (let v = 0; v < nv; v++) {
        step.push(
          `(local.set ${acc(r, v)} (${e.vec}.add (local.get ${acc(r, v)}) (${e.vec}.mul (local.get $a) (local.get $b${v}))))`,
        );
      }
    }
  }
  const fullStore: string[] = [];
  const tileStore: string[] = [];
  for (let r = 0; r < o.mr; r++) {
    for (let v = 0; v < nv; v++) {
      const at = `(i32.add (local.get $crow) (i32.const ${vb * v}))`;
      fullStore.push(`(v128.store ${at} (${e.vec}.add (v128.load ${at}) (local.get ${acc(r, v)})))`);
      tileStore.push(
        `(v128.store offset=${e.bytes * r * nr + vb * v} (local.get $tile) (local.get ${acc(r, v)}))`,
      );
    }
    fullStore.push(`(local.set $crow (i32.add (local.get $crow) (local.get $ldcBytes)))`);
  }
  const el = (base: string, index: string): string =>
    `(i32.add ${base} (i32.shl ${index} (i32.const ${e.shift})))`;
  return `
  ;; C[mr x nr] += (A panel) x (B panel) over kcp (a multiple of ${o.unroll}) steps.
  (func $${e.p}_micro (param $ap i32) (param $bp i32) (param $kcp i32) (param $c i32) (param $ldcBytes i32)
               (param $mr i32) (param $nr i32) (param $tile i32)
    (local $a v128) (local $crow i32) (local $r i32) (local $j i32) (local $src i32)
    ${decl.join(' ')}
    (loop $k
      ${step.join('\n      ')}
      (local.set $ap (i32.add (local.get $ap) (i32.const ${e.bytes * o.mr * o.unroll})))
      (local.set $bp (i32.add (local.get $bp) (i32.const ${e.bytes * nr * o.unroll})))
      (br_if $k (local.tee $kcp (i32.sub (local.get $kcp) (i32.const ${o.unroll})))))
    (local.set $crow (local.get $c))
    (if (i32.and (i32.eq (local.get $mr) (i32.const ${o.mr})) (i32.eq (local.get $nr) (i32.const ${nr})))
      (then
        ${fullStore.join('\n        ')}
        (return)))
    ;; Edge tile: spill the accumulators, add only the valid part.
    ${tileStore.join('\n    ')}
    (local.set $r (i32.const 0))
    (loop $rows
      (local.set $j (i32.const 0))
      (local.set $src (i32.add (local.get $tile) (i32.mul (local.get $r) (i32.const ${e.bytes * nr}))))
      (loop $cols
        (${e.t}.store ${el('(local.get $crow)', '(local.get $j)')}
          (${e.t}.add (${e.t}.load ${el('(local.get $crow)', '(local.get $j)')})
                   (${e.t}.load ${el('(local.get $src)', '(local.get $j)')})))
        (br_if $cols (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (local.get $nr))))
      (local.set $crow (i32.add (local.get $crow) (local.get $ldcBytes)))
      (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $mr)))))`;
}

/**
 * Packs a (rows x depth) block of a strided matrix into `width`-row panels laid out [panel][depth][width]
 * times `scale`, zero-padding rows beyond `rows` and depth beyond `depth` up to `depthPad`.
 * Element (i, p) lives at base + (i * si + p * sp) * bytes: the strides encode the transpose.
 */
function packer(name: string, width: number, e: Elem): string {
  return `
  (func ${name} (param $base i32) (param $si i32) (param $sp i32) (param $rows i32) (param $depth i32)
                (param $depthPad i32) (param $scale ${e.t}) (param $dst i32)
    (local $i0 i32) (local $p i32) (local $r i32) (local $i i32) (local $v ${e.t})
    (local.set $i0 (i32.const 0))
    (block $done (loop $panels
      (br_if $done (i32.ge_u (local.get $i0) (local.get $rows)))
      (local.set $p (i32.const 0))
      (loop $depthLoop
        (local.set $r (i32.const 0))
        (loop $lane
          (local.set $i (i32.add (local.get $i0) (local.get $r)))
          (local.set $v (${e.t}.const 0))
          (if (i32.and (i32.lt_u (local.get $i) (local.get $rows)) (i32.lt_u (local.get $p) (local.get $depth)))
            (then (local.set $v (${e.t}.mul (local.get $scale)
              (${e.t}.load (i32.add (local.get $base) (i32.shl
                (i32.add (i32.mul (local.get $i) (local.get $si)) (i32.mul (local.get $p) (local.get $sp)))
                (i32.const ${e.shift}))))))))
          (${e.t}.store (local.get $dst) (local.get $v))
          (local.set $dst (i32.add (local.get $dst) (i32.const ${e.bytes})))
          (br_if $lane (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (i32.const ${width}))))
        (br_if $depthLoop (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (local.get $depthPad))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const ${width})))
      (br $panels))))`;
}

/** C = beta * C (beta = 0 clears C, so NaN or garbage in C never leaks through). */
function scaler(e: Elem): string {
  return `
  (func $${e.p}_scale_c (param $c i32) (param $m i32) (param $n i32) (param $ldc i32) (param $beta ${e.t})
    (local $i i32) (local $j i32) (local $row i32) (local $at i32)
    (if (${e.t}.eq (local.get $beta) (${e.t}.const 1)) (then (return)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $i) (local.get $m)))
      (local.set $row (i32.add (local.get $c) (i32.shl (i32.mul (local.get $i) (local.get $ldc)) (i32.const ${e.shift}))))
      (local.set $j (i32.const 0))
      (block $rowDone (loop $cols
        (br_if $rowDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const ${e.shift}))))
        (${e.t}.store (local.get $at) (if (result ${e.t}) (${e.t}.eq (local.get $beta) (${e.t}.const 0))
          (then (${e.t}.const 0)) (else (${e.t}.mul (local.get $beta) (${e.t}.load (local.get $at))))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $cols)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rows))))`;
}

const minOf = (limit: number | string, rest: string): string =>
  `(select (i32.const ${limit}) ${rest} (i32.lt_u (i32.const ${limit}) ${rest}))`;

/** The exported row-major ?gemm on byte offsets; lda/ldb/ldc in elements; work: workspace_bytes() of scratch. */
function driver(o: GemmWatOptions, e: Elem): string {
  const nr = nrOf(o, e);
  const w = workspaceOf(o, e);
  const byteAt = (base: string, elems: string): string =>
    `(i32.add ${base} (i32.shl ${elems} (i32.const ${e.shift})))`;
  return `
  (func (export "${e.p}gemm") (param $ta i32) (param $tb i32) (param $m i32) (param $n i32) (param $k i32)
        (param $alpha ${e.t}) (param $a i32) (param $lda i32) (param $b i32) (param $ldb i32)
        (param $beta ${e.t}) (param $c i32) (param $ldc i32) (param $work i32)
    (local $jc i32) (local $pc i32) (local $ic i32) (local $jr i32) (local $ir i32)
    (local $nc i32) (local $kc i32) (local $kcp i32) (local $mc i32)
    (local $asi i32) (local $asp i32) (local $bsi i32) (local $bsp i32) (local $apack i32) (local $bpack i32)
    (call $${e.p}_scale_c (local.get $c) (local.get $m) (local.get $n) (local.get $ldc) (local.get $beta))
    (if (i32.or (i32.eqz (local.get $k)) (i32.or (i32.eqz (local.get $m)) (i32.eqz (local.get $n)))) (then (return)))
    ;; op(A)(i, p) and op(B)^T(j, p) as (row stride, depth stride) pairs.
    (if (local.get $ta) (then (local.set $asi (i32.const 1)) (local.set $asp (local.get $lda)))
                        (else (local.set $asi (local.get $lda)) (local.set $asp (i32.const 1))))
    (if (local.get $tb) (then (local.set $bsi (local.get $ldb)) (local.set $bsp (i32.const 1)))
                        (else (local.set $bsi (i32.const 1)) (local.set $bsp (local.get $ldb))))
    (local.set $apack (local.get $work))
    (local.set $bpack (i32.add (local.get $work) (i32.const ${w.bOffset})))
    (block $jDone (loop $jLoop
      (br_if $jDone (i32.ge_u (local.get $jc) (local.get $n)))
      (local.set $nc ${minOf(o.nc, '(i32.sub (local.get $n) (local.get $jc))')})
      (local.set $pc (i32.const 0))
      (block $pDone (loop $pLoop
        (br_if $pDone (i32.ge_u (local.get $pc) (local.get $k)))
        (local.set $kc ${minOf(o.kc, '(i32.sub (local.get $k) (local.get $pc))')})
        (local.set $kcp (i32.and (i32.add (local.get $kc) (i32.const ${o.unroll - 1})) (i32.const ${-o.unroll})))
        (call $${e.p}_pack_b
          ${byteAt('(local.get $b)', '(i32.add (i32.mul (local.get $jc) (local.get $bsi)) (i32.mul (local.get $pc) (local.get $bsp)))')}
          (local.get $bsi) (local.get $bsp) (local.get $nc) (local.get $kc) (local.get $kcp) (${e.t}.const 1)
          (local.get $bpack))
        (local.set $ic (i32.const 0))
        (block $iDone (loop $iLoop
          (br_if $iDone (i32.ge_u (local.get $ic) (local.get $m)))
          (local.set $mc ${minOf(o.mc, '(i32.sub (local.get $m) (local.get $ic))')})
          (call $${e.p}_pack_a
            ${byteAt('(local.get $a)', '(i32.add (i32.mul (local.get $ic) (local.get $asi)) (i32.mul (local.get $pc) (local.get $asp)))')}
            (local.get $asi) (local.get $asp) (local.get $mc) (local.get $kc) (local.get $kcp) (local.get $alpha)
            (local.get $apack))
          (local.set $jr (i32.const 0))
          (block $jrDone (loop $jrLoop
            (br_if $jrDone (i32.ge_u (local.get $jr) (local.get $nc)))
            (local.set $ir (i32.const 0))
            (block $irDone (loop $irLoop
              (br_if $irDone (i32.ge_u (local.get $ir) (local.get $mc)))
              (call $${e.p}_micro
                ${byteAt('(local.get $apack)', '(i32.mul (local.get $ir) (local.get $kcp))')}
                ${byteAt('(local.get $bpack)', '(i32.mul (local.get $jr) (local.get $kcp))')}
                (local.get $kcp)
                ${byteAt('(local.get $c)', '(i32.add (i32.mul (i32.add (local.get $ic) (local.get $ir)) (local.get $ldc)) (i32.add (local.get $jc) (local.get $jr)))')}
                (i32.shl (local.get $ldc) (i32.const ${e.shift}))
                ${minOf(o.mr, '(i32.sub (local.get $mc) (local.get $ir))')}
                ${minOf(nr, '(i32.sub (local.get $nc) (local.get $jr))')}
                (i32.add (local.get $work) (i32.const ${w.tileOffset})))
              (local.set $ir (i32.add (local.get $ir) (i32.const ${o.mr})))
              (br $irLoop)))
            (local.set $jr (i32.add (local.get $jr) (i32.const ${nr})))
            (br $jrLoop)))
          (local.set $ic (i32.add (local.get $ic) (i32.const ${o.mc})))
          (br $iLoop)))
        (local.set $pc (i32.add (local.get $pc) (i32.const ${o.kc})))
        (br $pLoop)))
      (local.set $jc (i32.add (local.get $jc) (i32.const ${o.nc})))
      (br $jLoop))))`;
}

export function gemmWat(o: GemmWatOptions = GEMM_WAT_DEFAULTS): string {
  if (o.nr % 4 !== 0) throw new Error(`nr must be a multiple of 4, got ${o.nr}`);
  if ((o.unroll & (o.unroll - 1)) !== 0) throw new Error(`unroll must be a power of 2, got ${o.unroll}`);
  const parts = [F32, F64].map(
    (e) =>
      microKernel(o, e) +
      packer(`$${e.p}_pack_a`, o.mr, e) +
      packer(`$${e.p}_pack_b`, nrOf(o, e), e) +
      scaler(e) +
      driver(o, e),
  );
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "workspace_bytes") (result i32) (i32.const ${gemmWorkspaceBytes(o)}))
${parts.join('\n')}
)
`;
}
