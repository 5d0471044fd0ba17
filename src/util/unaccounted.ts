/**
 * Typed arrays for the shard's large tables that grow by doubling (ring pools,
 * intern and entity key tables), allocated on SharedArrayBuffers.
 *
 * Why: V8 counts every ArrayBuffer an isolate allocates as external memory and
 * charges what was allocated since the last mark-compact against the
 * old-generation limit. Each doubling of a 4-64 MB ring pool therefore started
 * a mark-compact of the shard (pauses of 3-16 ms on its ~10-25 MB heap, then a
 * backlog: bench/RESULTS.md "Fraud p99 at half rate: the shard's timeline"),
 * although the heap itself had not grown. The bytes of a SharedArrayBuffer are
 * not charged to any isolate (V8's BackingStore::PerIsolateAccountingLength is
 * 0 for shared memory), and element access is as fast as on an ArrayBuffer.
 *
 * The bytes still count where streamfeat measures memory: unaccountedBytes() is what
 * this thread's arrays from here hold (a FinalizationRegistry takes an array's
 * bytes off once it is collected), added to the shard's measured memory
 * (--memory-limit) and to the thread's external bytes (admin). The price: an
 * array replaced by a doubling is freed at the next mark-compact rather than
 * prompting one, so up to the sum of the arrays replaced since then stays
 * resident a while longer.
 *
 * These arrays never leave their thread and are never structured-cloned
 * (snapshots and saves copy out of them, e.g. TypedArray#slice, which makes an
 * ordinary ArrayBuffer).
 */

let held = 0;
const collected = new FinalizationRegistry<number>((bytes) => { held -= bytes; });

function shared(bytes: number): SharedArrayBuffer {
  const buf = new SharedArrayBuffer(bytes);
  held += bytes;
  collected.register(buf, bytes);
  return buf;
}

/** A zeroed Float64Array of `n` elements that V8 does not count as external memory. */
export function unaccountedFloat64(n: number): Float64Array {
  return new Float64Array(shared(8 * n));
}

/** A zeroed Int32Array of `n` elements that V8 does not count as external memory. */
export function unaccountedInt32(n: number): Int32Array {
  return new Int32Array(shared(4 * n));
}

/** Bytes of this thread's arrays from here that are not collected yet. */
export function unaccountedBytes(): number {
  return held;
}
