/**
 * The data directory's identity file (`<data>/streamfeat.json`). Each shard's WAL
 * and snapshots hold only the entity keys that hash to it, so a data directory
 * written with N shards can only be recovered with N shards: starting with another
 * count would route keys to shards that never saw them. Refused at boot with a
 * message saying how to proceed. It also names the data format of everything under
 * the data dir (data_format.ts), checked first.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StartupError } from './startup_error';
import { checkDataFormat, checkUnmarkedDataDir, dataDirIdentity } from './data_format';

export class DataDirError extends StartupError {}

export function checkDataDir(dataDir: string, shards: number): void {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'streamfeat.json');
  if (existsSync(path)) {
    const meta = JSON.parse(readFileSync(path, 'utf8')) as { data_format?: number; shards: number };
    checkDataFormat(dataDir, meta);
    if (meta.shards !== shards) {
      throw new DataDirError(`data dir ${dataDir} was written with --shards ${meta.shards}; start with --shards ${meta.shards} (re-sharding an existing data dir is not supported in v0)`);
    }
    return;
  }
  checkUnmarkedDataDir(dataDir);
  writeFileSync(`${path}.tmp`, JSON.stringify(dataDirIdentity(shards)));
  renameSync(`${path}.tmp`, path);
}
