/**
 * Typed arrays for the shard's large structures that grow by doubling (ring
 * pools; per slot, the entity columns and ring state; intern refs; the key
 * arena), grown in place on SharedArrayBuffers once they are large.
 *
 * Why shared: V8 counts every ArrayBuffer an isolate allocates as external
 * memory and charges what was allocated since the last mark-compact against the
 * old-generation limit. Each doubling of a 4-64 MB ring pool therefore started
 * a mark-compact of the shard (pauses of 3-16 ms on its ~10-25 MB heap, then a
 * backlog: bench/DECISIONS.md "GC, memory and growth"),
 * although the heap itself had not grown. The bytes of a SharedArrayBuffer are
 * not charged to any isolate (V8's BackingStore::PerIsolateAccountingLength is
 * 0 for shared memory), and element access is as fast as on an ArrayBuffer.
 *
 * Why in place: a doubling that copies is a stop-the-world step of the shard
 * proportional to what the table holds. With every column of a table doubling
 * at once, crossing 1M entities stalled one push ~160 ms (slots 77 ms, ring pool
 * 32 ms, plus the key table's rehash; bench/DECISIONS.md "GC, memory and growth"). An
 * array that reaches GROW_IN_PLACE_BYTES_MIN moves once onto a growable
 * SharedArrayBuffer reserving GROWABLE_RESERVE_BYTES of address space; later
 * doublings commit more of it (`grow`, microseconds) and take a new view of the
 * same bytes. Views are always fixed-length: V8 11 optimizes a fixed-length view
 * of a growable buffer like any other, where a length-tracking one costs 9x per
 * element access. A growable buffer never shrinks, so the views stay valid; the
 * array a caller replaces by its grown one keeps aliasing the first bytes.
 *
 * The bytes still count where streamfeat measures memory: unaccountedBytes() is what
 * this thread's arrays from here hold (a FinalizationRegistry takes an array's
 * bytes off once it is collected), added to the shard's measured memory
 * (--memory-limit) and to the thread's external bytes (admin). The price: an
 * array that is replaced is freed at the next mark-compact rather than prompting
 * one, so garbage on shared memory stays resident until some other cause starts
 * one. Hence only arrays that grow in place belong here; tables that are rebuilt
 * (the key and intern tables' resizes, shard/state/probe_table.ts) stay ordinary
 * ArrayBuffers, which V8 counts and collects in time.
 *
 * These arrays never leave their thread and are never structured-cloned
 * (snapshots and saves copy out of them, e.g. TypedArray#slice, which makes an
 * ordinary ArrayBuffer).
 */
import { GROWABLE_RESERVE_BYTES, GROW_IN_PLACE_BYTES_MIN } from '../limits';

/** The typed arrays that grow by doubling. */
export type GrowingArray = Float64Array | Int32Array | Uint32Array | Uint16Array | Uint8Array;
type ArrayOn<T extends GrowingArray> = new (buffer: ArrayBufferLike, byteOffset: number, length: number) => T;

/** A growable SharedArrayBuffer (ES2024; not in this TypeScript's lib). */
interface GrowableShared extends SharedArrayBuffer {
  readonly maxByteLength: number;
  grow(bytes: number): void;
}
const GrowableShared = SharedArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => GrowableShared;

/** What one buffer holds now (a growable one changes it in place). */
interface Held { bytes: number; growable: boolean }

let held = 0;
/** Reservations of address space refused (their arrays were made ordinary: they copy on doubling). */
let refused = 0;
/** Of `held`, the bytes of growable buffers (Node's arrayBuffers figure leaves them out; it counts the others). */
let heldGrowable = 0;
const collected = new FinalizationRegistry<Held>((h) => {
  held -= h.bytes;
  if (h.growable) heldGrowable -= h.bytes;
});
/** The growable buffers from here, by buffer: what each holds now. */
const growable = new WeakMap<ArrayBufferLike, Held>();

function shared(bytes: number, grows: boolean): SharedArrayBuffer {
  let buf: SharedArrayBuffer | null = null;
  if (grows && bytes <= GROWABLE_RESERVE_BYTES) {
    // Out of address space (a limit on it, RLIMIT_AS) is not out of memory: copy on doubling instead (the shard logs it).
    try {
      buf = new GrowableShared(bytes, { maxByteLength: GROWABLE_RESERVE_BYTES });
    } catch {
      buf = null;
      refused++;
    }
  }
  const h = { bytes, growable: buf !== null };
  if (buf === null) buf = new SharedArrayBuffer(bytes);
  else {
    growable.set(buf, h);
    heldGrowable += bytes;
  }
  held += bytes;
  collected.register(buf, h);
  return buf;
}

/** A zeroed Float64Array of `n` elements that V8 does not count as external memory. */
export function unaccountedFloat64(n: number): Float64Array {
  return new Float64Array(shared(8 * n, 8 * n >= GROW_IN_PLACE_BYTES_MIN), 0, n);
}

/**
 * `a` grown to `length` elements (more than it has) for storage growth by
 * doubling, its values first and zeros after: in place when `a` is a whole
 * growable buffer with room, else a copy, on a growable buffer once `length`
 * reaches GROW_IN_PLACE_BYTES_MIN. Small arrays stay ordinary (accounted) when
 * `a` is one, unaccounted when `a` is shared. (No fill value: the growing
 * structures read zero as their empty state, and a fill would touch every new
 * page at once.)
 */
export function grown<T extends GrowingArray>(a: T, length: number): T {
  const Ctor = a.constructor as ArrayOn<T>;
  const bytes = length * a.BYTES_PER_ELEMENT;
  const buf = a.buffer;
  const h = growable.get(buf);
  if (h !== undefined && a.byteOffset === 0 && a.byteLength === h.bytes && bytes <= GROWABLE_RESERVE_BYTES) {
    (buf as GrowableShared).grow(bytes);
    held += bytes - h.bytes;
    heldGrowable += bytes - h.bytes;
    h.bytes = bytes;
    return new Ctor(buf, 0, length);
  }
  const large = bytes >= GROW_IN_PLACE_BYTES_MIN;
  const b = large || buf instanceof SharedArrayBuffer ? new Ctor(shared(bytes, large), 0, length) : new Ctor(new ArrayBuffer(bytes), 0, length);
  b.set(a);
  return b;
}

/** A view of `a`'s bytes as 32-bit words: fixed-length, never tracking a growable buffer's length. */
export function wordsOf(a: Float64Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length * 2);
}

/** The same, as signed words. */
export function int32sOf(a: Float64Array): Int32Array {
  return new Int32Array(a.buffer, a.byteOffset, a.length * 2);
}

/** Bytes of this thread's arrays from here that are not collected yet. */
export function unaccountedBytes(): number {
  return held;
}

/** Reservations of address space this thread was refused so far. */
export function reservationsRefused(): number {
  return refused;
}

/** Of those, the bytes on growable buffers: what process.memoryUsage().arrayBuffers leaves out (it counts the rest). */
export function growableBytes(): number {
  return heldGrowable;
}
