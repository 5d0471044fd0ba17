/**
 * Hand-off micro-benchmark (issue 12 item 4): per-shard batches of PUSH records
 * from the front thread to a shard thread, three ways, with the same records and
 * the same work on the shard side (walk the frames, touch every record):
 *
 *   piscina     one piscina task per batch, the batch's bytes transferred (not
 *               copied), at most SHARD_BATCHES_IN_FLIGHT_MAX in flight, the answer
 *               a small object; the worker waits on its event loop (useAtomics:
 *               false, as the shard pools are configured)
 *   port        what the server does since 2026-11-24: the same pool, one long
 *               "serve" task brings the worker a MessagePort, and batches and
 *               answers are plain messages on it (no piscina task per batch)
 *   sab-async   a SharedArrayBuffer byte ring; the front copies each batch into the
 *               ring, bumps a counter and Atomics.notify()s; the worker waits with
 *               Atomics.waitAsync (its event loop keeps running: snapshots, fdatasync
 *               timers and cold sweeps live there) and answers by bumping a counter
 *               the front awaits with Atomics.waitAsync
 *   sab-block   the same ring, the worker blocked in Atomics.wait between batches
 *               (the upper bound: its event loop would starve)
 *
 *   node dist/bench/handoff.js [--records 1000000] [--batch 1,16,128,512] [--bytes 90] [--paced R]
 *
 * Prints records/s, batch round trips (dispatch to answer) and CPU per batch over
 * both threads, per mode and batch size. Closed loop by default (as many batches
 * as answers allow, SHARD_BATCHES_IN_FLIGHT_MAX in flight); --paced R sends on a
 * timer at R records/s instead (piscina and port only): the hop at a fixed rate. Results: bench/RESULTS.md "Hand-off".
 */
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import Piscina from 'piscina';
import { SHARD_BATCHES_IN_FLIGHT_MAX } from '../src/limits';
import { PushFrameWriter } from '../src/wal/push_record';
import { openShardPipe, type ShardPipe } from '../src/protocol/shard_calls';
import { ITEM_PUSH, type ShardBatch } from '../src/protocol/messages';
import { CTRL_CONSUMED, CTRL_PRODUCED, CTRL_SLOTS, CTRL_STOP, RING_BYTES } from './handoff_walk';
import { whenChanged } from './baseline/hop_ring';
import { flagPairs } from './flags';

const args = flagPairs();
const RECORDS = Number(args.get('records') ?? 1_000_000);
const BATCHES = (args.get('batch') ?? '1,16,128,512').split(',').map(Number);
const VALUE_BYTES = Number(args.get('bytes') ?? 90);
/** --paced R: batches sent on a timer at R records/s (piscina and port only), not as fast as answers allow. */
const PACED = Number(args.get('paced') ?? 0);

/** One batch of `n` PUSH records (a key and a few values, like the medium workload). */
function batchBytes(w: PushFrameWriter, n: number, lsn: number): Uint8Array {
  for (let i = 0; i < n; i++) {
    w.begin(lsn + i, 1_700_000_000_000 + i, 1, 0, null);
    w.feed(0, `user${(lsn + i) % 100_000}`);
    w.value(12.5);
    w.value('m'.repeat(Math.max(1, VALUE_BYTES - 40)));
    w.end();
  }
  return w.take();
}

interface Result { mode: string; batch: number; recordsPerS: number; p50Us: number; p99Us: number; cpuUsPerBatch: number }

/** CPU of the whole process (both threads), µs. */
function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function percentile(xs: number[], p: number): number {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
}

async function runPiscina(batch: number, overPort: boolean): Promise<Result> {
  const pool = new Piscina({ filename: join(__dirname, 'handoff_worker.js'), minThreads: 1, maxThreads: 1, idleTimeout: Number.MAX_SAFE_INTEGER, useAtomics: false, concurrentTasksPerWorker: SHARD_BATCHES_IN_FLIGHT_MAX + 1 });
  const w = new PushFrameWriter();
  // piscina: a task per batch (the server until 2026-11-24); port: the server's pipe (openShardPipe).
  const perTask = (b: ShardBatch): Promise<unknown> => pool.run(b, b.bytes.byteLength > 0 ? { transferList: [b.bytes.buffer as ArrayBuffer] } : {});
  await perTask({ items: [], bytes: new Uint8Array(0) });
  let send = perTask;
  let pipe: ShardPipe | null = null;
  if (overPort) {
    const waiting: Array<() => void> = [];
    const p = openShardPipe(pool, { answer: () => waiting.shift()!(), lost: (err) => { throw err; } });
    pipe = p;
    // As the server's channel sends it: the frames as latin1 text (protocol/messages.ts ShardBatchWire).
    send = (b) => new Promise<void>((resolve) => { waiting.push(resolve); p.send({ items: b.items, frames: Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength).toString('latin1') }); });
  }
  const c0 = cpuUs();
  const rtts: number[] = [];
  const total = Math.ceil(RECORDS / batch);
  let sent = 0;
  let done = 0;
  let inFlight = 0;
  const t0 = performance.now();
  await new Promise<void>((resolve) => {
    if (PACED > 0) {
      // Paced: a batch every batch/PACED seconds, whatever is in flight (a push's
      // view at a fixed rate); the round trip is what one batch waits for the shard's hop.
      const timer = setInterval(() => {
        if (sent >= total) { clearInterval(timer); return; }
        const b: ShardBatch = { items: [{ k: ITEM_PUSH, n: batch }], bytes: batchBytes(w, batch, sent * batch + 1) };
        const at = performance.now();
        sent++;
        void send(b).then(() => {
          rtts.push(performance.now() - at);
          if (++done === total) resolve();
        });
      }, (batch / PACED) * 1000);
      return;
    }
    const pump = (): void => {
      while (inFlight < SHARD_BATCHES_IN_FLIGHT_MAX && sent < total) {
        const b: ShardBatch = { items: [{ k: ITEM_PUSH, n: batch }], bytes: batchBytes(w, batch, sent * batch + 1) };
        const at = performance.now();
        sent++;
        inFlight++;
        void send(b).then(() => {
          rtts.push(performance.now() - at);
          inFlight--;
          if (++done === total) resolve();
          else setImmediate(pump); // the front flushes once per event-loop turn
        });
      }
    };
    pump();
  });
  const s = (performance.now() - t0) / 1000;
  const cpu = cpuUs() - c0;
  pipe?.close();
  await pool.destroy();
  return { mode: overPort ? 'port' : 'piscina', batch, recordsPerS: (total * batch) / s, p50Us: percentile(rtts, 0.5) * 1000, p99Us: percentile(rtts, 0.99) * 1000, cpuUsPerBatch: cpu / total };
}

async function runRing(batch: number, blocking: boolean): Promise<Result> {
  const sab = new SharedArrayBuffer(RING_BYTES);
  const ctrl = new Int32Array(new SharedArrayBuffer(CTRL_SLOTS * 4));
  const ring = Buffer.from(sab);
  const worker = new Worker(join(__dirname, 'handoff_ring.js'), { workerData: { sab, ctrl: ctrl.buffer, blocking } });
  await new Promise((r) => worker.once('message', r));
  const w = new PushFrameWriter();
  const rtts: number[] = [];
  const sentAt: number[] = [];
  const total = Math.ceil(RECORDS / batch);
  let sent = 0;
  let pos = 0; // bytes produced (mod 2^31 arithmetic is not needed at these totals: reset per run)
  const t0 = performance.now();
  // Batches are written as [u32 length][frames], 4-byte aligned; a batch that does
  // not fit before the end of the ring starts at 0 after a zero length marker.
  const produce = (): void => {
    while (sent - Atomics.load(ctrl, CTRL_CONSUMED) < SHARD_BATCHES_IN_FLIGHT_MAX && sent < total) {
      const bytes = batchBytes(w, batch, sent * batch + 1);
      const need = 4 + ((bytes.length + 3) & ~3);
      let at = pos % RING_BYTES;
      if (at + need > RING_BYTES) { ring.writeUInt32LE(0, at); pos += RING_BYTES - at; at = 0; }
      ring.writeUInt32LE(bytes.length, at);
      ring.set(bytes, at + 4);
      pos += need;
      sentAt.push(performance.now());
      sent++;
      Atomics.store(ctrl, CTRL_PRODUCED, sent);
      Atomics.notify(ctrl, CTRL_PRODUCED);
    }
  };
  let seen = 0;
  const c0 = cpuUs();
  await new Promise<void>((resolve) => {
    const onDone = (): void => {
      const c = Atomics.load(ctrl, CTRL_CONSUMED);
      const now = performance.now();
      for (; seen < c; seen++) rtts.push(now - sentAt[seen]);
      if (c === total) { resolve(); return; }
      setImmediate(produce);
      whenChanged(ctrl, CTRL_CONSUMED, c, onDone);
    };
    produce();
    onDone();
  });
  const s = (performance.now() - t0) / 1000;
  const cpu = cpuUs() - c0;
  Atomics.store(ctrl, CTRL_STOP, 1);
  Atomics.notify(ctrl, CTRL_PRODUCED);
  await worker.terminate();
  return { mode: blocking ? 'sab-block' : 'sab-async', batch, recordsPerS: (total * batch) / s, p50Us: percentile(rtts, 0.5) * 1000, p99Us: percentile(rtts, 0.99) * 1000, cpuUsPerBatch: cpu / total };
}

async function main(): Promise<void> {
  console.log(`hand-off: ${RECORDS.toLocaleString()} PUSH records of ~${VALUE_BYTES} B per mode and batch size; ${SHARD_BATCHES_IN_FLIGHT_MAX} batches in flight`);
  console.log('mode        batch   records/s   batch round trip p50 / p99 (us)   CPU us per batch (both threads)');
  for (const b of BATCHES) {
    const runs = PACED > 0 ? [await runPiscina(b, false), await runPiscina(b, true)] : [await runPiscina(b, false), await runPiscina(b, true), await runRing(b, false), await runRing(b, true)];
    for (const r of runs) {
      console.log(`${r.mode.padEnd(10)} ${String(r.batch).padStart(6)} ${Math.round(r.recordsPerS).toLocaleString().padStart(11)}   ${r.p50Us.toFixed(0).padStart(6)} / ${r.p99Us.toFixed(0).padEnd(22)} ${r.cpuUsPerBatch.toFixed(1)}`);
    }
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
