/**
 * Job results: small ones are stored inline in the job row, large ones as a JSON file in the data dir
 * (written atomically before the commit that points at it).
 */
import { createReadStream, mkdirSync, renameSync, rmSync, writeFileSync, type ReadStream } from 'node:fs';
import { join } from 'node:path';

export class ResultStore {
  constructor(
    private readonly dir: string,
    private readonly inlineLimitBytes: number,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  store(jobId: string, result: unknown): { inline: unknown; file: string | null } {
    const json = JSON.stringify(result ?? null);
    if (Buffer.byteLength(json) <= this.inlineLimitBytes) return { inline: result ?? null, file: null };
    const name = `${jobId}.json`;
    const path = join(this.dir, name);
    try {
      writeFileSync(`${path}.tmp`, json);
      renameSync(`${path}.tmp`, path);
    } catch (e) {
      // A partial file (disk full) would hold the last free space the job's failure record needs.
      rmSync(`${path}.tmp`, { force: true });
      throw e;
    }
    return { inline: undefined, file: name };
  }

  open(file: string): ReadStream {
    return createReadStream(join(this.dir, file));
  }
}
