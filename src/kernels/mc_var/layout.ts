/**
 * A portfolio packed into one flat tensor for the mc_var kernels, so a launch binds two buffers
 * (portfolio in, losses out) whatever the number of assets and positions:
 *   spot[d] vol[d] drift[d] dividend[d] chol[d*d] asset[np] kind[np] strike[np] maturity[np] quantity[np]
 * kind: 0 stock, 1 call, 2 put. Indices are stored as floats (exact below 2^24).
 */

export interface PortfolioArrays {
  readonly assets: number;
  readonly positions: number;
  readonly rate: number;
  readonly spot: ArrayLike<number>;
  readonly vol: ArrayLike<number>;
  readonly drift: ArrayLike<number>;
  readonly dividend: ArrayLike<number>;
  readonly chol: ArrayLike<number>;
  readonly posAsset: ArrayLike<number>;
  readonly posKind: ArrayLike<number>;
  readonly posStrike: ArrayLike<number>;
  readonly posMaturity: ArrayLike<number>;
  readonly posQuantity: ArrayLike<number>;
}

export function packedLength(d: number, np: number): number {
  return 4 * d + d * d + 5 * np;
}

export function packPortfolio(pf: PortfolioArrays): Float64Array {
  const d = pf.assets;
  const np = pf.positions;
  const out = new Float64Array(packedLength(d, np));
  let o = 0;
  for (const a of [
    pf.spot,
    pf.vol,
    pf.drift,
    pf.dividend,
    pf.chol,
    pf.posAsset,
    pf.posKind,
    pf.posStrike,
    pf.posMaturity,
    pf.posQuantity,
  ]) {
    for (let i = 0; i < a.length; i++) out[o++] = a[i]!;
  }
  return out;
}

export function unpackPortfolio(
  data: ArrayLike<number>,
  d: number,
  np: number,
  rate: number,
): PortfolioArrays {
  const view = (start: number, n: number): number[] => Array.from({ length: n }, (_, i) => data[start + i]!);
  let o = 0;
  const take = (n: number): number[] => {
    const v = view(o, n);
    o += n;
    return v;
  };
  return {
    assets: d,
    positions: np,
    rate,
    spot: take(d),
    vol: take(d),
    drift: take(d),
    dividend: take(d),
    chol: take(d * d),
    posAsset: take(np),
    posKind: take(np),
    posStrike: take(np),
    posMaturity: take(np),
    posQuantity: take(np),
  };
}
