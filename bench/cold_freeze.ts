/**
 * Cold freeze/thaw cost per entity (cold entities copy slab ranges, not
 * objects): the 10-feature table of bench/memory.ts (FEATURES) loaded into a
 * ShardState, then every entity frozen (src/shard/cold/cold.ts freeze) and removed,
 * then thawed back, round after round. Prints per round µs per entity of freeze
 * (removing the frozen slots is timed apart: it is not the encoding) and of thaw, and bytes per frozen entity; the reads after each thaw are checked
 * against those before the first freeze (exact values kept).
 *
 *   node --expose-gc dist/bench/cold_freeze.js [--entities 50000] [--events 3] [--step 20] [--rounds 5]
 *
 * `--events 3` (20 s apart) gives short rings (the common cold entity);
 * `--events 100 --step 2` puts 100 events in the 5-minute window, more than a
 * ring keeps exact (RING_ENTRIES_MAX, 64): the bucketed regime. Compare builds by
 * running each build's copy of this file.
 */
import { pushRow, readText } from '../test/harness/shard_feed';
import { freeze, thaw } from '../src/shard/cold/frozen_entity';
import { ShardState } from '../src/shard/state/state';
import { flagPairs } from './flags';
import { FEATURES, registry, rowFor } from './memory';

const args = flagPairs();
const ENTITIES = Number(args.get('entities') ?? 50_000);
const EVENTS = Number(args.get('events') ?? 3);
const ROUNDS = Number(args.get('rounds') ?? 5);
const BASE_T = 1_700_000_000_000;
/** Events of one entity are this far apart. */
const STEP_MS = 1000 * Number(args.get('step') ?? 20);

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function main(): void {
  const state = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: true });
  state.install(registry(FEATURES));
  let lsn = 0;
  for (let j = 0; j < EVENTS; j++) {
    for (let e = 0; e < ENTITIES; e++) pushRow(state, 'Tx', rowFor(e, j), BASE_T + j * STEP_MS + Math.floor(e / 1000), ++lsn);
  }
  const now = BASE_T + EVENTS * STEP_MS + ENTITIES;
  const ts = state.tableByName('Users')!;
  const cols = ts.cols;
  const keys: string[] = [];
  for (let e = 0; e < ENTITIES; e++) keys.push(`u${e}`);
  const probe = keys.filter((_, e) => e % 97 === 0);
  const want = probe.map((k) => readText(state, 'Users', k, null, now));
  console.log(`node ${process.version}, ${ENTITIES} entities x ${FEATURES.length} features, ${EVENTS} events each ${STEP_MS / 1000} s apart, ${ROUNDS} rounds`);
  const freezeUs: number[] = [];
  const thawUs: number[] = [];
  let bytesPer = 0;
  const bufs: Buffer[] = new Array(ENTITIES);
  for (let r = 0; r < ROUNDS; r++) {
    gc();
    const slots = keys.map((k) => cols.index.slotOf(k));
    let t0 = process.hrtime.bigint();
    for (let e = 0; e < ENTITIES; e++) bufs[e] = freeze(cols, slots[e]);
    const fUs = Number(process.hrtime.bigint() - t0) / 1e3 / ENTITIES;
    t0 = process.hrtime.bigint();
    for (let e = 0; e < ENTITIES; e++) cols.removeSlot(slots[e]);
    const rUs = Number(process.hrtime.bigint() - t0) / 1e3 / ENTITIES;
    let bytes = 0;
    for (const b of bufs) bytes += b.length;
    bytesPer = bytes / ENTITIES;
    gc();
    t0 = process.hrtime.bigint();
    for (let e = 0; e < ENTITIES; e++) thaw(bufs[e], cols, keys[e]);
    const tUs = Number(process.hrtime.bigint() - t0) / 1e3 / ENTITIES;
    probe.forEach((k, i) => {
      const got = readText(state, 'Users', k, null, now);
      if (got !== want[i]) throw new Error(`round ${r}: ${k} reads ${got}, before the freeze ${want[i]}`);
    });
    freezeUs.push(fUs);
    thawUs.push(tUs);
    console.log(`round ${r + 1}: freeze ${fUs.toFixed(2)} µs/entity (then removeSlot ${rUs.toFixed(2)} µs), thaw ${tUs.toFixed(2)} µs/entity, ${bytesPer.toFixed(1)} B/entity frozen`);
  }
  console.log(`median: freeze ${median(freezeUs).toFixed(2)} µs, thaw ${median(thawUs).toFixed(2)} µs, freeze+thaw ${(median(freezeUs) + median(thawUs)).toFixed(2)} µs per entity; ${bytesPer.toFixed(1)} B per frozen entity; reads checked on ${probe.length} entities`);
}

main();
