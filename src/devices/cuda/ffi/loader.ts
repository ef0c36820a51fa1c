/**
 * Finds and loads the CUDA shared libraries at run time. Nothing is linked at build time, so the same
 * code starts on machines without a GPU; when a library is missing the caller gets every path tried.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import koffi from 'koffi';

export type KoffiLib = ReturnType<typeof koffi.load>;

export interface LibrarySearch {
  /** Explicit toolkit root (options.cudaPath, else CUDA_PATH). */
  readonly cudaPath?: string;
  /** Extra directories searched first (options.libraryPaths). */
  readonly extraDirs?: readonly string[];
  /** LD_LIBRARY_PATH split into directories. */
  readonly ldPaths?: readonly string[];
}

export interface LoadedLibrary {
  readonly lib: KoffiLib;
  readonly path: string;
}

export class LibraryNotFound extends Error {
  constructor(
    readonly library: string,
    readonly tried: readonly string[],
  ) {
    super(`${library} not found (tried: ${tried.join('; ')})`);
    this.name = 'LibraryNotFound';
  }
}

/** Directories where toolkit libraries (nvrtc, cublas) live, most specific first, without duplicates. */
export function toolkitDirs(search: LibrarySearch): string[] {
  const dirs: string[] = [...(search.extraDirs ?? [])];
  const roots: string[] = [];
  if (search.cudaPath) roots.push(search.cudaPath);
  roots.push(...listCudaRoots('/usr/local'));
  for (const root of roots) {
    dirs.push(join(root, 'lib64'));
    const targets = join(root, 'targets');
    if (existsSync(targets)) {
      for (const t of safeReaddir(targets)) dirs.push(join(targets, t, 'lib'));
    }
  }
  dirs.push(...(search.ldPaths ?? []));
  return [...new Set(dirs)];
}

/** /usr/local/cuda first, then versioned installs newest first (cuda-13.0 before cuda-12.4). */
function listCudaRoots(base: string): string[] {
  const names = safeReaddir(base).filter((n) => n === 'cuda' || n.startsWith('cuda-'));
  names.sort((a, b) => (a === 'cuda' ? -1 : b === 'cuda' ? 1 : b.localeCompare(a, 'en', { numeric: true })));
  return names.map((n) => join(base, n));
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * Tries each soname in each directory, then the bare soname through the system loader. Returns the
 * first that loads; throws LibraryNotFound listing everything tried.
 */
export function loadLibrary(sonames: readonly string[], dirs: readonly string[]): LoadedLibrary {
  const tried: string[] = [];
  for (const dir of dirs) {
    for (const so of sonames) {
      const path = join(dir, so);
      if (!existsSync(path)) continue;
      try {
        return { lib: koffi.load(path), path };
      } catch (e) {
        tried.push(`${path} (${e instanceof Error ? e.message : String(e)})`);
      }
    }
  }
  if (dirs.length > 0) tried.push(`${sonames.join('|')} in ${dirs.length} directories: absent`);
  for (const so of sonames) {
    try {
      return { lib: koffi.load(so), path: so };
    } catch (e) {
      tried.push(`${so} via the system loader (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  throw new LibraryNotFound(sonames[0] ?? '?', tried);
}
