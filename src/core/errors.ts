/**
 * One catalogue of error codes. Every error Tandem raises on purpose is a TandemError with a stable
 * `code` from this table; the service maps the code to an HTTP status.
 */
export const ERROR_CATALOGUE = {
  TANDEM_ERR_INVALID_ARGUMENT: { http: 400, summary: 'an argument is invalid' },
  TANDEM_ERR_SHAPE: { http: 400, summary: 'tensor shapes do not match what the operation needs' },
  TANDEM_ERR_DTYPE: { http: 400, summary: 'tensor dtype is not supported here or does not match' },
  TANDEM_ERR_SIZE: { http: 400, summary: 'a size is not a non-negative integer within limits' },
  TANDEM_ERR_OUT_OF_MEMORY: { http: 507, summary: 'an allocation does not fit in the memory available' },
  TANDEM_ERR_CLOSED: { http: 503, summary: 'the runtime or device has been closed' },
  TANDEM_ERR_UNKNOWN_KERNEL: { http: 400, summary: 'no kernel is registered under this name' },
  TANDEM_ERR_NO_DEVICE: { http: 422, summary: 'no device can run this task' },
  TANDEM_ERR_KERNEL_FAILED: { http: 500, summary: 'a kernel threw or reported an error while running' },
  TANDEM_ERR_DEPENDENCY_FAILED: { http: 500, summary: 'a task this one depends on failed' },
  TANDEM_ERR_CYCLE: { http: 400, summary: 'explicit dependencies form a cycle' },
  TANDEM_ERR_DEVICE_UNAVAILABLE: { http: 503, summary: 'a backend or device could not be opened' },
  TANDEM_ERR_DEVICE_FAULT: { http: 500, summary: 'the device faulted while running a task' },
  TANDEM_ERR_DATA_LOST: { http: 500, summary: 'the only valid copy of a tensor was lost' },
  TANDEM_ERR_DRIVER: { http: 500, summary: 'a driver or library call failed' },
  TANDEM_ERR_COMPILE: { http: 400, summary: 'a GPU program failed to compile' },
  TANDEM_ERR_LIMIT: { http: 400, summary: 'a request exceeds a device or configured limit' },
  TANDEM_ERR_CONFIG: { http: 500, summary: 'the configuration is invalid' },
  TANDEM_ERR_CANCELLED: { http: 409, summary: 'the work was cancelled' },
  TANDEM_ERR_DEADLINE_EXCEEDED: {
    http: 504,
    summary: 'the job ran past its deadline (timeoutSeconds) and was stopped',
  },
  TANDEM_ERR_UNSTABLE: {
    http: 422,
    summary: 'a simulation or training run became numerically unstable (a NaN or infinite value)',
  },
  TANDEM_ERR_BAD_DATA: {
    http: 422,
    summary: 'a data file is missing, malformed or too short for the request',
  },
  TANDEM_ERR_NOT_FOUND: { http: 404, summary: 'the requested object does not exist' },
  TANDEM_ERR_UNAUTHORIZED: { http: 401, summary: 'missing or invalid API key' },
  TANDEM_ERR_FORBIDDEN: { http: 403, summary: 'the key may not do this' },
  TANDEM_ERR_RATE_LIMITED: { http: 429, summary: 'too many requests' },
  TANDEM_ERR_QUOTA: { http: 429, summary: 'a tenant quota is exhausted' },
  TANDEM_ERR_OVERLOADED: {
    http: 429,
    summary: 'the service sheds load: its queue or event loop is full (retry after Retry-After seconds)',
  },
  TANDEM_ERR_CONFLICT: { http: 409, summary: 'the request conflicts with the current state' },
  TANDEM_ERR_UNAVAILABLE: { http: 503, summary: 'a dependency (database, queue) is unreachable' },
  TANDEM_ERR_MALFORMED_REQUEST: {
    http: 400,
    summary: 'the request body is not valid JSON or not the expected media type',
  },
  TANDEM_ERR_UNKNOWN_JOB_TYPE: { http: 400, summary: 'no job type is registered under this name' },
  TANDEM_ERR_PAYLOAD_TOO_LARGE: { http: 413, summary: 'the request body exceeds the configured limit' },
  TANDEM_ERR_NOT_READY: { http: 409, summary: 'the job has not produced this yet (still queued or running)' },
  TANDEM_ERR_DATA_DIR_LOCKED: { http: 409, summary: 'another running server holds this data directory' },
  TANDEM_ERR_PORT_IN_USE: { http: 409, summary: 'the port is already in use by another process' },
  TANDEM_ERR_DEVICE_ABSENT: {
    http: 400,
    summary: 'the job asks for a device kind this server does not have',
  },
  TANDEM_ERR_BAD_CHECKPOINT: {
    http: 422,
    summary:
      'a checkpoint file is truncated or corrupted (its header or tensor table is not valid safetensors)',
  },
  TANDEM_ERR_UNSUPPORTED: {
    http: 422,
    summary: 'the model uses an operator, opset or feature Tandem does not implement (named in the message)',
  },
  TANDEM_ERR_INTERNAL: { http: 500, summary: 'an internal error' },
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export class TandemError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${message}`, options);
    this.name = 'TandemError';
    this.code = code;
    this.details = details;
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code].http;
  }

  toJSON(): { code: ErrorCode; message: string; details: Readonly<Record<string, unknown>> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isTandemError(e: unknown, code?: ErrorCode): e is TandemError {
  return e instanceof TandemError && (code === undefined || e.code === code);
}

/** Wraps anything thrown by foreign code into a TandemError, keeping the original as the cause. */
export function asTandemError(e: unknown, code: ErrorCode, context: string): TandemError {
  if (e instanceof TandemError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  return new TandemError(code, `${context}: ${msg}`, {}, { cause: e });
}

/** An error's message without the `CODE: ` prefix the constructor puts before it. */
export function messageText(e: TandemError): string {
  return e.message.startsWith(`${e.code}: `) ? e.message.slice(e.code.length + 2) : e.message;
}

/**
 * `e` with a server-side file path replaced by `label` in its message and dropped from details.file:
 * readers name the file they failed on, which the server's log keeps, but a service client (a tenant)
 * has no business learning the data directory's layout. `e` itself when it does not mention `path`.
 */
export function withPathHidden(e: TandemError, path: string, label: string): TandemError {
  if (!e.message.includes(path) && e.details['file'] !== path) return e;
  const { file: _file, ...details } = e.details;
  const message = messageText(e);
  return new TandemError(e.code, message.split(path).join(label), details, { cause: e });
}

/**
 * The error of the task that failed, not of the one that depended on it: a read whose producer could
 * not allocate its output fails as DEPENDENCY_FAILED (HTTP 500), where the cause is OUT_OF_MEMORY (507)
 * of the producer. `err` itself when it is not a dependency failure with a TandemError cause.
 */
export function failedStep(err: TandemError, context: string): TandemError {
  let e = err;
  let failed = '';
  while (e.code === 'TANDEM_ERR_DEPENDENCY_FAILED' && e.cause instanceof TandemError) {
    failed = typeof e.details['failedName'] === 'string' ? e.details['failedName'] : failed;
    e = e.cause;
  }
  if (e === err) return err;
  const message = messageText(e);
  return new TandemError(e.code, `${context}: ${failed || 'a step'} failed: ${message}`, e.details, {
    cause: err,
  });
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}
