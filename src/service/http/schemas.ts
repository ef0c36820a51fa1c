/**
 * JSON schemas of the API's bodies, shared by validation, serialization and the OpenAPI document
 * (OpenAPI 3.1, whose schemas are JSON Schema: a nullable field is `type: [t, 'null']`).
 */
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;

const EXAMPLE_JOB = {
  id: 'job_6938a1f0c4e2b7a19d3f',
  type: 'sleep',
  tenant: 'admin',
  state: 'queued',
  priority: 0,
  progress: 0,
  message: '',
  params: { ms: 20 },
  attempt: 0,
  jobClass: 'latency',
  memoryBytes: 0,
  device: null,
  placement: null,
  idempotencyKey: null,
  cancelRequested: false,
  createdAt: '2026-12-03T08:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  waitSeconds: null,
  runSeconds: null,
  error: null,
  hasResult: false,
};

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
  examples: [EXAMPLE_JOB],
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
    held: {
      type: 'boolean',
      description:
        'scaled-out only: queued but held back until an agent that can fit it joins (why: message)',
    },
    attempts: {
      type: 'array',
      description:
        "scaled-out only (GET /v1/jobs/{id}): each agent's attempt, re-runs after a lost agent included",
      items: {
        type: 'object',
        properties: {
          attempt: { type: 'integer' },
          agent: { type: 'string' },
          startedAt: { type: 'string', format: 'date-time' },
          finishedAt: nullable('string'),
          outcome: nullable('string'),
        },
      },
    },
  },
} as const;

export const JOB_LIST_SCHEMA = {
  type: 'object',
  examples: [{ jobs: [EXAMPLE_JOB], next: null }],
  properties: {
    jobs: { type: 'array', items: JOB_SCHEMA },
    next: {
      ...nullable('string'),
      description: 'cursor for the next page (pass as ?before=), null on the last',
    },
    total: { type: 'integer', description: 'with ?total=true: how many jobs match (counted up to 10000)' },
    totalExact: { type: 'boolean', description: 'with ?total=true: false when the count stopped at 10000' },
  },
} as const;

export const CANCEL_ANSWER_SCHEMA = {
  type: 'object',
  examples: [{ outcome: 'cancelled', job: { ...EXAMPLE_JOB, state: 'cancelled' } }],
  properties: {
    outcome: {
      type: 'string',
      enum: ['cancelled', 'cancelling', 'final'],
      description:
        'cancelled: it had not started; cancelling: it stops at its next cancellation point; final: too late',
    },
    job: JOB_SCHEMA,
  },
} as const;

export const RESULT_SCHEMA = {
  type: 'object',
  examples: [{ id: EXAMPLE_JOB.id, result: { sleptMs: 20, steps: 1 } }],
  properties: { id: { type: 'string' }, result: { description: "the job type's JSON result" } },
} as const;

export const TRACE_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  description: 'Chrome Trace Event JSON',
  examples: [
    {
      traceEvents: [
        { name: 'queued', cat: 'job', ph: 'X', ts: 0, dur: 1200, pid: 1, tid: 1 },
        { name: 'run sleep', cat: 'job', ph: 'X', ts: 1200, dur: 20500, pid: 1, tid: 1 },
      ],
    },
  ],
  properties: { traceEvents: { type: 'array', items: { type: 'object', additionalProperties: true } } },
} as const;

export const JOB_TYPES_SCHEMA = {
  type: 'object',
  examples: [
    {
      types: [
        {
          name: 'sleep',
          description: 'waits (tests, demos)',
          params: {
            type: 'object',
            additionalProperties: false,
            properties: { ms: { type: 'integer', minimum: 0, maximum: 600000, default: 0 } },
          },
        },
      ],
    },
  ],
  properties: {
    types: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          description: { type: 'string' },
          params: {
            type: 'object',
            additionalProperties: true,
            description: "JSON Schema of the type's params (types, ranges, defaults, descriptions)",
          },
        },
      },
    },
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
    wait: {
      type: 'string',
      pattern: '^(60(\\.0+)?|[1-5]?[0-9](\\.[0-9]+)?)$',
      description: 'seconds (at most 60) to hold the answer until the job has finished',
    },
  },
} as const;

export const SUBMIT_BODY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  examples: [{ type: 'gemm', params: { n: 1024, dtype: 'f32' }, priority: 0 }],
  properties: {
    type: {
      type: 'string',
      minLength: 1,
      maxLength: 32,
      pattern: '^[a-z][a-z0-9-]*$',
      description: 'a job type from GET /v1/job-types',
    },
    params: {
      type: 'object',
      additionalProperties: true,
      default: {},
      description: "checked against the type's params schema (GET /v1/job-types)",
    },
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
  properties: { id: { type: 'string', pattern: '^job_[0-9a-f]{20}$', description: 'the job id' } },
} as const;

export const LIST_QUERY_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    state: { type: 'string', enum: [...JOB_STATES], description: 'only jobs in this state' },
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
