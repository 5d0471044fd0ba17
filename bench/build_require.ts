/**
 * Loads a module of a build the A/B benches compare against (`--build <dir>`, a
 * checkout's dist/), by its path under dist/ in this layout. Builds from before
 * src/shard/ was grouped into folders (state/, columns/, cold/, persist/) keep the
 * same files flat in src/shard/; those are loaded from there.
 */
import { join } from 'node:path';

const SHARD_FOLDER = /^src\/shard\/(state|columns|cold|persist)\//;

export function requireBuild<T>(dir: string, path: string): T {
  /* eslint-disable @typescript-eslint/no-require-imports */
  try {
    return require(join(dir, path)) as T;
  } catch (err) {
    const flat = path.replace(SHARD_FOLDER, 'src/shard/');
    const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(join(dir, path));
    if (!missing || flat === path) throw err;
    return require(join(dir, flat)) as T;
  }
}
