/**
 * What the model repository keeps on disk, under <data dir>/models: `index.json` (every registered
 * version, rewritten whole under another name and renamed, so a crash leaves the old or the new one),
 * the weights of each version (`<name>/<version>.<ext>`, copied from a train job's checkpoint or moved
 * from an upload) and uploads not yet registered (`uploads/upl_<hex>`), written as they stream in.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TandemError } from '../../core/errors.js';
import type { BatchingConfig } from './batcher.js';
import type { ModelPlacement } from './model.js';

/**
 * Triton's model_warmup: `requests` requests with `inputs` (one request's inputs, as an infer request
 * sends them) run one after another through the version's batcher, then one full batch of them, before
 * the version is ready. The first clients then meet a model whose kernels are compiled, whose memory is
 * allocated and whose host code V8 has already optimized (the first thousand requests of a fresh
 * process were measured 0.27 ms slower at p99 than later ones: bench/RESULTS.md).
 */
export interface ModelWarmup {
  readonly inputs: unknown;
  readonly requests: number;
}

/** One registered version as the index stores it. */
export interface Registration {
  readonly name: string;
  readonly version: number;
  readonly kind: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly placement: ModelPlacement;
  readonly batching: BatchingConfig;
  /** Weights file relative to the models directory, or null (built from the config's seed). */
  readonly weights: string | null;
  /** Requests run through the model before it is ready (absent: none); see ModelWarmup. */
  readonly warmup?: ModelWarmup;
  readonly source: { readonly type: 'builtin' | 'job' | 'upload'; readonly job?: string };
  /** The tenant that registered it (it, or an admin, may unload it). */
  readonly owner: string;
  readonly createdAt: number;
}

const INDEX_FORMAT = 'tandem-models/1';
export const UPLOAD_ID = /^upl_[0-9a-f]{24}$/;

export class ModelFiles {
  readonly dir: string;
  constructor(dataDir: string) {
    this.dir = join(dataDir, 'models');
  }

  readIndex(): Registration[] {
    let text: string;
    try {
      text = readFileSync(join(this.dir, 'index.json'), 'utf8');
    } catch {
      return [];
    }
    const parsed = JSON.parse(text) as { format?: string; models?: Registration[] };
    if (parsed.format !== INDEX_FORMAT || !Array.isArray(parsed.models))
      throw new TandemError('TANDEM_ERR_CONFIG', `${join(this.dir, 'index.json')} is not a model index`);
    return parsed.models;
  }

  /** Renames a damaged index out of the way (kept for a person to look at); returns where it went. */
  setAside(): string {
    const aside = join(this.dir, `index.json.damaged-${Date.now()}`);
    renameSync(join(this.dir, 'index.json'), aside);
    return aside;
  }

  writeIndex(models: readonly Registration[]): void {
    mkdirSync(this.dir, { recursive: true });
    const tmp = join(this.dir, `index.json.${process.pid}.tmp`);
    writeFileSync(tmp, JSON.stringify({ format: INDEX_FORMAT, models }, null, 1));
    renameSync(tmp, join(this.dir, 'index.json'));
  }

  /** The absolute path of a stored weights file. */
  path(relative: string): string {
    return join(this.dir, relative);
  }

  /** Where version `version` of `name` keeps its weights (relative), creating its folder. */
  weightsFor(name: string, version: number, ext: string): string {
    mkdirSync(join(this.dir, name), { recursive: true });
    return join(name, `${version}.${ext}`);
  }

  uploadPath(id: string): string {
    if (!UPLOAD_ID.test(id))
      throw new TandemError(
        'TANDEM_ERR_INVALID_ARGUMENT',
        `upload: ${JSON.stringify(id)} is not an upload id`,
      );
    return join(this.dir, 'uploads', id);
  }

  /**
   * Streams an upload to disk, refusing it (TANDEM_ERR_PAYLOAD_TOO_LARGE, nothing kept) once it passes
   * `maxBytes`. Returns its id for a later registration.
   */
  async saveUpload(body: Readable, maxBytes: number): Promise<{ upload: string; bytes: number }> {
    const id = `upl_${randomBytes(12).toString('hex')}`;
    mkdirSync(join(this.dir, 'uploads'), { recursive: true });
    const part = `${this.uploadPath(id)}.part`;
    let bytes = 0;
    try {
      await pipeline(
        body,
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const c of chunks) {
            bytes += c.length;
            if (bytes > maxBytes)
              throw new TandemError(
                'TANDEM_ERR_PAYLOAD_TOO_LARGE',
                `the upload is larger than the limit of ${maxBytes} bytes`,
                { maxBytes },
              );
            yield c;
          }
        },
        createWriteStream(part),
      );
    } catch (e) {
      rmSync(part, { force: true });
      throw e;
    }
    renameSync(part, this.uploadPath(id));
    return { upload: id, bytes };
  }

  remove(relative: string | null): void {
    if (relative !== null) rmSync(this.path(relative), { force: true });
  }
}
