/**
 * WAL replay in process, in CPU time: ShardStore.open (the shard's recovery: scan,
 * crc, decode, apply) on a WAL of `--events` PUSH records over `--entities` users
 * (bench/recovery_wal.ts, the table of bench/recovery.ts), without process start.
 * On a shared machine wall time includes time the process was not scheduled;
 * process CPU time does not (it does include V8's GC helper threads).
 *
 *   node dist/bench/replay_cpu.js [--events 1000000] [--entities 100000] [--rounds 3] [--build <dist>[,<dist>...]] [--snapshot 1]
 *
 * `--snapshot 1`: each build first replays the WAL in a copy of the data dir of its
 * own and writes a shutdown snapshot (ShardStore.snapshotNow), then the rounds time
 * the restart from that snapshot (restore, then the WAL after it: nothing here).
 *
 * `--build` replays with the recovery code of other builds (the same ShardStore
 * API as this one), round by round in turn with this one, for a before/after on
 * the same machine at the same moment; the entity counts and a sample of rows
 * must agree between builds.
 */
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildRecoveryDataDir } from './recovery_wal';
import { RECOVERY_NODES } from './recovery_registry';
import { flagPairs } from './flags';
import { buildReadText, requireBuild } from './build_require';

const args = flagPairs();
const EVENTS = Number(args.get('events') ?? 1_000_000);
const ENTITIES = Number(args.get('entities') ?? 100_000);
const ROUNDS = Number(args.get('rounds') ?? 3);
const SNAPSHOT = args.get('snapshot') === '1';
const BUILDS = [join(__dirname, '..'), ...(args.get('build')?.split(',') ?? [])];
/** Rows compared between builds. */
const SAMPLE_KEYS = 1000;

/* eslint-disable @typescript-eslint/no-require-imports */
interface Build {
  dir: string;
  ShardStore: typeof import('../src/shard/persist/store').ShardStore;
  ShardState: typeof import('../src/shard/state/state').ShardState;
  DedupeLog: typeof import('../src/shard/state/dedupe_log').DedupeLog;
  createLogger: typeof import('../src/log').createLogger;
  readText: ReturnType<typeof buildReadText>;
}

function load(dir: string): Build {
  return {
    dir,
    ShardStore: requireBuild<typeof import('../src/shard/persist/store')>(dir, 'src/shard/persist/store').ShardStore,
    ShardState: requireBuild<typeof import('../src/shard/state/state')>(dir, 'src/shard/state/state').ShardState,
    DedupeLog: requireBuild<typeof import('../src/shard/state/dedupe_log')>(dir, 'src/shard/state/dedupe_log').DedupeLog,
    createLogger: (require(join(dir, 'src/log')) as typeof import('../src/log')).createLogger,
    readText: buildReadText(dir),
  };
}

function replay(b: Build, dataDir: string, snapshotAfter = false): { cpuMs: number; wallMs: number; records: number; sample: string } {
  const registry = { version: 1, nodes: RECOVERY_NODES };
  const state = new b.ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  const init = {
    shardId: 0, shardCount: 1, dataDir, memoryOnly: false, memoryLimitBytes: 0, memoryGovEnforce: true, logLevel: 'warn',
    walSync: 'batch' as const, walSyncTimeoutMs: 5000, walSyncIntervalMs: 10, walSegmentBytesMax: 64 * 1024 * 1024, faultFile: null,
    partitions: 0, history: [registry], current: registry,
  };
  const log = b.createLogger('warn');
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const { store, info } = b.ShardStore.open(init, state, new b.DedupeLog(), log);
  const wallMs = performance.now() - w0;
  const c = process.cpuUsage(c0);
  if (snapshotAfter) store.snapshotNow(state, new b.DedupeLog());
  store.close();
  const ts = state.tableByName('U')!;
  let sample = `${ts.size}`;
  for (let i = 0; i < SAMPLE_KEYS; i++) sample += b.readText(state, 'U', `user${(i * 7919) % ENTITIES}`, null, state.lastT);
  return { cpuMs: (c.user + c.system) / 1000, wallMs, records: info.records, sample };
}

function main(): void {
  const builds = BUILDS.map(load);
  console.log(`replay CPU: ${EVENTS.toLocaleString()} PUSH records over ${ENTITIES.toLocaleString()} entities, ${ROUNDS} rounds per build`);
  const dir = buildRecoveryDataDir({ events: EVENTS, entities: ENTITIES, shards: 1 });
  // --snapshot: a data dir per build, holding the WAL and a snapshot that build wrote.
  const dirs = builds.map((b, i) => {
    if (!SNAPSHOT) return dir;
    const own = `${dir}-${i}`;
    cpSync(dir, own, { recursive: true });
    replay(b, own, true);
    return own;
  });
  try {
    let first: string | null = null;
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, b] of builds.entries()) {
        const res = replay(b, dirs[i]);
        if (first !== null && first !== res.sample) throw new Error(`${b.dir}: replayed state differs from the first replay's`);
        first = res.sample;
        if (SNAPSHOT) console.log(`  ${b.dir}: restart from the snapshot (${res.records.toLocaleString()} WAL records after it): ${res.cpuMs.toFixed(0)} ms CPU (wall ${res.wallMs.toFixed(0)} ms)`);
        else console.log(`  ${b.dir}: ${res.records.toLocaleString()} records, ${res.cpuMs.toFixed(0)} ms CPU = ${Math.round(res.records / (res.cpuMs / 1000)).toLocaleString()} records/s of CPU (wall ${res.wallMs.toFixed(0)} ms)`);
      }
    }
  } finally {
    for (const d of new Set([dir, ...dirs])) rmSync(d, { recursive: true, force: true });
  }
}

main();
