/**
 * Per-push CPU of the data path, front and shard, in one process, single-threaded,
 * measured as CPU time (process.cpuUsage), so a shared machine changes the numbers
 * less than it changes a load run. Same bodies (bench/workloads.ts BodyGen, Zipf
 * keys), same registry, 2 shards' worth of routing.
 *
 *   front  JSON.parse + validate + chains + keys + hash, a PUSH record per target
 *          shard into the batch bytes, structured clone of {items, bytes}
 *   shard  deserialize, seal the crcs, apply each record
 *
 * (Before PUSH records the shard parsed each push's envelope text again and ran
 * the chains, keys and hashing itself: bench/RESULTS.md has that comparison.)
 *
 *   node dist/bench/push_path.js [--workload medium|fraud] [--pushes 200000] [--batch 128] [--rounds 3] [--keys zipf|uniform] [--entities 1000000] [--alloc 1 [--alloc-top 20]]
 *
 * Prints µs of CPU per push for each side (best of the rounds). The WAL write
 * itself (one write per batch) is left out. With `--alloc 1`, also the bytes the
 * shard side allocates per push (V8's sampling heap profiler, counting objects
 * scavenges collected too: an unbiased estimate; the rounds with it are slower, so
 * read CPU from a run without).
 */
import { serialize, deserialize } from 'node:v8';
import { Session } from 'node:inspector';
import { compileRegistry, type CompiledRegistry } from '../src/registry/compile';
import type { RegistryState } from '../src/registry/model';
import { PushRoute } from '../src/front/routing';
import { PushFrameWriter, sealFrame, frameEnd } from '../src/wal/push_record';
import { FRAME_LENGTH_CRC_BYTES } from '../src/wal/constants';
import { ShardState } from '../src/shard/state/state';
import { PushApplier } from '../src/shard/state/push_apply';
import { ITEM_PUSH } from '../src/protocol/messages';
import { BodyGen, workloadNamed } from './workloads';
import { ENTITIES_DEFAULT, type KeyDist } from './keys';
import type { Row } from '../src/types';
import { flagPairs } from './flags';

const args = flagPairs();
const WORKLOAD = args.get('workload') ?? 'fraud';
const PUSHES = Number(args.get('pushes') ?? 200_000);
const BATCH = Number(args.get('batch') ?? 128);
const ROUNDS = Number(args.get('rounds') ?? 3);
const SHARDS = 2;
const ALLOC = args.get('alloc') === '1';
/** With --alloc 1: print this many allocation sites of the shard side, largest first. */
const ALLOC_TOP = Number(args.get('alloc-top') ?? 0);

const wl = workloadNamed(WORKLOAD);
const STATE: RegistryState = { version: 1, nodes: wl.register.nodes as RegistryState['nodes'] };
const KEYS = (args.get('keys') ?? 'zipf') as KeyDist;
const ENTITIES = Number(args.get('entities') ?? ENTITIES_DEFAULT);
const gen = new BodyGen(wl, KEYS, ENTITIES, 1, 7);
const bodies: string[] = Array.from({ length: PUSHES }, () => gen.push());
const T0 = Date.now();

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** The front: PUSH records into per-shard batch bytes. */
function frontRecords(front: CompiledRegistry, out: Buffer[][]): number {
  const route = new PushRoute();
  const writers = [new PushFrameWriter(), new PushFrameWriter()];
  const c0 = cpuUs();
  let runs = [0, 0];
  for (let i = 0; i < PUSHES; i++) {
    const body = JSON.parse(bodies[i]) as { event: string; data: unknown };
    const plan = front.events.get(body.event)!;
    const row: Row = plan.validator!.validate(body.data);
    route.route(plan, row, SHARDS);
    const mask = route.mask === 0 ? 1 : route.mask;
    for (let s = 0; s < SHARDS; s++) {
      if ((mask & (1 << s)) === 0) continue;
      route.write(writers[s], s, plan, i + 1, T0 + i, 1, null);
      runs[s]++;
    }
    if ((i + 1) % BATCH === 0 || i === PUSHES - 1) {
      for (let s = 0; s < SHARDS; s++) out[s].push(serialize({ items: [{ k: ITEM_PUSH, n: runs[s] }], bytes: writers[s].take() }));
      runs = [0, 0];
    }
  }
  return cpuUs() - c0;
}

/** Bytes allocated by `fn` (sampled, every 256 B on average, including objects already collected). */
function allocated(fn: () => void): number {
  const session = new Session();
  session.connect();
  let bytes = 0;
  // An in-process session answers synchronously.
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  fn();
  session.post('HeapProfiler.stopSampling', (err, res) => {
    if (err !== null) throw err;
    type Node = { selfSize: number; children: Node[]; callFrame: { functionName: string; url: string; lineNumber: number } };
    const sites = new Map<string, number>();
    const walk = (n: Node): void => {
      bytes += n.selfSize;
      if (n.selfSize > 0) {
        const site = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/dist\//, '')}:${n.callFrame.lineNumber + 1}`;
        sites.set(site, (sites.get(site) ?? 0) + n.selfSize);
      }
      for (const c of n.children) walk(c);
    };
    walk(res.profile.head as unknown as Node);
    if (ALLOC_TOP > 0) {
      console.log(`  top allocation sites (sampled bytes per push):`);
      for (const [site, b] of [...sites].sort((x, y) => y[1] - x[1]).slice(0, ALLOC_TOP)) console.log(`    ${(b / PUSHES).toFixed(1).padStart(7)}  ${site}`);
    }
  });
  session.disconnect();
  return bytes;
}

/** The shard: seal, then apply each record in place. */
function shardRecords(state: ShardState, batches: Buffer[]): number {
  const applier = new PushApplier(state);
  const c0 = cpuUs();
  for (const b of batches) {
    const { bytes } = deserialize(b) as { bytes: Uint8Array };
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let p = 0; p < buf.length;) p = sealFrame(buf, p);
    for (let p = 0; p < buf.length; p = frameEnd(buf, p)) applier.apply(buf, p + FRAME_LENGTH_CRC_BYTES, null);
  }
  return cpuUs() - c0;
}

function shards(): ShardState[] {
  return Array.from({ length: SHARDS }, (_, s) => { const st = new ShardState({ shardId: s, shardCount: SHARDS, memoryGovEnforce: true }); st.install(STATE); return st; });
}

function main(): void {
  const front = compileRegistry(STATE, { memoryGovEnforce: true, pushValidators: true, features: false });
  console.log(`push path: ${WORKLOAD}, ${PUSHES.toLocaleString()} pushes, batches of ${BATCH}, ${SHARDS} shards; CPU µs per push, best of ${ROUNDS}`);
  const best = { fr: Infinity, sr: Infinity, br: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const recOut: Buffer[][] = [[], []];
    best.fr = Math.min(best.fr, frontRecords(front, recOut) / PUSHES);
    const sr = shards();
    let rs = 0;
    for (let s = 0; s < SHARDS; s++) rs += shardRecords(sr[s], recOut[s]);
    best.sr = Math.min(best.sr, rs / PUSHES);
    best.br = recOut.flat().reduce((a, b) => a + b.length, 0) / PUSHES;
  }
  console.log(`front µs/push   shard µs/push (all shards)   bytes/push to shards`);
  console.log(`${best.fr.toFixed(2).padStart(13)}   ${best.sr.toFixed(2).padStart(26)}   ${best.br.toFixed(0).padStart(20)}`);
  if (ALLOC) {
    const recOut: Buffer[][] = [[], []];
    frontRecords(front, recOut);
    const sr = shards();
    const bytes = allocated(() => { for (let s = 0; s < SHARDS; s++) shardRecords(sr[s], recOut[s]); });
    console.log(`shard side: ${(bytes / PUSHES).toFixed(0)} B allocated per push (sampled)`);
  }
}

main();
