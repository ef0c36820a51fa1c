/**
 * Black–Scholes–Merton closed form for European options on an asset with a continuous dividend yield,
 * and the standard normal CDF it needs (Hart's double-precision rational approximation as given by
 * G. West, "Better approximations to cumulative normal functions", 2005: error below 1e-14).
 */

export type OptionRight = 'call' | 'put';

export interface EuropeanTerms {
  readonly spot: number;
  readonly strike: number;
  /** Continuously compounded risk-free rate. */
  readonly rate: number;
  readonly vol: number;
  /** Years to expiry. */
  readonly maturity: number;
  readonly dividend: number;
  readonly right: OptionRight;
}

export function normalCdf(x: number): number {
  const ax = Math.abs(x);
  let c: number;
  if (ax > 37) c = 0;
  else {
    const e = Math.exp((-ax * ax) / 2);
    if (ax < 7.07106781186547) {
      let b = 3.52624965998911e-2 * ax + 0.700383064443688;
      b = b * ax + 6.37396220353165;
      b = b * ax + 33.912866078383;
      b = b * ax + 112.079291497871;
      b = b * ax + 221.213596169931;
      b = b * ax + 220.206867912376;
      c = e * b;
      b = 8.83883476483184e-2 * ax + 1.75566716318264;
      b = b * ax + 16.064177579207;
      b = b * ax + 86.7807322029461;
      b = b * ax + 296.564248779674;
      b = b * ax + 637.333633378831;
      b = b * ax + 793.826512519948;
      b = b * ax + 440.413735824752;
      c /= b;
    } else {
      let b = ax + 0.65;
      b = ax + 4 / b;
      b = ax + 3 / b;
      b = ax + 2 / b;
      b = ax + 1 / b;
      c = e / b / 2.506628274631;
    }
  }
  return x > 0 ? 1 - c : c;
}

/** Price at time 0; at or past expiry (maturity <= 0) the intrinsic value. */
export function blackScholes(t: EuropeanTerms): number {
  const { spot: s, strike: k, rate: r, vol: v, maturity: T, dividend: q } = t;
  if (T <= 0 || v <= 0) {
    const fwd = s * Math.exp(-q * Math.max(T, 0));
    const df = Math.exp(-r * Math.max(T, 0));
    return t.right === 'call' ? Math.max(fwd - k * df, 0) : Math.max(k * df - fwd, 0);
  }
  const sq = v * Math.sqrt(T);
  const d1 = (Math.log(s / k) + (r - q + 0.5 * v * v) * T) / sq;
  const d2 = d1 - sq;
  const a = s * Math.exp(-q * T);
  const b = k * Math.exp(-r * T);
  return t.right === 'call' ? a * normalCdf(d1) - b * normalCdf(d2) : b * normalCdf(-d2) - a * normalCdf(-d1);
}
