/**
 * Binary tensors for the interactive lane, after Triton's (KServe v2) binary tensor data extension:
 * a body of type application/octet-stream whose first `Inference-Header-Content-Length` bytes are the
 * usual JSON request, in which a tensor input gives `binaryDataSize: n` instead of `data`; the raw bytes
 * of those inputs follow the JSON, in the order the inputs are listed. What the bytes are is the tensor's
 * `dtype`, read by the model: for the onnx kind little-endian float32 (the default), or 'uint8' pixels
 * for the input of a preprocess config (models/onnx-image.ts: a 640×640 RGB image is then 1.2 MB, not
 * 4.9 MB). Bytes are handed over as they lie, so a uint8 tensor needs no alignment; clients put float32
 * tensors first (service/client/binary-request.ts) so that those start 4-aligned. The answer is binary the same way when the request says `binaryOutputs: true`: its JSON header
 * lists each output tensor with `binaryDataSize`, and their bytes follow.
 *
 * Why: a 640×640 RGB image is 4.9 MB of float32; as base64 in JSON it cost the server's event loop a
 * 6.5 MB JSON.parse, a prototype-poisoning scan of the string and a base64 decode per request, which
 * bounded an image model's throughput through the lane far below the GPU's (bench/serve-lane-ocr.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import secureJson from 'secure-json-parse';
import { TandemError } from '../../core/errors.js';
import { TensorValues } from '../serving/tensor-values.js';
import { checkJsonShape, BODY_SHAPE_LIMITS } from './body-limits.js';

export const HEADER_LENGTH = 'inference-header-content-length';
export const BINARY_CONTENT_TYPE = 'application/octet-stream';
/** The JSON part of a binary request is small (names, shapes, options). */
const MAX_JSON_HEADER_BYTES = 1 << 20;

const malformed = (message: string): TandemError =>
  new TandemError('TANDEM_ERR_MALFORMED_REQUEST', `binary infer body: ${message}`);

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);

/**
 * The request a binary body carries: its JSON header with every `binaryDataSize` input given its bytes
 * as `data` (a view of `body`, not a copy). Throws TANDEM_ERR_MALFORMED_REQUEST (400) when the header
 * length is missing or wrong, the JSON is invalid, or the sizes do not add up to the bytes sent.
 */
export function parseBinaryBody(body: Buffer, headerLength: string | string[] | undefined): unknown {
  const raw = Array.isArray(headerLength) ? headerLength[0] : headerLength;
  if (raw === undefined)
    throw malformed(`the ${HEADER_LENGTH} header is missing (the length of the JSON that starts the body)`);
  const n = /^\d{1,9}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isInteger(n) || n < 2 || n > body.length || n > MAX_JSON_HEADER_BYTES)
    throw malformed(
      `${HEADER_LENGTH} must be the JSON header's byte length (2 to ${Math.min(body.length, MAX_JSON_HEADER_BYTES)}), got '${raw}'`,
    );
  let request: unknown;
  try {
    // As Fastify parses JSON bodies: a __proto__ or constructor.prototype key is refused, not parsed.
    request = secureJson.parse(body.subarray(0, n).toString('utf8'), null, {
      protoAction: 'error',
      constructorAction: 'error',
    });
  } catch (e) {
    throw malformed(`the JSON header is not valid JSON (${(e as Error).message})`);
  }
  checkJsonShape(request, BODY_SHAPE_LIMITS, 'the JSON header');
  if (!isRecord(request) || !isRecord(request['inputs']))
    throw malformed('the JSON header must be an object with inputs: {name: {shape, binaryDataSize}}');
  let at = n;
  for (const [name, t] of Object.entries(request['inputs'])) {
    if (!isRecord(t) || !('binaryDataSize' in t)) continue;
    const size = t['binaryDataSize'];
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0)
      throw malformed(`inputs.${name}.binaryDataSize must be a byte count`);
    if ('data' in t) throw malformed(`inputs.${name} has both data and binaryDataSize`);
    if (at + size > body.length)
      throw malformed(
        `inputs.${name} needs ${size} bytes at offset ${at}, the body has ${body.length - at} left`,
      );
    t['data'] = body.subarray(at, at + size);
    delete t['binaryDataSize'];
    at += size;
  }
  if (at !== body.length)
    throw malformed(`${body.length - at} bytes after the last binary input are not claimed by any input`);
  return request;
}

/**
 * A binary answer: the JSON header (with each TensorValues output replaced by its `binaryDataSize`)
 * and the bytes that follow it, in the order of the outputs. Outputs of other kinds stay in the JSON.
 */
export function binaryAnswer(answer: { model: string; version: number; outputs: unknown }): {
  headerLength: number;
  body: Buffer;
} {
  const chunks: Buffer[] = [];
  let outputs = answer.outputs;
  if (isRecord(outputs)) {
    const written: Record<string, unknown> = {};
    for (const [name, t] of Object.entries(outputs)) {
      if (isRecord(t) && t['data'] instanceof TensorValues) {
        const bytes = t['data'].bytes();
        written[name] = { ...t, data: undefined, binaryDataSize: bytes.length };
        chunks.push(bytes);
      } else written[name] = t;
    }
    outputs = written;
  }
  const header = Buffer.from(JSON.stringify({ ...answer, outputs }), 'utf8');
  return { headerLength: header.length, body: Buffer.concat([header, ...chunks]) };
}

/**
 * Body buffers for reuse: a 4.9 MB image body in fresh memory cost ~3 ms of page faults on the H200 host's
 * event loop, several times the copy itself. A buffer comes back once its request is answered (the
 * batch that read it has run: batcher.ts resolves an item only after its batch finished or when it
 * left the queue unrun), through `releaseBody`; bodies of requests that end otherwise are left to GC.
 */
class BodyPool {
  private readonly free = new Map<number, Buffer[]>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly perSize: number,
  ) {}

  take(n: number): Buffer {
    const b = this.free.get(n)?.pop();
    if (b === undefined) return Buffer.allocUnsafeSlow(n);
    this.bytes -= n;
    return b;
  }

  /** Keeps `b` for a later body of its size, unless the pool is full (then it is left to GC). */
  give(b: Buffer): void {
    let list = this.free.get(b.length);
    if (!list) this.free.set(b.length, (list = []));
    if (list.length >= this.perSize || this.bytes + b.length > this.maxBytes) return;
    list.push(b);
    this.bytes += b.length;
  }
}
const bodyPool = new BodyPool(256 * 2 ** 20, 64);

/** The raw bodies of binary requests, until they are answered. */
const bodies = new WeakMap<object, Buffer>();

/** Remembers `body` as the request's (keyed by the raw request object) so releaseBody can reuse it. */
export function holdBody(raw: object, body: Buffer): void {
  bodies.set(raw, body);
}

/** The request is answered: its body buffer may serve another request. */
export function releaseBody(raw: object): void {
  const b = bodies.get(raw);
  if (b === undefined) return;
  bodies.delete(raw);
  bodyPool.give(b);
}

/**
 * Reads a binary body whole, within `limit` bytes. With a Content-Length (the usual case) the bytes are
 * copied into one buffer of that size as each chunk arrives, while the chunk is still in cache, instead
 * of kept and concatenated at the end (which cost ~2.8 ms per 4.9 MB image on the H200 host's event loop).
 */
export function readBinaryBody(
  req: IncomingMessage,
  payload: Readable,
  limit: number,
  done: (err: Error | null, body?: Buffer) => void,
): void {
  const tooLarge = () =>
    new TandemError(
      'TANDEM_ERR_PAYLOAD_TOO_LARGE',
      `the request body is larger than the limit (${limit} bytes)`,
    );
  const declared = Number(req.headers['content-length']);
  const known = Number.isSafeInteger(declared) && declared >= 0;
  if (known && declared > limit) {
    done(tooLarge());
    return;
  }
  const into = known ? bodyPool.take(declared) : null;
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const finish = (err: Error | null, body?: Buffer): void => {
    if (settled) return;
    settled = true;
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', finish);
    done(err, body);
  };
  const onData = (chunk: Buffer): void => {
    if (received + chunk.length > (into ? into.length : limit)) {
      finish(into ? malformed('the body is longer than its Content-Length') : tooLarge());
      return;
    }
    if (into) chunk.copy(into, received);
    else chunks.push(chunk);
    received += chunk.length;
  };
  const onEnd = (): void => {
    if (into && received !== into.length)
      finish(malformed(`the body ended after ${received} of its ${into.length} bytes`));
    else finish(null, into ?? Buffer.concat(chunks, received));
  };
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', finish);
}
