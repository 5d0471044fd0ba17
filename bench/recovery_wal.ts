/**
 * The data dir the recovery benches start from (recovery.ts, replay_cpu.ts): the
 * registry log with RECOVERY_NODES and, per shard, a WAL of `events` pushes over
 * `entities` users, written with the code the server uses (the front's PushRoute
 * writing PUSH records, sealed as the shard seals them), so building 10M events
 * takes seconds instead of a long push run.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PushFrameWriter, RegistryLog, sealFrame, WalWriter } from '../src/wal';
import { hashKey } from '../src/registry/key';
import { compileRegistry } from '../src/registry/compile';
import { PushRoute } from '../src/front/routing';
import { RECOVERY_NODES } from './recovery_registry';
import { dataDirIdentity } from '../src/data_format';

/** Pushes per WAL append (a front batch). */
const BATCH = 512;
const NODES = RECOVERY_NODES;

export function buildRecoveryDataDir(o: { events: number; entities: number; shards: number }): string {
  const { events: EVENTS, entities: ENTITIES, shards: SHARDS } = o;
  const dir = mkdtempSync(join(tmpdir(), 'streamfeat-recovery-'));
  writeFileSync(join(dir, 'streamfeat.json'), JSON.stringify(dataDirIdentity(SHARDS)));
  mkdirSync(join(dir, 'registry'), { recursive: true });
  const { log } = RegistryLog.open(join(dir, 'registry', 'registry.log'));
  log.append({ version: 1, nodes: NODES });
  log.close();
  const writers: WalWriter[] = [];
  const frames: PushFrameWriter[] = [];
  const counts: number[] = [];
  const firsts: number[] = [];
  for (let s = 0; s < SHARDS; s++) {
    writers.push(WalWriter.open(join(dir, `shard-${s}`, 'wal'), { segmentBytesMax: 64 * 1024 * 1024, nextLsnHint: 1 }));
    frames.push(new PushFrameWriter());
    counts.push(0);
    firsts.push(-1);
  }
  const t0 = Date.now() - 30 * 60_000;
  const flush = (s: number, last: number): void => {
    const bytes = Buffer.from(frames[s].take());
    for (let p = 0; p < bytes.length;) p = sealFrame(bytes, p);
    writers[s].append(bytes, firsts[s], last);
    counts[s] = 0;
    firsts[s] = -1;
  };
  // The front's side: the registry as the front compiles it, routing and record writing.
  const reg = compileRegistry({ version: 1, nodes: NODES }, { memoryGovEnforce: true, pushValidators: true, features: false });
  const plan = reg.events.get('Txn')!;
  const route = new PushRoute();
  const lastOf: number[] = new Array(SHARDS).fill(0);
  for (let lsn = 1; lsn <= EVENTS; lsn++) {
    const user = `user${(lsn * 2654435761) % ENTITIES}`;
    const s = SHARDS === 1 ? 0 : hashKey(user) % SHARDS;
    if (firsts[s] < 0) firsts[s] = lsn;
    const t = t0 + Math.floor(lsn / 1000);
    route.route(plan, { user, amount: (lsn % 997) + 0.5 }, SHARDS);
    route.write(frames[s], s, plan, lsn, t, 1, null);
    counts[s]++;
    lastOf[s] = lsn;
    if (counts[s] >= BATCH) flush(s, lsn);
  }
  for (let s = 0; s < SHARDS; s++) {
    if (counts[s] > 0) flush(s, lastOf[s]);
    writers[s].sync();
    writers[s].close();
  }
  return dir;
}
