/**
 * The text side of one completion: decodes tokens as they come, cuts at the first stop string (which
 * is not part of the answer, as OpenAI does), and says how much text is safe to stream: a tail that could
 * still grow into a stop string is held back until it cannot.
 */
import { type TextCodec, TextStream } from './codec.js';

export class CompletionText {
  private readonly stream: TextStream;
  private text = '';
  private sent = 0;
  private cut: number | null = null;

  constructor(
    codec: TextCodec | null,
    private readonly stops: readonly string[],
  ) {
    this.stream = new TextStream(codec);
  }

  /** True once a stop string has appeared (the sequence should end). */
  get stopped(): boolean {
    return this.cut !== null;
  }

  /** Adds a token; returns the text that may be streamed now ('' if none). */
  push(token: number): string {
    if (this.cut !== null) return '';
    this.text += this.stream.push(token);
    return this.release(false);
  }

  /** At the end: everything not yet streamed (held-back text, a partial character). */
  finish(): string {
    if (this.cut === null) this.text += this.stream.flush();
    return this.release(true);
  }

  /** The whole answer (up to the stop string). */
  get value(): string {
    return this.cut === null ? this.text : this.text.slice(0, this.cut);
  }

  private release(final: boolean): string {
    if (this.cut === null) {
      for (const s of this.stops) {
        const at = this.text.indexOf(s, Math.max(0, this.sent - s.length + 1));
        if (at >= 0 && (this.cut === null || at < this.cut)) this.cut = at;
      }
    }
    let end = this.cut ?? this.text.length;
    if (this.cut === null && !final) end -= this.holdBack();
    if (end <= this.sent) return '';
    const out = this.text.slice(this.sent, end);
    this.sent = end;
    return out;
  }

  /** Length of the longest tail of the text that is a proper prefix of a stop string. */
  private holdBack(): number {
    let hold = 0;
    for (const s of this.stops)
      for (let k = Math.min(s.length - 1, this.text.length); k > hold; k--)
        if (this.text.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
    return hold;
  }
}
