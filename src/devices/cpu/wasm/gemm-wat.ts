/**
 * Generates the WebAssembly text of the f32 SIMD GEMM. The register-blocked micro-kernel is unrolled
 * (MR rows x NR columns of accumulators, `unroll` k steps per loop turn), which is why this is a small
 * generator rather than hand-written WAT: the block sizes were tuned by measurement (bench/cpu-gemm.ts).
 *
 * Algorithm (Goto/BLIS): C = beta*C first; then for each NC-wide column block of C, each KC-deep slice
 * of k, B's slice is packed into NR-column panels; for each MC-high row block, A's block is packed
 * (times alpha) into MR-row panels; the micro-kernel multiplies one A panel by one B panel and adds the
 * MR x NR result into C. Packing absorbs the transposes and pads edges and k with zeros, so the hot
 * loop has one shape. Pointers are byte offsets into the imported (shared) memory.
 */

export interface GemmWatOptions {
  readonly mr: number;
  /** Multiple of 4 (one f32x4 per 4 columns). */
  readonly nr: number;
  readonly kc: number;
  readonly mc: number;
  readonly nc: number;
  /** k steps per micro-kernel loop turn; kc is padded with zeros to a multiple of it. */
  readonly unroll: number;
}

export const GEMM_WAT_DEFAULTS: GemmWatOptions = { mr: 2, nr: 16, kc: 256, mc: 128, nc: 512, unroll: 1 };

const roundUp = (x: number, m: number): number => Math.ceil(x / m) * m;

/** Workspace bytes: packed A block, packed B block, one MR x NR edge tile. */
export function gemmWorkspaceBytes(o: GemmWatOptions): number {
  const kcp = roundUp(o.kc, o.unroll);
  return 4 * (roundUp(o.mc, o.mr) * kcp + kcp * roundUp(o.nc, o.nr) + o.mr * o.nr);
}

function microKernel(o: GemmWatOptions): string {
  const nv = o.nr / 4;
  const acc = (r: number, v: number): string => `$c${r}_${v}`;
  const decl: string[] = [];
  for (let r = 0; r < o.mr; r++) for (let v = 0; v < nv; v++) decl.push(`(local ${acc(r, v)} v128)`);
  for (let v = 0; v < nv; v++) decl.push(`(local $b${v} v128)`);
  const step: string[] = [];
  for (let u = 0; u < o.unroll; u++) {
    for (let v = 0; v < nv; v++) {
      step.push(`(local.set $b${v} (v128.load offset=${4 * (u * o.nr + 4 * v)} (local.get $bp)))`);
    }
    for (let r = 0; r < o.mr; r++) {
      step.push(`(local.set $a (v128.load32_splat offset=${4 * (u * o.mr + r)} (local.get $ap)))`);
      for (let v = 0; v < nv; v++) {
        step.push(
          `(local.set ${acc(r, v)} (f32x4.add (local.get ${acc(r, v)}) (f32x4.mul (local.get $a) (local.get $b${v}))))`,
        );
      }
    }
  }
  const fullStore: string[] = [];
  const tileStore: string[] = [];
  for (let r = 0; r < o.mr; r++) {
    for (let v = 0; v < nv; v++) {
      const at = `(i32.add (local.get $crow) (i32.const ${16 * v}))`;
      fullStore.push(`(v128.store ${at} (f32x4.add (v128.load ${at}) (local.get ${acc(r, v)})))`);
      tileStore.push(
        `(v128.store offset=${4 * (r * o.nr + 4 * v)} (local.get $tile) (local.get ${acc(r, v)}))`,
      );
    }
    fullStore.push(`(local.set $crow (i32.add (local.get $crow) (local.get $ldc4)))`);
  }
  return `
  ;; C[mr x nr] += (A panel) x (B panel) over kcp (a multiple of ${o.unroll}) steps.
  (func $micro (param $ap i32) (param $bp i32) (param $kcp i32) (param $c i32) (param $ldc4 i32)
               (param $mr i32) (param $nr i32) (param $tile i32)
    (local $a v128) (local $crow i32) (local $r i32) (local $j i32) (local $src i32)
    ${decl.join(' ')}
    (loop $k
      ${step.join('\n      ')}
      (local.set $ap (i32.add (local.get $ap) (i32.const ${4 * o.mr * o.unroll})))
      (local.set $bp (i32.add (local.get $bp) (i32.const ${4 * o.nr * o.unroll})))
      (br_if $k (local.tee $kcp (i32.sub (local.get $kcp) (i32.const ${o.unroll})))))
    (local.set $crow (local.get $c))
    (if (i32.and (i32.eq (local.get $mr) (i32.const ${o.mr})) (i32.eq (local.get $nr) (i32.const ${o.nr})))
      (then
        ${fullStore.join('\n        ')}
        (return)))
    ;; Edge tile: spill the accumulators, add only the valid part.
    ${tileStore.join('\n    ')}
    (local.set $r (i32.const 0))
    (loop $rows
      (local.set $j (i32.const 0))
      (local.set $src (i32.add (local.get $tile) (i32.mul (local.get $r) (i32.const ${4 * o.nr}))))
      (loop $cols
        (f32.store (i32.add (local.get $crow) (i32.shl (local.get $j) (i32.const 2)))
          (f32.add (f32.load (i32.add (local.get $crow) (i32.shl (local.get $j) (i32.const 2))))
                   (f32.load (i32.add (local.get $src) (i32.shl (local.get $j) (i32.const 2))))))
        (br_if $cols (i32.lt_u (local.tee $j (i32.add (local.get $j) (i32.const 1))) (local.get $nr))))
      (local.set $crow (i32.add (local.get $crow) (local.get $ldc4)))
      (br_if $rows (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (local.get $mr)))))`;
}

/**
 * Packs a (rows x depth) block of a strided matrix into `width`-row panels laid out [panel][depth][width]
 * times `scale`, zero-padding rows beyond `rows` and depth beyond `depth` up to `depthPad`.
 * Element (i, p) lives at base + (i * si + p * sp) * 4: the strides encode the transpose.
 */
function packer(name: string, width: number): string {
  return `
  (func ${name} (param $base i32) (param $si i32) (param $sp i32) (param $rows i32) (param $depth i32)
                (param $depthPad i32) (param $scale f32) (param $dst i32)
    (local $i0 i32) (local $p i32) (local $r i32) (local $i i32) (local $v f32)
    (local.set $i0 (i32.const 0))
    (block $done (loop $panels
      (br_if $done (i32.ge_u (local.get $i0) (local.get $rows)))
      (local.set $p (i32.const 0))
      (loop $depthLoop
        (local.set $r (i32.const 0))
        (loop $lane
          (local.set $i (i32.add (local.get $i0) (local.get $r)))
          (local.set $v (f32.const 0))
          (if (i32.and (i32.lt_u (local.get $i) (local.get $rows)) (i32.lt_u (local.get $p) (local.get $depth)))
            (then (local.set $v (f32.mul (local.get $scale)
              (f32.load (i32.add (local.get $base) (i32.shl
                (i32.add (i32.mul (local.get $i) (local.get $si)) (i32.mul (local.get $p) (local.get $sp)))
                (i32.const 2))))))))
          (f32.store (local.get $dst) (local.get $v))
          (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
          (br_if $lane (i32.lt_u (local.tee $r (i32.add (local.get $r) (i32.const 1))) (i32.const ${width}))))
        (br_if $depthLoop (i32.lt_u (local.tee $p (i32.add (local.get $p) (i32.const 1))) (local.get $depthPad))))
      (local.set $i0 (i32.add (local.get $i0) (i32.const ${width})))
      (br $panels))))`;
}

export function gemmWat(o: GemmWatOptions = GEMM_WAT_DEFAULTS): string {
  if (o.nr % 4 !== 0) throw new Error(`nr must be a multiple of 4, got ${o.nr}`);
  const kcp = roundUp(o.kc, o.unroll);
  const bOffset = 4 * roundUp(o.mc, o.mr) * kcp;
  const tileOffset = bOffset + 4 * kcp * roundUp(o.nc, o.nr);
  return `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "workspace_bytes") (result i32) (i32.const ${gemmWorkspaceBytes(o)}))
${microKernel(o)}
${packer('$pack_a', o.mr)}
${packer('$pack_b', o.nr)}

  ;; C = beta * C (beta = 0 clears C, so NaN or garbage in C never leaks through).
  (func $scale_c (param $c i32) (param $m i32) (param $n i32) (param $ldc i32) (param $beta f32)
    (local $i i32) (local $j i32) (local $row i32) (local $at i32)
    (if (f32.eq (local.get $beta) (f32.const 1)) (then (return)))
    (block $done (loop $rows
      (br_if $done (i32.ge_u (local.get $i) (local.get $m)))
      (local.set $row (i32.add (local.get $c) (i32.shl (i32.mul (local.get $i) (local.get $ldc)) (i32.const 2))))
      (local.set $j (i32.const 0))
      (block $rowDone (loop $cols
        (br_if $rowDone (i32.ge_u (local.get $j) (local.get $n)))
        (local.set $at (i32.add (local.get $row) (i32.shl (local.get $j) (i32.const 2))))
        (f32.store (local.get $at) (if (result f32) (f32.eq (local.get $beta) (f32.const 0))
          (then (f32.const 0)) (else (f32.mul (local.get $beta) (f32.load (local.get $at))))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $cols)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $rows))))

  ;; Row-major sgemm on byte offsets; lda/ldb/ldc in elements; work: workspace_bytes() of scratch.
  (func (export "sgemm") (param $ta i32) (param $tb i32) (param $m i32) (param $n i32) (param $k i32)
        (param $alpha f32) (param $a i32) (param $lda i32) (param $b i32) (param $ldb i32)
        (param $beta f32) (param $c i32) (param $ldc i32) (param $work i32)
    (local $jc i32) (local $pc i32) (local $ic i32) (local $jr i32) (local $ir i32)
    (local $nc i32) (local $kc i32) (local $kcp i32) (local $mc i32)
    (local $asi i32) (local $asp i32) (local $bsi i32) (local $bsp i32) (local $apack i32) (local $bpack i32)
    (call $scale_c (local.get $c) (local.get $m) (local.get $n) (local.get $ldc) (local.get $beta))
    (if (i32.or (i32.eqz (local.get $k)) (i32.or (i32.eqz (local.get $m)) (i32.eqz (local.get $n)))) (then (return)))
    ;; op(A)(i, p) and op(B)^T(j, p) as (row stride, depth stride) pairs.
    (if (local.get $ta) (then (local.set $asi (i32.const 1)) (local.set $asp (local.get $lda)))
                        (else (local.set $asi (local.get $lda)) (local.set $asp (i32.const 1))))
    (if (local.get $tb) (then (local.set $bsi (local.get $ldb)) (local.set $bsp (i32.const 1)))
                        (else (local.set $bsi (i32.const 1)) (local.set $bsp (local.get $ldb))))
    (local.set $apack (local.get $work))
    (local.set $bpack (i32.add (local.get $work) (i32.const ${bOffset})))
    (block $jDone (loop $jLoop
      (br_if $jDone (i32.ge_u (local.get $jc) (local.get $n)))
      (local.set $nc (select (i32.const ${o.nc}) (i32.sub (local.get $n) (local.get $jc))
        (i32.lt_u (i32.const ${o.nc}) (i32.sub (local.get $n) (local.get $jc)))))
      (local.set $pc (i32.const 0))
      (block $pDone (loop $pLoop
        (br_if $pDone (i32.ge_u (local.get $pc) (local.get $k)))
        (local.set $kc (select (i32.const ${o.kc}) (i32.sub (local.get $k) (local.get $pc))
          (i32.lt_u (i32.const ${o.kc}) (i32.sub (local.get $k) (local.get $pc)))))
        (local.set $kcp (i32.and (i32.add (local.get $kc) (i32.const ${o.unroll - 1})) (i32.const ${-o.unroll})))
        (call $pack_b
          (i32.add (local.get $b) (i32.shl (i32.add (i32.mul (local.get $jc) (local.get $bsi))
                                                    (i32.mul (local.get $pc) (local.get $bsp))) (i32.const 2)))
          (local.get $bsi) (local.get $bsp) (local.get $nc) (local.get $kc) (local.get $kcp) (f32.const 1)
          (local.get $bpack))
        (local.set $ic (i32.const 0))
        (block $iDone (loop $iLoop
          (br_if $iDone (i32.ge_u (local.get $ic) (local.get $m)))
          (local.set $mc (select (i32.const ${o.mc}) (i32.sub (local.get $m) (local.get $ic))
            (i32.lt_u (i32.const ${o.mc}) (i32.sub (local.get $m) (local.get $ic)))))
          (call $pack_a
            (i32.add (local.get $a) (i32.shl (i32.add (i32.mul (local.get $ic) (local.get $asi))
                                                      (i32.mul (local.get $pc) (local.get $asp))) (i32.const 2)))
            (local.get $asi) (local.get $asp) (local.get $mc) (local.get $kc) (local.get $kcp) (local.get $alpha)
            (local.get $apack))
          (local.set $jr (i32.const 0))
          (block $jrDone (loop $jrLoop
            (br_if $jrDone (i32.ge_u (local.get $jr) (local.get $nc)))
            (local.set $ir (i32.const 0))
            (block $irDone (loop $irLoop
              (br_if $irDone (i32.ge_u (local.get $ir) (local.get $mc)))
              (call $micro
                (i32.add (local.get $apack) (i32.shl (i32.mul (local.get $ir) (local.get $kcp)) (i32.const 2)))
                (i32.add (local.get $bpack) (i32.shl (i32.mul (local.get $jr) (local.get $kcp)) (i32.const 2)))
                (local.get $kcp)
                (i32.add (local.get $c) (i32.shl (i32.add (i32.mul (i32.add (local.get $ic) (local.get $ir)) (local.get $ldc))
                                                          (i32.add (local.get $jc) (local.get $jr))) (i32.const 2)))
                (i32.shl (local.get $ldc) (i32.const 2))
                (select (i32.const ${o.mr}) (i32.sub (local.get $mc) (local.get $ir))
                  (i32.lt_u (i32.const ${o.mr}) (i32.sub (local.get $mc) (local.get $ir))))
                (select (i32.const ${o.nr}) (i32.sub (local.get $nc) (local.get $jr))
                  (i32.lt_u (i32.const ${o.nr}) (i32.sub (local.get $nc) (local.get $jr))))
                (i32.add (local.get $work) (i32.const ${tileOffset})))
              (local.set $ir (i32.add (local.get $ir) (i32.const ${o.mr})))
              (br $irLoop)))
            (local.set $jr (i32.add (local.get $jr) (i32.const ${o.nr})))
            (br $jrLoop)))
          (local.set $ic (i32.add (local.get $ic) (i32.const ${o.mc})))
          (br $iLoop)))
        (local.set $pc (i32.add (local.get $pc) (i32.const ${o.kc})))
        (br $pLoop)))
      (local.set $jc (i32.add (local.get $jc) (i32.const ${o.nc})))
      (br $jLoop))))
)
`;
}
