/**
 * A binary infer request (src/service/http/binary-tensors.ts, after Triton's binary tensor extension):
 * the JSON header, in which each tensor input gives `binaryDataSize` instead of `data`, then the tensors'
 * bytes in the order of the inputs. The header is padded with spaces to a multiple of 4 bytes, so a
 * float32 tensor that follows it starts aligned and the server reads it in place.
 */
export interface BinaryTensor {
  readonly shape: readonly number[];
  /** How the bytes read: little-endian float32 (the default) or uint8 (pixels). */
  readonly dtype?: 'float32' | 'uint8';
  readonly bytes: Uint8Array;
}

export function binaryInferBody(
  tensors: Readonly<Record<string, BinaryTensor>>,
  extra: Readonly<Record<string, unknown>> = {},
): { body: Buffer; headers: Record<string, string> } {
  const inputs: Record<string, unknown> = {};
  // Largest elements first: a uint8 tensor before a float32 one would leave the latter unaligned.
  const order = Object.entries(tensors).sort(
    ([, a], [, b]) => Number(a.dtype === 'uint8') - Number(b.dtype === 'uint8'),
  );
  for (const [name, t] of order)
    inputs[name] = {
      shape: t.shape,
      ...(t.dtype === undefined ? {} : { dtype: t.dtype }),
      binaryDataSize: t.bytes.length,
    };
  const json = Buffer.from(JSON.stringify({ ...extra, inputs }), 'utf8');
  const header = Buffer.concat([json, Buffer.alloc((4 - (json.length % 4)) % 4, 0x20)]);
  // The server takes the bytes in the order the parsed JSON lists the inputs (integer-like names first).
  return {
    body: Buffer.concat([header, ...Object.keys(inputs).map((name) => tensors[name]!.bytes)]),
    headers: {
      'content-type': 'application/octet-stream',
      'inference-header-content-length': String(header.length),
    },
  };
}
