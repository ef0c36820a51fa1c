/**
 * The service's fuzz corpus: random, mutated and hostile requests (bad JSON, wrong types, unknown
 * fields, bad keys, weird paths, parameters that overflow a validator or an estimate). Used alone by
 * fuzz.test.ts and interleaved with other tenants' normal submissions by cross-tenant.test.ts.
 */
import type { InjectOptions } from 'fastify';

const WEIRD: unknown[] = [
  null,
  true,
  -1,
  0,
  1e308,
  -0,
  2 ** 53,
  'x',
  '',
  '😀',
  [],
  {},
  [1, 2],
  { a: { b: { c: [] } } },
  'a'.repeat(300),
  NaN,
  3.5,
];

/** Parameters that once hurt more than their own request (issue 19): a NaN estimate, a stack overflow. */
const HOSTILE_PARAMS: string[] = [
  '{"cells":[8,8,8]}',
  '{"cells":[4,5,6],"steps":2}',
  '{"cells":[257,1,1]}',
  '{"cells":[8,8]}',
  '{"atoms":1e12}',
  `{"cells":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  `{"x":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`,
  `{"list":[${new Array(2000).fill('{"a":[1]}').join(',')}]}`,
];

export interface FuzzKeys {
  /** The fuzzing tenant's own key. */
  readonly user: string;
  /** A key it may also use (the admin's in fuzz.test.ts; its own again where it must stay a tenant). */
  readonly other: string;
}

export interface Fuzzer {
  /** The next request of the corpus. */
  next(): InjectOptions;
  /** Records an accepted job's id, so later requests name real jobs too. */
  accepted(id: string): void;
}

export function fuzzer(rand: () => number, keys: FuzzKeys): Fuzzer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const knownIds: string[] = ['job_00000000000000000000'];
  const validBody = (): Record<string, unknown> =>
    pick([
      { type: 'sleep', params: { ms: Math.floor(rand() * 3) } },
      { type: 'gemm', params: { n: 1 + Math.floor(rand() * 12) } },
      {
        type: 'gemm',
        params: { n: 4, dtype: pick(['f32', 'f64', 'f16', 'bf16']), panels: 2 },
        priority: Math.floor(rand() * 20) - 10,
      },
      { type: 'sleep', params: {}, idempotencyKey: `k${Math.floor(rand() * 50)}` },
    ]);
  const mutate = (b: Record<string, unknown>): unknown => {
    const c = structuredClone(b) as Record<string, unknown>;
    switch (Math.floor(rand() * 9)) {
      case 0:
        delete c[pick(Object.keys(c))];
        return c;
      case 1:
        c[pick(['type', 'params', 'priority', 'idempotencyKey', 'extra', '__proto__', 'constructor'])] =
          pick(WEIRD);
        return c;
      case 2:
        (c['params'] as Record<string, unknown>)[
          pick(['n', 'ms', 'dtype', 'panels', 'seed', 'device', 'steps', 'zzz'])
        ] = pick(WEIRD);
        return c;
      case 3:
        return pick(WEIRD);
      case 4:
        c['type'] = pick(['GEMM', 'gemm ', 'md', 'custom-kernel', '../etc', 'a'.repeat(40), 'sleep']);
        return c;
      case 5:
        (c['params'] as Record<string, unknown>)['n'] = pick([0, -5, 8193, 1e9, 1.5, 64]);
        return c;
      default:
        return c;
    }
  };
  const submit = (auth: Record<string, string>): InjectOptions => {
    let payload: string;
    if (rand() < 0.1) {
      // Hostile parameters, raw (some are deeper than JSON.stringify can go); md, whose estimate was
      // NaN for a cells array, half of the time.
      const type = rand() < 0.5 ? 'md' : pick(['sleep', 'option', 'var', 'gemm', 'custom-kernel']);
      payload = `{"type":"${type}","params":${pick(HOSTILE_PARAMS)}}`;
    } else {
      const body = rand() < 0.35 ? validBody() : mutate(validBody());
      const raw = JSON.stringify(body) ?? 'null';
      payload =
        rand() < 0.08
          ? raw.slice(0, Math.floor(rand() * raw.length))
          : rand() < 0.02
            ? 'x'.repeat(20_000)
            : raw;
    }
    const contentType =
      rand() < 0.05
        ? pick(['text/plain', 'application/xml', 'application/json; charset=utf-8', ''])
        : 'application/json';
    return {
      method: 'POST',
      url: rand() < 0.1 ? `/v1/jobs?wait=${pick(['0.05', '0.2', '61', 'x'])}` : '/v1/jobs',
      headers: {
        ...auth,
        'content-type': contentType,
        ...(rand() < 0.1 ? { 'idempotency-key': `h${Math.floor(rand() * 20)}` } : {}),
      },
      payload,
    };
  };
  const other = (auth: Record<string, string>): InjectOptions => {
    const id =
      rand() < 0.7
        ? pick(knownIds)
        : pick(['job_', 'job_zz', '..%2F..', 'job_' + 'f'.repeat(20), '%00', 'a'.repeat(500)]);
    const url = pick([
      `/v1/jobs/${id}`,
      `/v1/jobs/${id}/result`,
      `/v1/jobs/${id}/trace`,
      `/v1/jobs/${id}/cancel`,
      `/v1/jobs?limit=${pick(['1', '0', '-1', 'x', '99999', '50'])}&state=${pick(['queued', 'nope', 'succeeded'])}`,
      '/v1/devices',
      '/v1/stats',
      '/healthz',
      '/metrics',
      '/v1/tenants',
      '/nope',
      '/v1/jobs?before=abc',
      '/openapi.json',
      `/${'p'.repeat(3000)}`,
    ]);
    return {
      method: url.endsWith('/cancel') ? 'POST' : pick(['GET', 'GET', 'GET', 'DELETE', 'PUT', 'PATCH']),
      url,
      headers: auth,
    };
  };
  return {
    next(): InjectOptions {
      const r = rand();
      const auth: Record<string, string> =
        r < 0.05
          ? {}
          : r < 0.1
            ? { authorization: `Bearer ${pick(['', 'tdm_', 'tdm_zz_yy', keys.user.slice(0, -1) + 'A'])}` }
            : { authorization: `Bearer ${rand() < 0.5 ? keys.user : keys.other}` };
      return rand() < 0.55 ? submit(auth) : other(auth);
    },
    accepted(id: string): void {
      knownIds.push(id);
    },
  };
}
