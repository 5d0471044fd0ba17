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

type PushRow = typeof import('../test/harness/shard_feed').pushRow;
type ReadText = typeof import('../test/harness/shard_feed').readText;
/** ShardState of a build from before test/harness/shard_feed.ts: rows went in and out by name on the state itself. */
interface NamedRows {
  apply(event: string, row: unknown, t: number, lsn: number): void;
  read(table: string, key: string, features: readonly string[] | null, now: number): string;
}

/** How the benches push a row into a ShardState of the build in `dir` (its own front and PushApplier, or its ShardState.apply). */
export function buildPushRow(dir: string): PushRow {
  const feed = feedOf(dir);
  if (feed !== null) return feed.pushRow;
  return (state, event, row, t, lsn) => (state as unknown as NamedRows).apply(event, row, t, lsn);
}

/** How the benches read a row of a ShardState of the build in `dir`. */
export function buildReadText(dir: string): ReadText {
  const feed = feedOf(dir);
  if (feed !== null) return feed.readText;
  return (state, table, key, features, now) => (state as unknown as NamedRows).read(table, key, features, now);
}

function feedOf(dir: string): typeof import('../test/harness/shard_feed') | null {
  try {
    return requireBuild<typeof import('../test/harness/shard_feed')>(dir, 'test/harness/shard_feed');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes('shard_feed')) return null;
    throw err;
  }
}
