/**
 * The `--hop ring` hand-off of the hop baselines (hop.ts, uws_hop_worker.ts):
 * batches of strings through two SharedArrayBuffer rings, one each way, with
 * Atomics.notify / Atomics.waitAsync as the wake-ups instead of postMessage.
 * Issue 12 item 4 asked whether such a ring beats batched messages; bench/handoff.ts
 * compares the two moving PUSH records, and `ceiling --hop ring` compares them end
 * to end, in the servers whose ratio bounds streamfeat's (bench/RESULTS.md).
 *
 * A batch in a ring: [u32 count + 1] then per string [u32 byte length][utf-8,
 * padded to 4]. A zero where a batch would start sends the reader back to offset 0
 * (the writer wraps when the batch would not fit before the end). At most
 * SHARD_BATCHES_IN_FLIGHT_MAX batches are in a ring at once, far below its size,
 * so the writer never catches up with the reader.
 */

export const RING_BYTES = 4 * 1024 * 1024;
/** Int32 slots of the control array: batches written to the request ring, to the reply ring. */
export const CTRL_REQUESTS = 0;
export const CTRL_REPLIES = 1;
export const CTRL_SLOTS = 2;

/** Atomics.waitAsync (Node 16+), which the ES2022 typings of this project lack. */
type WaitAsyncResult = { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
const atomics = Atomics as unknown as { waitAsync(ta: Int32Array, index: number, value: number): WaitAsyncResult };

/** Calls `then` once ctrl[index] is no longer `value` (on a later turn when it already is not). */
export function whenChanged(ctrl: Int32Array, index: number, value: number, then: () => void): void {
  const wa = atomics.waitAsync(ctrl, index, value);
  if (wa.async) void wa.value.then(then);
  else setImmediate(then);
}

/** One direction: a writer on one thread, a reader on the other, counting batches in ctrl[index]. */
export class StringRing {
  readonly #buf: Buffer;
  #pos = 0;
  #count = 0;

  constructor(sab: SharedArrayBuffer, readonly ctrl: Int32Array, readonly index: number) {
    this.#buf = Buffer.from(sab);
  }

  /** Writer: appends a batch and wakes the reader. */
  put(strs: readonly string[]): void {
    const buf = this.#buf;
    let need = 4;
    for (const s of strs) need += 4 + ((Buffer.byteLength(s) + 3) & ~3);
    let at = this.#pos % RING_BYTES;
    if (at + need > RING_BYTES) {
      buf.writeUInt32LE(0, at);
      this.#pos += RING_BYTES - at;
      at = 0;
    }
    buf.writeUInt32LE(strs.length + 1, at);
    let p = at + 4;
    for (const s of strs) {
      const n = buf.write(s, p + 4, 'utf8');
      buf.writeUInt32LE(n, p);
      p += 4 + ((n + 3) & ~3);
    }
    this.#pos += p - at;
    Atomics.store(this.ctrl, this.index, ++this.#count);
    Atomics.notify(this.ctrl, this.index);
  }

  /** Reader: batches written and not yet taken. */
  get ready(): number {
    return Atomics.load(this.ctrl, this.index) - this.#count;
  }

  /** Reader: the next batch (ready > 0). */
  take(): string[] {
    const buf = this.#buf;
    let at = this.#pos % RING_BYTES;
    let c = buf.readUInt32LE(at);
    if (c === 0) {
      this.#pos += RING_BYTES - at;
      at = 0;
      c = buf.readUInt32LE(0);
    }
    const out = new Array<string>(c - 1);
    let p = at + 4;
    for (let i = 0; i < c - 1; i++) {
      const n = buf.readUInt32LE(p);
      out[i] = buf.toString('utf8', p + 4, p + 4 + n);
      p += 4 + ((n + 3) & ~3);
    }
    this.#pos += p - at;
    this.#count++;
    return out;
  }

  /** Reader: calls `then` once a batch is ready (it may be already). */
  whenReady(then: () => void): void {
    whenChanged(this.ctrl, this.index, this.#count, then);
  }
}

/** The shared memory of one ring hop, as the worker receives it in workerData. */
export interface RingShared {
  requests: SharedArrayBuffer;
  replies: SharedArrayBuffer;
  ctrl: SharedArrayBuffer;
}

export function newRingShared(): RingShared {
  return { requests: new SharedArrayBuffer(RING_BYTES), replies: new SharedArrayBuffer(RING_BYTES), ctrl: new SharedArrayBuffer(4 * CTRL_SLOTS) };
}

/** One side's view of a ring hop: the front writes requests and reads replies, the worker the other way round. */
export interface Rings {
  requests: StringRing;
  replies: StringRing;
}

export function openRings(shared: RingShared): Rings {
  const ctrl = new Int32Array(shared.ctrl);
  return { requests: new StringRing(shared.requests, ctrl, CTRL_REQUESTS), replies: new StringRing(shared.replies, ctrl, CTRL_REPLIES) };
}
