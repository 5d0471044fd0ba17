/**
 * The data format of a data dir: one number for the formats of every file the
 * server writes under it (WAL record types, snapshot file version and body
 * format, frozen cold entities, registry log entries; docs/durability.md
 * "Formats"). It is recorded in the identity file (`streamfeat.json`,
 * data_dir.ts) when the data dir is first used, and checked before anything under
 * it is read: a build reads exactly its own data format, so a data dir of another
 * one is refused at start with one line naming its format and what to do, instead
 * of failing later on a record or snapshot it would misread.
 *
 * Data format 1 is the first released layout. Builds before it (version 0.1.0,
 * never released) wrote `{"format":1,"shards":N}` without `data_format`, or no
 * identity file at all, and files in formats this build does not read; nothing in
 * such a data dir can be converted.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from './startup_error';

export const DATA_FORMAT = 1;

/** The identity file's contents for a new data dir of `shards` shards. */
export function dataDirIdentity(shards: number): { data_format: number; shards: number } {
  return { data_format: DATA_FORMAT, shards };
}

/** What to do with a data dir this build does not read. */
function fix(dataDir: string): string {
  return `start with another --data-dir (or move ${dataDir} away); its state cannot be converted, pushes rebuild it`;
}

/** Throws StartupError (exit 2) unless the identity file `meta` of `dataDir` names this build's data format. */
export function checkDataFormat(dataDir: string, meta: { data_format?: unknown }): void {
  const format = meta.data_format;
  if (format === DATA_FORMAT) return;
  if (format === undefined) {
    throw new StartupError(`data dir ${dataDir} is in a pre-release format (its streamfeat.json names no data_format: written by a build before data format 1, whose WAL records and snapshots this build does not read); ${fix(dataDir)}`);
  }
  throw new StartupError(`data dir ${dataDir} is in data format ${JSON.stringify(format)}; this build reads data format ${DATA_FORMAT} only: start the build that wrote it, or ${fix(dataDir)}`);
}

/**
 * A data dir without an identity file: throws StartupError when it already holds
 * a registry log or WAL segments (written by a build before the identity file);
 * an empty or new one is fine.
 */
export function checkUnmarkedDataDir(dataDir: string): void {
  const written = existsSync(join(dataDir, 'registry', 'registry.log')) ||
    readdirSync(dataDir).some((name) => /^shard-\d+$/.test(name) && hasFiles(join(dataDir, name, 'wal')));
  if (written) {
    throw new StartupError(`data dir ${dataDir} is in a pre-release format (a registry log or WAL segments but no streamfeat.json: written by a build before data format 1, whose WAL records and snapshots this build does not read); ${fix(dataDir)}`);
  }
}

function hasFiles(dir: string): boolean {
  try {
    return readdirSync(dir).some((n) => n.endsWith('.log'));
  } catch {
    return false;
  }
}
