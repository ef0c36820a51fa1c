/** JSON schemas of the API's bodies, shared by validation, serialization and the OpenAPI document. */
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;

const nullable = (type: string, extra: Record<string, unknown> = {}) => ({ type: [type, 'null'], ...extra });

export const JOB_ERROR_SCHEMA = {
  type: ['object', 'null'],
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    details: { type: 'object', additionalProperties: true },
  },
} as const;

export const JOB_SCHEMA = {
  type: 'object',
  required: ['id', 'type', 'tenant', 'state', 'priority', 'progress', 'createdAt'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string' },
    tenant: { type: 'string' },
    state: { type: 'string', enum: [...JOB_STATES] },
    priority: { type: 'integer' },
    progress: { type: 'number', minimum: 0, maximum: 1 },
    message: { type: 'string' },
    params: { type: 'object', additionalProperties: true },
    attempt: { type: 'integer' },
    jobClass: { type: 'string' },
    memoryBytes: { type: 'integer' },
    device: nullable('string'),
    placement: nullable('string'),
    idempotencyKey: nullable('string'),
    cancelRequested: { type: 'boolean' },
    createdAt: { type: 'string', format: 'date-time' },
    startedAt: nullable('string'),
    finishedAt: nullable('string'),
    waitSeconds: nullable('number'),
    runSeconds: nullable('number'),
    timeoutSeconds: nullable('number'),
    deadline: nullable('string', { description: 'set at its first start; past it the job is stopped' }),
    error: JOB_ERROR_SCHEMA,
    hasResult: { type: 'boolean' },
  },
} as const;

/** The submit answer: a job, plus its inline result when `?wait` saw it succeed. */
export const SUBMIT_ANSWER_SCHEMA = {
  ...JOB_SCHEMA,
  properties: {
    ...JOB_SCHEMA.properties,
    result: { description: "the job's result, on a waited submit that saw it succeed (inline results only)" },
  },
} as const;

/** `POST /v1/jobs?wait=s`: hold the answer until the job has finished, at most s seconds. */
export const SUBMIT_QUERY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    wait: { type: 'string', pattern: '^(60(\\.0+)?|[1-5]?[0-9](\\.[0-9]+)?)$' },
  },
} as const;

export const SUBMIT_BODY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9-]*$' },
    params: { type: 'object', default: {} },
    priority: { type: 'integer', minimum: -100, maximum: 100, default: 0 },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 128 },
    timeoutSeconds: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 31_536_000,
      description: "the job's time budget from its start (default: its type's, within the tenant's maximum)",
    },
  },
} as const;

export const JOB_ID_PARAMS = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^job_[0-9a-f]{20}$' } },
} as const;

export const LIST_QUERY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    state: { type: 'string', enum: [...JOB_STATES] },
    type: { type: 'string', pattern: '^[a-z][a-z0-9_-]{0,63}$', description: 'a job type name' },
    total: {
      type: 'string',
      enum: ['true', 'false'],
      description:
        'true: also count the matching jobs (up to 10000); a count can scan the table, so ask when the filters change, not on every poll',
    },
    limit: { type: 'string', pattern: '^[0-9]{1,4}$', description: '1-1000, default 50' },
    before: { type: 'string', pattern: '^[0-9]{1,15}$', description: 'cursor from a previous page (next)' },
    tenant: {
      type: 'string',
      maxLength: 64,
      description: 'admin only: a tenant name, or "all" (default for admins)',
    },
  },
} as const;
