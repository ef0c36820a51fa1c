/**
 * Text ↔ tokens for the generation routes: GPT-2's BPE (`gpt-tokenizer`'s r50k_base, loaded on first
 * use) for models over its 50257 tokens, UTF-8 bytes for byte-level models (vocab 256, gpt-micro), and
 * none otherwise (prompts must then be token ids, and completions carry no text). Streaming decodes the
 * whole completion so far and sends what was added, holding back a trailing partial character, so a
 * character split across tokens is sent once, whole.
 */
import { TandemError } from '../../../core/errors.js';
import { GPT2_EOT } from '../../../nn/data/corpus.js';

export type CodecName = 'gpt2' | 'bytes' | 'none';

export interface TextCodec {
  readonly name: CodecName;
  /** The end-of-text token generation stops at, if the vocabulary has one. */
  readonly eot: number | null;
  /**
   * The most UTF-8 bytes one token stands for, so that ceil(bytes / this) bounds a text's token count
   * from below without encoding it (a 90 MB text took seconds of the event loop to be told it is long).
   */
  readonly maxTokenBytes: number;
  encode(text: string): number[];
  decode(tokens: readonly number[]): string;
}

/** At least this many tokens: the text's UTF-8 length over the longest token's. */
export function tokensAtLeast(codec: TextCodec, text: string): number {
  return Math.ceil(Buffer.byteLength(text, 'utf8') / codec.maxTokenBytes);
}

const bytesCodec: TextCodec = {
  name: 'bytes',
  eot: null,
  maxTokenBytes: 1,
  encode: (text) => [...new TextEncoder().encode(text)],
  decode: (tokens) => new TextDecoder('utf-8').decode(Uint8Array.from(tokens)),
};

async function gpt2Codec(): Promise<TextCodec> {
  const m = await import('gpt-tokenizer/encoding/r50k_base');
  // Text is text: "<|endoftext|>" inside a prompt is encoded as characters, never as the special token.
  const plain = { disallowedSpecial: new Set<string>() };
  // Measured over the vocabulary once (a token that is part of a character decodes to U+FFFD, 3 bytes:
  // an overestimate, which only loosens the bound).
  let maxTokenBytes = 1;
  for (let id = 0; id < GPT2_EOT; id++)
    maxTokenBytes = Math.max(maxTokenBytes, Buffer.byteLength(m.decode([id]), 'utf8'));
  return {
    name: 'gpt2',
    eot: GPT2_EOT,
    maxTokenBytes,
    encode: (text) => m.encode(text, plain),
    decode: (tokens) => m.decode([...tokens]),
  };
}

/** The codec a model of `vocab` tokens uses by default. */
export function defaultCodec(vocab: number): CodecName {
  return vocab === 50257 ? 'gpt2' : vocab === 256 ? 'bytes' : 'none';
}

export async function loadCodec(name: CodecName, vocab: number): Promise<TextCodec | null> {
  if (name === 'none') return null;
  const need = name === 'gpt2' ? 50257 : 256;
  if (vocab < need)
    throw new TandemError(
      'TANDEM_ERR_INVALID_ARGUMENT',
      `tokenizer ${name} needs a vocabulary of at least ${need} tokens, the model has ${vocab}`,
    );
  return name === 'bytes' ? bytesCodec : gpt2Codec();
}

/** Incremental text of a growing token list. */
export class TextStream {
  private readonly tokens: number[] = [];
  private sent = '';

  constructor(private readonly codec: TextCodec | null) {}

  /** The text `token` adds (may be '' while a character is incomplete). */
  push(token: number): string {
    if (this.codec === null) return '';
    this.tokens.push(token);
    const text = this.codec.decode(this.tokens);
    if (text.endsWith('\uFFFD') || !text.startsWith(this.sent)) return '';
    const delta = text.slice(this.sent.length);
    this.sent = text;
    return delta;
  }

  /** Whatever is still held back (at the end, a partial character is sent as decoded). */
  flush(): string {
    if (this.codec === null) return '';
    const text = this.codec.decode(this.tokens);
    const delta = text.startsWith(this.sent) ? text.slice(this.sent.length) : '';
    this.sent = text;
    return delta;
  }

  get text(): string {
    return this.sent;
  }
}
