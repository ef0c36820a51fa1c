/** The dashboard's API client: the key lives in localStorage and goes out as a Bearer token. */
export interface Job {
  id: string;
  type: string;
  tenant: string;
  state: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  priority: number;
  progress: number;
  message?: string;
  params: Record<string, unknown>;
  attempt: number;
  cancelRequested: boolean;
  /** The device(s) the job's tasks ran on once any has; before that where it was placed ('auto', a kind). */
  device: string | null;
  placement: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  waitSeconds: number | null;
  runSeconds: number | null;
  error: { code: string; message: string } | null;
}

export interface Device {
  id: string;
  kind: string;
  name: string;
  memoryBytes: number;
  memoryUsed: number;
  utilization: number;
}

export interface JobList {
  jobs: Job[];
  /** Cursor of the next (older) page: pass as ?before=. */
  next: string | null;
  /** With ?total=true: how many match (counted up to 10000; totalExact false beyond). */
  total?: number;
  totalExact?: boolean;
}

/** GET /v1/devices/history: columns, index i of each array at time t[i] (epoch ms). */
export interface History {
  intervalMs: number;
  t: number[];
  queued: number[];
  running: number[];
  devices: {
    id: string;
    kind: string;
    name: string;
    memoryBytes: number;
    utilization: (number | null)[];
    memoryUsed: (number | null)[];
    inflight: (number | null)[];
  }[];
}

export interface WhoAmI {
  name: string;
  role: 'admin' | 'user';
}

export interface Stats {
  time: number;
  devices: Device[];
  queued: number;
  running: number;
  queue: { tenant: string; priority: number; queued: number }[];
}

export interface JobType {
  name: string;
  description: string;
  params: { properties?: Record<string, ParamSchema>; required?: string[] };
}

export interface ParamSchema {
  type?: string;
  enum?: (string | number)[];
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

export interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  tid: number;
  args?: Record<string, unknown>;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const KEY = 'tandemKey';
export const getKey = (): string => localStorage.getItem(KEY) ?? '';
export const setKey = (k: string): void => localStorage.setItem(KEY, k.trim());

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const key = getKey();
  if (key) headers['authorization'] = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => null)) as { error?: { code: string; message: string } } | null;
  if (!res.ok)
    throw new ApiError(res.status, json?.error?.code ?? 'HTTP', json?.error?.message ?? `HTTP ${res.status}`);
  return json as T;
}
