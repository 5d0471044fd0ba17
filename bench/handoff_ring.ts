/**
 * bench/handoff.ts, SharedArrayBuffer ring variant: the worker side. Batches are
 * [u32 length][frames] in the ring, 4-byte aligned; a zero length sends the
 * reader back to offset 0. The worker waits for CTRL_PRODUCED to move, with
 * Atomics.waitAsync (its event loop stays free) or, with `blocking`, Atomics.wait.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { CTRL_CONSUMED, CTRL_PRODUCED, CTRL_STOP, RING_BYTES, walk } from './handoff_walk';
import { whenChanged } from './baseline/hop_ring';

const { sab, ctrl: ctrlBuf, blocking } = workerData as { sab: SharedArrayBuffer; ctrl: SharedArrayBuffer; blocking: boolean };
const ring = Buffer.from(sab);
const ctrl = new Int32Array(ctrlBuf);
let pos = 0;
let consumed = 0;
let checksum = 0;

function drain(): void {
  const produced = Atomics.load(ctrl, CTRL_PRODUCED);
  while (consumed < produced) {
    let at = pos % RING_BYTES;
    let len = ring.readUInt32LE(at);
    if (len === 0) { pos += RING_BYTES - at; at = 0; len = ring.readUInt32LE(0); }
    checksum += walk(ring, at + 4, at + 4 + len);
    pos += 4 + ((len + 3) & ~3);
    consumed++;
    Atomics.store(ctrl, CTRL_CONSUMED, consumed);
    Atomics.notify(ctrl, CTRL_CONSUMED);
  }
}

function loopAsync(): void {
  if (Atomics.load(ctrl, CTRL_STOP) === 1) { clearInterval(keepAlive); return; }
  drain();
  whenChanged(ctrl, CTRL_PRODUCED, consumed, loopAsync);
}

function loopBlocking(): void {
  while (Atomics.load(ctrl, CTRL_STOP) !== 1) {
    Atomics.wait(ctrl, CTRL_PRODUCED, consumed, 100);
    drain();
  }
}

// A pending Atomics.waitAsync does not keep a thread's event loop alive (a real
// shard thread has its piscina port and timers); this timer stands in for them.
const keepAlive = setInterval(() => {}, 1 << 30);
parentPort!.postMessage('ready');
if (blocking) loopBlocking(); else loopAsync();
process.on('exit', () => { if (checksum < 0) console.log(checksum); });
