/**
 * Service configuration, parsed once (from defaults, the environment and CLI flags) and validated here,
 * then passed down. Nothing else in src/service reads process.env.
 */
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { TandemError } from '../core/errors.js';
import { HARDWARE_KINDS } from '../devices/device.js';

/** Operator rule: a job class runs on a device class. First matching rule wins. */
export interface HardwareRule {
  readonly jobClass: string;
  /** 'largest-gpu' | 'smallest-gpu' | 'gpu' | 'cpu' | 'any' | a device kind or id ('cuda0'). */
  readonly deviceClass: string;
  /** true: a constraint (fail if none); false: a preference (fall back to any device). */
  readonly strict: boolean;
}

export interface TenantQuotaDefaults {
  readonly maxConcurrentJobs: number;
  readonly maxDeviceMemoryBytes: number;
  readonly maxQueuedJobs: number;
  /** A tenant's ceiling on a job's timeoutSeconds unless set on the tenant (`keys create --max-timeout`). */
  readonly maxTimeoutSeconds: number;
}

/** Admission that sheds load before latency collapses (runner/load-shedder.ts). */
export interface LoadShedConfig {
  readonly enabled: boolean;
  /** The longest expected queue wait accepted: the queued-jobs budget is drain rate × this. */
  readonly targetWaitSeconds: number;
  /** The budget's floor (a cold service, or long jobs that drain slowly) and its ceiling (memory). */
  readonly minBacklog: number;
  readonly maxBacklog: number;
  /** Event-loop delay (smoothed, ms) above which tenants submitting faster than their share are refused. */
  readonly maxLoopDelayMs: number;
  /** Submissions in progress at once (parsing, waiting for the group commit, held by ?wait). */
  readonly maxInFlight: number;
}

export interface ServiceConfig {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** Directory of the built dashboard (web/dist); absent: no dashboard. */
  readonly webDir: string | null;
  /** 'full' fsyncs every commit group: an accepted job survives power loss, not just kill -9. */
  readonly durability: 'full' | 'normal';
  readonly maxRunningJobs: number;
  readonly inlineResultBytes: number;
  readonly bodyLimitBytes: number;
  /** Requests per second per tenant (token bucket refill) and the burst size. */
  readonly rateLimitPerSec: number;
  readonly rateLimitBurst: number;
  readonly quotas: TenantQuotaDefaults;
  /** A job's time budget when neither the request nor its type says (a type usually declares one). */
  readonly defaultJobTimeoutSeconds: number;
  /**
   * How long after its deadline a job that has not stopped (a task still running: a hung GPU kernel)
   * is declared hung: its GPU is given up for the process and the service relaunched (watchdog).
   */
  readonly deadlineGraceMs: number;
  readonly shed: LoadShedConfig;
  readonly hardwareRules: readonly HardwareRule[];
  /**
   * Fair sharing of devices at the task level: each job's tasks are charged to its tenant and the
   * runtime's scheduler gives free devices to the tenant most behind in device time per weight
   * (runner/tenant-share.ts). TANDEM_FAIR_SHARE=0 turns it off (jobs' tasks then run first come, first
   * served, as before; the job starts stay fair either way).
   */
  readonly fairShare: boolean;
  /** Runtime options: which backends to open; false runs without a runtime (API only). */
  readonly runtime: {
    readonly enabled: boolean;
    readonly backends: readonly string[];
    readonly cpuThreads: number;
    /** Run device calibrations not cached yet at start (slower first start, better placement). */
    readonly calibrate: boolean;
    readonly cacheDir: string;
  };
  readonly logLevel: 'silent' | 'error' | 'warn' | 'info' | 'debug';
  /**
   * Slow clients: the request line and headers must arrive within `headersTimeoutMs`, the whole request
   * (body included) within `requestTimeoutMs`; an idle keep-alive connection closes after
   * `keepAliveTimeoutMs`. A `?wait` answer may take 60 s: these bound receiving, not answering.
   */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /**
   * `host:port` of a second listener that serves only `/metrics` without a key (for a Prometheus on a
   * private network); null: `/metrics` is served on the API port to admin keys only.
   */
  readonly metricsListen: string | null;
  /**
   * A finished job whose outcome the store refuses (disk full) is retried with backoff; after this long
   * each retry also offers it as failed (TANDEM_ERR_UNAVAILABLE), for an outcome that alone does not fit.
   */
  readonly outcomeRetryMs: number;
  /**
   * The interactive lane keeps the event loop polling this long (µs) after each request arrives or is
   * answered, so the next one is read without a sleep and a wake-up (serving/hot-loop.ts); 0: off.
   */
  readonly laneSpinUs: number;
  /** How often the device history (GET /v1/devices/history, 900 samples kept) is sampled. */
  readonly historyIntervalMs: number;
}

export const DEFAULT_HARDWARE_RULES: readonly HardwareRule[] = [
  { jobClass: 'training', deviceClass: 'largest-gpu', strict: false },
  { jobClass: 'throughput', deviceClass: 'gpu', strict: false },
  { jobClass: 'latency', deviceClass: 'cpu', strict: false },
  { jobClass: 'batch', deviceClass: 'any', strict: false },
];

export const DEFAULT_CONFIG: ServiceConfig = {
  host: '127.0.0.1',
  port: 8080,
  dataDir: '.tandem/data',
  webDir: null,
  durability: 'full',
  maxRunningJobs: 2,
  inlineResultBytes: 64 * 1024,
  bodyLimitBytes: 256 * 1024,
  rateLimitPerSec: 5_000,
  rateLimitBurst: 10_000,
  quotas: {
    maxConcurrentJobs: 4,
    maxDeviceMemoryBytes: 8 * 1024 ** 3,
    maxQueuedJobs: 100_000,
    maxTimeoutSeconds: 24 * 3600,
  },
  defaultJobTimeoutSeconds: 3600,
  deadlineGraceMs: 10_000,
  shed: {
    enabled: true,
    targetWaitSeconds: 10,
    minBacklog: 1_000,
    maxBacklog: 100_000,
    maxLoopDelayMs: 20,
    maxInFlight: 10_000,
  },
  hardwareRules: DEFAULT_HARDWARE_RULES,
  fairShare: true,
  runtime: {
    enabled: true,
    backends: [...HARDWARE_KINDS],
    // Leave one core to the event loop (see server.ts).
    cpuThreads: Math.max(1, availableParallelism() - 1),
    calibrate: true,
    cacheDir: '.tandem/cache',
  },
  logLevel: 'warn',
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 10_000,
  metricsListen: null,
  outcomeRetryMs: 30_000,
  laneSpinUs: 0,
  historyIntervalMs: 1000,
};

export type ConfigOverrides = { -readonly [K in keyof ServiceConfig]?: ServiceConfig[K] };

function intIn(name: string, raw: string | number, min: number, max: number): number {
  const v = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(v) || v < min || v > max)
    throw new TandemError(
      'TANDEM_ERR_CONFIG',
      `${name} must be an integer in [${min}, ${max}], got ${String(raw)}`,
    );
  return v;
}

function shedFromEnv(
  env: Readonly<Record<string, string | undefined>>,
  base: LoadShedConfig,
): LoadShedConfig {
  const flag = env['TANDEM_SHED'];
  if (flag !== undefined && flag !== '0' && flag !== '1')
    throw new TandemError('TANDEM_ERR_CONFIG', `TANDEM_SHED is 0|1, got ${flag}`);
  const [min, max] = (env['TANDEM_SHED_BACKLOG'] ?? '').split(':');
  const shed: LoadShedConfig = {
    ...base,
    enabled: flag === undefined ? base.enabled : flag === '1',
    targetWaitSeconds: env['TANDEM_SHED_WAIT']
      ? intIn('TANDEM_SHED_WAIT', env['TANDEM_SHED_WAIT'], 1, 86_400)
      : base.targetWaitSeconds,
    minBacklog: min ? intIn('TANDEM_SHED_BACKLOG', min, 1, 1e9) : base.minBacklog,
    maxBacklog: max ? intIn('TANDEM_SHED_BACKLOG max', max, 1, 1e9) : base.maxBacklog,
    maxLoopDelayMs: env['TANDEM_SHED_LOOP_MS']
      ? intIn('TANDEM_SHED_LOOP_MS', env['TANDEM_SHED_LOOP_MS'], 1, 60_000)
      : base.maxLoopDelayMs,
  };
  if (shed.minBacklog > shed.maxBacklog)
    throw new TandemError(
      'TANDEM_ERR_CONFIG',
      `TANDEM_SHED_BACKLOG: min ${shed.minBacklog} > max ${shed.maxBacklog}`,
    );
  return shed;
}

/** Parses "training=largest-gpu,latency=cpu!" ('!' makes the rule strict). */
export function parseHardwareRules(text: string): HardwareRule[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((pair) => {
      const m = /^([a-z][\w-]*)=([\w-]+)(!?)$/i.exec(pair);
      if (!m)
        throw new TandemError('TANDEM_ERR_CONFIG', `hardware rule "${pair}" is not class=deviceClass[!]`);
      return { jobClass: m[1]!, deviceClass: m[2]!, strict: m[3] === '!' };
    });
}

/** "host:port" or ":port" / "port" (host 127.0.0.1); IPv6 hosts in brackets ("[::1]:9464"). */
export function parseListenAddress(text: string, what: string): { host: string; port: number } {
  const m = /^(?:(\[[0-9a-f:.]+\]|[\w.-]+)?:)?(\d{1,5})$/i.exec(text.trim());
  if (!m) throw new TandemError('TANDEM_ERR_CONFIG', `${what} must be host:port, got "${text}"`);
  const host = m[1] ? m[1].replace(/^\[|\]$/g, '') : '127.0.0.1';
  return { host, port: intIn(`${what} port`, m[2]!, 0, 65535) };
}

/**
 * Builds the config from the environment (TANDEM_PORT, TANDEM_HOST, TANDEM_DATA_DIR, TANDEM_DURABILITY,
 * TANDEM_MAX_RUNNING, TANDEM_HW_RULES, TANDEM_BACKENDS ('none' for no runtime), TANDEM_CPU_THREADS,
 * TANDEM_CALIBRATE=0, TANDEM_FAIR_SHARE=0|1, TANDEM_RATE_LIMIT=rate[:burst], TANDEM_MAX_QUEUED (default
 * tenant quota), TANDEM_LOG, TANDEM_MAX_TIMEOUT (seconds, default tenant ceiling on timeoutSeconds),
 * TANDEM_DEADLINE_GRACE_MS, TANDEM_SHED=0 (no load shedding), TANDEM_SHED_WAIT=s,
 * TANDEM_SHED_BACKLOG=min[:max], TANDEM_SHED_LOOP_MS, TANDEM_REQUEST_TIMEOUT_MS,
 * TANDEM_METRICS_ADDR=host:port, TANDEM_LANE_SPIN_US) with explicit overrides on top.
 */
export function loadServiceConfig(
  env: Readonly<Record<string, string | undefined>>,
  overrides: ConfigOverrides = {},
): ServiceConfig {
  const c: ConfigOverrides = { ...DEFAULT_CONFIG };
  if (env['TANDEM_HOST']) c.host = env['TANDEM_HOST'];
  if (env['TANDEM_PORT']) c.port = intIn('TANDEM_PORT', env['TANDEM_PORT'], 0, 65535);
  if (env['TANDEM_DATA_DIR']) c.dataDir = env['TANDEM_DATA_DIR'];
  if (env['TANDEM_DURABILITY']) {
    const d = env['TANDEM_DURABILITY'];
    if (d !== 'full' && d !== 'normal')
      throw new TandemError('TANDEM_ERR_CONFIG', 'TANDEM_DURABILITY is full|normal');
    c.durability = d;
  }
  if (env['TANDEM_MAX_RUNNING'])
    c.maxRunningJobs = intIn('TANDEM_MAX_RUNNING', env['TANDEM_MAX_RUNNING'], 1, 1024);
  if (env['TANDEM_FAIR_SHARE']) {
    const f = env['TANDEM_FAIR_SHARE'];
    if (f !== '0' && f !== '1') throw new TandemError('TANDEM_ERR_CONFIG', 'TANDEM_FAIR_SHARE is 0|1');
    c.fairShare = f === '1';
  }
  if (env['TANDEM_HW_RULES']) c.hardwareRules = parseHardwareRules(env['TANDEM_HW_RULES']);
  if (env['TANDEM_BACKENDS']) {
    const list = env['TANDEM_BACKENDS'].split(',').filter(Boolean);
    c.runtime = { ...DEFAULT_CONFIG.runtime, enabled: !list.includes('none'), backends: list };
  }
  if (env['TANDEM_RATE_LIMIT']) {
    const [rate, burst] = env['TANDEM_RATE_LIMIT'].split(':');
    c.rateLimitPerSec = intIn('TANDEM_RATE_LIMIT', rate ?? '', 1, 1e9);
    c.rateLimitBurst = intIn('TANDEM_RATE_LIMIT burst', burst ?? String(2 * c.rateLimitPerSec), 1, 2e9);
  }
  if (env['TANDEM_MAX_QUEUED'])
    c.quotas = {
      ...DEFAULT_CONFIG.quotas,
      maxQueuedJobs: intIn('TANDEM_MAX_QUEUED', env['TANDEM_MAX_QUEUED'], 1, 1e9),
    };
  if (env['TANDEM_MAX_TIMEOUT'])
    c.quotas = {
      ...(c.quotas ?? DEFAULT_CONFIG.quotas),
      maxTimeoutSeconds: intIn('TANDEM_MAX_TIMEOUT', env['TANDEM_MAX_TIMEOUT'], 1, 365 * 86_400),
    };
  if (env['TANDEM_DEADLINE_GRACE_MS'])
    c.deadlineGraceMs = intIn('TANDEM_DEADLINE_GRACE_MS', env['TANDEM_DEADLINE_GRACE_MS'], 0, 3_600_000);
  if (
    env['TANDEM_SHED'] !== undefined ||
    env['TANDEM_SHED_WAIT'] ||
    env['TANDEM_SHED_BACKLOG'] ||
    env['TANDEM_SHED_LOOP_MS']
  )
    c.shed = shedFromEnv(env, c.shed ?? DEFAULT_CONFIG.shed);
  if (env['TANDEM_CPU_THREADS'])
    c.runtime = {
      ...(c.runtime ?? DEFAULT_CONFIG.runtime),
      cpuThreads: intIn('TANDEM_CPU_THREADS', env['TANDEM_CPU_THREADS'], 1, 256),
    };
  if (env['TANDEM_CALIBRATE'] === '0')
    c.runtime = { ...(c.runtime ?? DEFAULT_CONFIG.runtime), calibrate: false };
  if (env['TANDEM_LOG']) c.logLevel = env['TANDEM_LOG'] as ServiceConfig['logLevel'];
  if (env['TANDEM_REQUEST_TIMEOUT_MS'])
    c.requestTimeoutMs = intIn('TANDEM_REQUEST_TIMEOUT_MS', env['TANDEM_REQUEST_TIMEOUT_MS'], 100, 3_600_000);
  if (env['TANDEM_METRICS_ADDR']) c.metricsListen = env['TANDEM_METRICS_ADDR'];
  if (env['TANDEM_LANE_SPIN_US'])
    c.laneSpinUs = intIn('TANDEM_LANE_SPIN_US', env['TANDEM_LANE_SPIN_US'], 0, 1_000_000);
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) (c as Record<string, unknown>)[k] = v;
  const cfg = c as ServiceConfig;
  intIn('port', cfg.port, 0, 65535);
  intIn('maxRunningJobs', cfg.maxRunningJobs, 1, 1024);
  if (!['silent', 'error', 'warn', 'info', 'debug'].includes(cfg.logLevel))
    throw new TandemError(
      'TANDEM_ERR_CONFIG',
      `log level "${cfg.logLevel}" is not silent|error|warn|info|debug`,
    );
  intIn('requestTimeoutMs', cfg.requestTimeoutMs, 100, 3_600_000);
  intIn('laneSpinUs', cfg.laneSpinUs, 0, 1_000_000);
  // Node requires headersTimeout <= requestTimeout.
  intIn('headersTimeoutMs', cfg.headersTimeoutMs, 100, cfg.requestTimeoutMs);
  intIn('keepAliveTimeoutMs', cfg.keepAliveTimeoutMs, 100, 3_600_000);
  if (cfg.metricsListen !== null) parseListenAddress(cfg.metricsListen, 'TANDEM_METRICS_ADDR');
  return { ...cfg, dataDir: resolve(cfg.dataDir), webDir: cfg.webDir ? resolve(cfg.webDir) : null };
}
