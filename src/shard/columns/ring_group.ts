/**
 * One raw-event ring per entity shared by every windowed feature of a table
 * without `where`, whatever its window: count, sum, mean, min, max, var/std,
 * quantile, n_unique, top_k, ... over 1h, 24h and 7d all read the same ring of
 * (t, field values) cells while it is exact, and each keeps only its own bucket
 * part (events pushed out of the full ring: the bucket functions and folds of
 * ops/num_window.ts and ops/val_window.ts). Semantics and bounds: docs/ops.md
 * "Windows".
 *
 *   per slot (typed arrays):  cls  blk  head  len  rec  skip[sw] (per window but the longest)
 *                              |    |
 *   pools[cls] (ring_pool.ts): [ ... | block blk: entry 0 | entry 1 | ... | ... ]
 *                                      entry = t, value of column 0, column 1, ...
 *   per slot:                  rec -> bucket record r (only busy entities: 0 = none)
 *   per record r:              bk[r * members + i]: member i's buckets or null,
 *                              recBusy[r] (members holding buckets), recNext[r]
 *
 * The bucket records are fields of this class, not an object of their own: behind
 * one more object they cost the replay of a 1.2M-push WAL ~11% more CPU
 * (bench/replay_cpu.ts, same run), since every push and fold reads them.
 *
 * Windows: the ring keeps an entry until the longest window (`windowMs`) has
 * left it. A shorter window w sees the entries from skip[slot * sw + w] on: the
 * oldest skip entries are ones it has expired (its members folded them as their
 * own ring would have) and that only longer windows still read. So member m
 * sees exactly the ring a group of its window alone would hold: that ring is
 * the suffix of this one from its window's skip count (a push expires the shorter windows
 * first, so an entry the longest window drops has left every shorter one; an
 * entry evicted from a full ring goes into the buckets of the members whose
 * window still holds it, exactly when their own full ring would have evicted
 * it). One ring per entity instead of one per window: UserTxn's 1h, 24h, 7d
 * and 5m features hold each event once, and a push reads one ring's per-slot
 * state and block instead of four (bench/DECISIONS.md).
 *
 * A cell holds a number as itself; any other value is NaN-boxed (high word a tag,
 * low word the interned id of a string or boolean, intern.ts), so every value
 * comes back exactly as pushed, null and absent included.
 *
 * Hashed fields (ring_member.ts): a field that only n_unique members read holds
 * each value's hash in its cells instead of the value.
 *
 * Deferred evictions: a full ring whose every window still holds its oldest
 * entry (no skip count, the usual state of a hot entity) does not fold that entry
 * into ~20 members' buckets at each push. It moves to RING_CLASS_PENDING, where
 * up to PENDING_MAX evicted entries stay in the block just before `head`
 * (pend[slot] of them), out of the ring, and folds them later, member by member:
 * one member's buckets and sketch stay in cache across the entries, where folding
 * each entry into every member touched every member's sketch at every push
 * (bench/DECISIONS.md "Deferred evictions"). Each member folds the same entries in
 * the same order as at eviction, so its buckets come out the same. The entries
 * are folded (#settle) before anything reads buckets or adds to them: a read,
 * emptyAt, a save or export, a ring entry that joins a shorter window's buckets or
 * leaves the longest window. A member change need not wait: the members that stay
 * keep their buckets and fold the entries later with the same config (keepMembers,
 * takeCfg), as if they had folded them before. Dropping gone buckets
 * (#expireBuckets) does not wait for them: a bucket they make after its window
 * has left it is dropped by a later walk, and no read sees it (reads skip
 * buckets their window has left).
 *
 * Compared with one ring per feature, a ring holds every event that reached the
 * group, also those a feature does not accept (a sum skips an event without a
 * number): an entity then leaves the exact regime after RING_ENTRIES_MAX events of
 * the table in a window rather than of the feature. The bound is the same
 * (docs/ops.md "Windows").
 */
import { strict as assert } from 'node:assert';
import type { JsonValue, Row, Value } from '../../types';
import {
  FOLDS, foldValue, Input, numBucketsGoneAt, numExpireBuckets, numFoldBuckets, numFoldCell, numJoinCell, numLoadBuckets, numResult,
  numOldestEnd, numSaveBuckets, resetFold, type NumBuckets, type NumWindowCfg,
} from '../../ops/num_window';
import {
  valBucketsGoneAt, valExpireBuckets, valFoldAt, valJoinAt, valKeepScratch, valLoadBuckets, valMergeBuckets, valOldestEnd, valSaveBuckets, valScratch,
  type ValBuckets, type ValWindowCfg,
} from '../../ops/val_window';
import { RING_ENTRIES_MAX, RING_GROUP_RECORDS_MIN } from '../../limits';
import { InternTable, type Interned } from '../state/intern';
import { decodeCell, encodeCell, HI_ID, isNullCell, releaseCell } from './cells';
import { ClassPool, RING_CLASS_MAX, RING_CLASS_PENDING } from './ring_pool';
import { hashOrNull, readHashes, RingMember } from './ring_member';
import { classFor, skipsOf, type GroupSave } from './ring_save';
import { grown } from '../../util/unaccounted';
import type { SharedWindow } from '../../ops/factory';

assert(1 << RING_CLASS_MAX === RING_ENTRIES_MAX, 'the largest ring class holds RING_ENTRIES_MAX entries');

/** Evicted entries a full ring holds back before folding them (the room RING_CLASS_PENDING adds). */
const PENDING_MAX = (1 << RING_CLASS_PENDING) - RING_ENTRIES_MAX;

type Buckets = NumBuckets | ValBuckets<unknown>;

/** RingGroup#numCell: the member takes the event with the value 1 / does not take it. */
const CELL_ONE = -1;
const CELL_SKIP = -2;

/** #foldEntry's `win` for an entry evicted from a full ring (not expiring from one window). */
const EVICT = -1;

export class RingGroup {
  readonly stride: number;
  /** The ring's retention: the longest of `windows`. */
  readonly windowMs: number;
  /** Windows with a skip count: all but the longest, whose count is always 0 (it drops the entries). */
  readonly sw: number;
  /**
   * Per slot, per window w < sw, at slot * sw + w: how many of the ring's oldest
   * entries that window has expired (at most the ring's length). A slot's counts
   * share a cache line: a push reads them all.
   */
  skip: Uint8Array;
  readonly pools: ClassPool[] = [];
  cls: Uint8Array;
  blk: Int32Array;
  head: Uint8Array;
  len: Uint8Array;
  /**
   * Per slot: 1 + its bucket record when any member holds buckets for it, else 0
   * (the ring is all there is). A record is one row of `members.length` bucket
   * lists, so a push to a hot entity finds every member's buckets with one typed
   * array read instead of a Map lookup per member.
   */
  rec: Int32Array;
  /** Per slot: evicted entries not yet folded into buckets (deferred evictions, above), just before `head`. */
  pend: Uint8Array;
  /**
   * Per slot: the earliest push time at which #expire's ring walk can move an
   * entry (some window's entry at its skip count, or the oldest for the longest
   * window, reaching its cutoff); a push before it skips the walk, whose reads of
   * the ring's oldest entries were most of a push's expiry cost. Only ever at or
   * below the true time: the walk sets it exactly, a push or an eviction can
   * only lower it, and a slot without a ring (cls 0) holds no due time: its
   * first block sets -Infinity (walk), as do a load or import into it and a
   * clear. So a growth leaves the new slots' times unwritten (filling them with
   * -Infinity was most of a doubling's cost at 1M entities).
   */
  #due: Float64Array;
  /** Per field: 1 when its cells hold hashValue of the value (a hashed field, above). */
  readonly hashed: Uint8Array;
  /** Per field: its position in the table's columns (TableColumns.colIds), -1 when it has none. */
  colOf: Int32Array;
  /** Bucket records: member i's buckets for record r at r * members.length + i (null: none). */
  #bk: Array<Buckets | null> = [];
  /** Per record: members holding buckets (the record is freed at 0). */
  #recBusy = new Uint16Array(RING_GROUP_RECORDS_MIN);
  /**
   * Per record: the earliest time any member's oldest bucket stops counting, so a
   * push whose cutoff is below it skips the per-member expiry walk. -Infinity: not
   * known, walk. Only ever at or below the true earliest end (a new bucket list or
   * a load resets it), so skipping never keeps a bucket that should go.
   */
  #recNext = new Float64Array(RING_GROUP_RECORDS_MIN);
  /** #settle: the offsets of the slot's deferred entries, oldest first (computed once, read per member). */
  readonly #pendAt = new Int32Array(PENDING_MAX);
  #recFree: number[] = [];
  #recUsed = 0;
  /** The values of an entry leaving the ring by column (each decoded once for all its members), then its t. */
  readonly #cells: Array<Value | undefined>;
  /** Per column: 1 when a value member reads it (#decodeEntry decodes only those: numeric members read cells in place). */
  #valCol: Uint8Array;
  /** A value member's add uses t (WindowAgg.timeless): #decodeEntry boxes the entry's t for it. */
  #valTimed = false;

  constructor(
    /** The members' windows (ms), ascending, each once: the last is the ring's retention. */
    readonly windows: readonly number[],
    /** The `where` of the group's one feature; null for a shared group. */
    readonly where: ((row: Row) => boolean) | null,
    readonly fields: readonly string[],
    readonly interns: readonly InternTable[],
    public members: RingMember[],
    capacity: number,
    /** The fields whose cells hold hashes (hashedFieldsOf for a new group, the layout's for a restored one). */
    hashedFields: readonly string[] = [],
  ) {
    assert(fields.length === interns.length);
    this.hashed = Uint8Array.from(fields, (f) => (hashedFields.includes(f) ? 1 : 0));
    assert(windows.length >= 1 && windows.every((w, i) => i === 0 || w > windows[i - 1]), 'group windows ascend');
    assert(where === null || windows.length === 1, 'a group with `where` has one feature');
    this.windowMs = windows[windows.length - 1];
    this.sw = windows.length - 1;
    this.skip = new Uint8Array(capacity * this.sw);
    this.stride = 1 + fields.length;
    for (let c = 0; c <= RING_CLASS_PENDING; c++) this.pools.push(c === 0 ? (null as unknown as ClassPool) : new ClassPool(c, this.stride));
    this.cls = new Uint8Array(capacity);
    this.blk = new Int32Array(capacity);
    this.head = new Uint8Array(capacity);
    this.len = new Uint8Array(capacity);
    this.rec = new Int32Array(capacity);
    this.pend = new Uint8Array(capacity);
    this.#due = new Float64Array(capacity);
    this.colOf = new Int32Array(fields.length).fill(-1);
    this.#cells = new Array<Value | undefined>(fields.length + 1).fill(undefined);
    this.#valCol = new Uint8Array(fields.length);
    this.#placeMembers();
  }

  /** After a change of members: their positions and the columns value members read. */
  #placeMembers(): void {
    this.#valCol.fill(0);
    this.#valTimed = false;
    this.members.forEach((m, i) => {
      m.at = i;
      this.#adoptCfg(m);
      const cfg = m.num !== null ? m.num : (m.val as ValWindowCfg<unknown>);
      m.win = this.windows.indexOf(cfg.windowMs);
      assert(m.win >= 0, 'a member of a group without its window');
      if (m.val === null) return;
      if (m.col >= 0) this.#valCol[m.col] = 1;
      if (m.val.agg.timeless !== true) this.#valTimed = true;
    });
  }

  /**
   * Member m reads its feature's config `sh` from now on (a registry change's plan:
   * TableColumns.rebind, carry), through DistinctHashAgg when its field is hashed.
   */
  takeCfg(m: RingMember, sh: SharedWindow): void {
    if (m.num !== null) m.num = sh.num!;
    else m.val = sh.val!;
    this.#adoptCfg(m);
  }

  /** A member of a hashed field reads hashes: its config takes DistinctHashAgg. */
  #adoptCfg(m: RingMember): void {
    if (m.col >= 0 && this.hashed[m.col] === 1) readHashes(m);
  }

  /** Drops member `at` and its buckets (the feature leaves the group). */
  removeMember(at: number): void {
    this.keepMembers(this.members.filter((_, i) => i !== at));
  }

  /** The group keeps only `kept` (a subsequence of its members) and their buckets. */
  keepMembers(kept: RingMember[]): void {
    const old = this.members;
    const from = kept.map((m) => old.indexOf(m));
    assert(from.every((i, k) => i >= 0 && (k === 0 || i > from[k - 1])), 'kept members are a subsequence');
    const m0 = old.length;
    const m1 = kept.length;
    const bk: Array<Buckets | null> = new Array<Buckets | null>(this.#recUsed * m1).fill(null);
    for (let r = 0; r < this.#recUsed; r++) {
      let n = 0;
      for (let k = 0; k < m1; k++) {
        const b = this.#bk[r * m0 + from[k]];
        bk[r * m1 + k] = b;
        if (b !== null) n++;
      }
      this.#recBusy[r] = n;
    }
    this.#bk = bk;
    this.members = kept;
    this.#placeMembers();
    // Records left without buckets go back (their slots hold none any more).
    for (let slot = 0; slot < this.rec.length; slot++) {
      const r = this.rec[slot] - 1;
      if (r < 0) continue;
      this.#recNext[r] = -Infinity;
      if (this.#recBusy[r] === 0) this.#freeRec(slot, r);
    }
  }

  /** A bucket record for the slot (it had none). */
  #newRec(slot: number): number {
    let r: number;
    if (this.#recFree.length > 0) r = this.#recFree.pop() as number;
    else {
      r = this.#recUsed++;
      if (r === this.#recBusy.length) {
        this.#recBusy = grown(this.#recBusy, r * 2);
        this.#recNext = grown(this.#recNext, r * 2);
      }
      const m = this.members.length;
      for (let i = 0; i < m; i++) this.#bk.push(null);
    }
    this.#recBusy[r] = 0;
    this.#recNext[r] = -Infinity;
    this.rec[slot] = r + 1;
    return r;
  }

  /** Frees record `r` of the slot (its member entries must be null). */
  #freeRec(slot: number, r: number): void {
    this.rec[slot] = 0;
    this.#recFree.push(r);
  }

  /** Grows the per-slot arrays with the entity index (entity_index.ts onGrow). */
  grow(capacity: number): void {
    this.cls = grown(this.cls, capacity);
    this.head = grown(this.head, capacity);
    this.len = grown(this.len, capacity);
    this.blk = grown(this.blk, capacity);
    this.rec = grown(this.rec, capacity);
    this.pend = grown(this.pend, capacity);
    this.#due = grown(this.#due, capacity);
    if (this.sw > 0) this.skip = grown(this.skip, capacity * this.sw);
  }

  /**
   * Appends one event (that passed `where`) to the slot's ring. `ids` (by table
   * column, -1 for none) gives the interned id of a field's value when the caller
   * holds a reference to it: the cell takes one more without a lookup.
   */
  push(slot: number, row: Row, t: number, ids: Int32Array, hashes: Float64Array): void {
    this.#expire(slot, t);
    const len = this.len[slot];
    const due = this.#due;
    const w0 = this.windows[0];
    if (len === RING_ENTRIES_MAX) {
      this.#evict(slot);
      // A window whose skip count was 0 now starts at the next entry, maybe older (a late event).
      const next = this.pools[this.cls[slot]].data[this.#entry(slot, 0)] + w0;
      if (next < due[slot]) due[slot] = next;
    } else if (len === (this.cls[slot] === 0 ? 0 : 1 << this.cls[slot])) this.#moveUp(slot);
    const cls = this.cls[slot];
    const cap = 1 << cls;
    const pool = this.pools[cls];
    const at = this.blk[slot] * pool.blockDoubles + ((this.head[slot] + this.len[slot]) & (cap - 1)) * this.stride;
    pool.data[at] = t;
    // The new entry is the next to expire of every window that had none left.
    if (t + w0 < due[slot]) due[slot] = t + w0;
    const fields = this.fields;
    const colOf = this.colOf;
    for (let c = 0; c < fields.length; c++) {
      const j = colOf[c];
      if (this.hashed[c] === 1) {
        // Copied array to array (no heap number): the hash push_apply.ts made from the record's bytes.
        if (j >= 0 && hashes[j] === hashes[j]) pool.data[at + 1 + c] = hashes[j];
        else this.#encode(pool, at + 1 + c, c, hashOrNull(j >= 0 && ids[j] >= 0 ? this.interns[c].value(ids[j]) : row[fields[c]]));
        continue;
      }
      const id = j < 0 ? -1 : ids[j];
      if (id < 0) this.#encode(pool, at + 1 + c, c, row[fields[c]]);
      else {
        const w = 2 * (at + 1 + c);
        pool.u32[w] = id;
        pool.u32[w + 1] = HI_ID;
        this.interns[c].refId(id);
      }
    }
    this.len[slot]++;
  }

  #encode(pool: ClassPool, i: number, c: number, v: Value | undefined): void {
    encodeCell(pool.data, pool.u32, i, this.interns[c], v);
  }

  /** The value of cell `i` of a pool (column c). */
  #decode(pool: ClassPool, i: number, c: number): Value | undefined {
    return decodeCell(pool.data, pool.u32, i, this.interns[c]);
  }

  /** Releases the intern references of the entry at `at`. */
  #release(pool: ClassPool, at: number): void {
    for (let c = 0; c < this.fields.length; c++) releaseCell(pool.u32, at + 1 + c, this.interns[c]);
  }

  /** Offset of the k-th oldest entry of the slot (its class pool is pools[cls[slot]]). */
  #entry(slot: number, k: number): number {
    const cls = this.cls[slot];
    return this.blk[slot] * this.pools[cls].blockDoubles + ((this.head[slot] + k) & ((1 << cls) - 1)) * this.stride;
  }

  /** Moves the slot's full ring to the next size class, oldest entry first. */
  #moveUp(slot: number): void {
    const cls = this.cls[slot];
    const to = this.pools[cls + 1];
    const nb = to.alloc();
    const len = this.len[slot];
    assert(cls === 0 ? len === 0 : len === 1 << cls, 'a ring moves up when full');
    // A slot's first block: no due time yet, its first walk sets one.
    if (cls === 0) this.#due[slot] = -Infinity;
    if (cls > 0) {
      // The ring is full (push moves it up only then): its block holds the entries
      // from head to the block's end, then from its start; two runs of words.
      const from = this.pools[cls];
      const fu = from.u32;
      const tu = to.u32;
      const base = this.blk[slot] * from.blockDoubles * 2;
      const end = base + len * this.stride * 2;
      const split = base + this.head[slot] * this.stride * 2;
      let d = nb * to.blockDoubles * 2;
      for (let j = split; j < end; j++) tu[d++] = fu[j];
      for (let j = base; j < split; j++) tu[d++] = fu[j];
      from.release(this.blk[slot]);
    }
    this.cls[slot] = cls + 1;
    this.blk[slot] = nb;
    this.head[slot] = 0;
  }

  /**
   * Expires what the push at `t` leaves behind, window by window, shortest first:
   * a shorter window moves its skip count past the entries it has left, the
   * longest drops them (each has left every shorter window by then). Members of
   * the window fold each such entry as num_window.ts expireRing does.
   */
  #expire(slot: number, t: number): void {
    const cls = this.cls[slot];
    if (cls !== 0 && t >= this.#due[slot]) {
      const pool = this.pools[cls];
      const last = this.sw;
      const sk = this.skip;
      const s0 = slot * last;
      // When the walk can move an entry next: the earliest end among the entries it stops at.
      let due = Infinity;
      for (let w = 0; w < last; w++) {
        let k = sk[s0 + w];
        const len = this.len[slot];
        if (k === len) continue;
        const cutoff = t - this.windows[w];
        for (; k < len; k++) {
          const at = this.#entry(slot, k);
          if (pool.data[at] > cutoff) {
            if (pool.data[at] + this.windows[w] < due) due = pool.data[at] + this.windows[w];
            break;
          }
          // It joins its window's newest buckets: the deferred evictions, older, go in first.
          this.#settle(slot);
          if (this.rec[slot] !== 0) this.#foldEntry(slot, pool, at, w);
        }
        sk[s0 + w] = k;
      }
      const cutoff = t - this.windowMs;
      const mask = (1 << cls) - 1;
      while (this.len[slot] > 0) {
        const at = this.#entry(slot, 0);
        if (pool.data[at] > cutoff) {
          if (pool.data[at] + this.windowMs < due) due = pool.data[at] + this.windowMs;
          break;
        }
        this.#settle(slot);
        if (this.rec[slot] !== 0) this.#foldEntry(slot, pool, at, last);
        this.#release(pool, at);
        this.head[slot] = (this.head[slot] + 1) & mask;
        this.len[slot]--;
        // Every shorter window expired this entry above (its cutoff is later): one fewer to skip.
        for (let w = 0; w < last; w++) sk[s0 + w]--;
      }
      this.#due[slot] = due;
    }
    const r = this.rec[slot] - 1;
    // Not settled first: the deferred entries only add buckets, which a later walk drops when gone (header).
    if (r >= 0 && this.#recNext[r] <= t) this.#expireBuckets(slot, r, t);
    // (No deferred evictions either: the drop loop above folded them before the first entry left.)
    if (this.len[slot] === 0 && this.rec[slot] === 0) this.#freeRing(slot);
  }

  /** Decodes the entry at `at` into #cells (for value members): its value per column, then its t. */
  #decodeEntry(pool: ClassPool, at: number): Array<Value | undefined> {
    const cells = this.#cells;
    const n = this.fields.length;
    for (let c = 0; c < n; c++) if (this.#valCol[c] === 1) cells[c] = this.#decode(pool, at + 1 + c, c);
    if (this.#valTimed) cells[n] = pool.data[at];
    return cells;
  }

  /**
   * Folds the entry at `at` into the members' buckets: evicted (`win` EVICT: each
   * member whose window still holds it and takes it folds it, opening buckets as
   * needed) or expiring from window `win` (it joins the newest bucket of each of
   * that window's members only when of the same epoch, as num_window.ts
   * expireRing does). Numeric members read its cells in place, value members its
   * values decoded once (#decodeEntry).
   */
  #foldEntry(slot: number, pool: ClassPool, at: number, win: number): void {
    let cells: Array<Value | undefined> | null = null;
    const members = this.members;
    const join = win !== EVICT;
    const last = this.sw;
    let r = this.rec[slot] - 1;
    for (let i = 0; i < members.length; i++) {
      const m = members[i];
      // Evicting the oldest entry: a shorter window that expired it already has it in its buckets or gone.
      if (join ? m.win !== win : m.win !== last && this.skip[slot * last + m.win] !== 0) continue;
      const had = r < 0 ? null : this.#bk[r * members.length + i];
      if (join && had === null) continue;
      let b: Buckets | null = had;
      if (m.num !== null) {
        const vi = this.#numCell(m.num, m.col, pool, at);
        if (vi === CELL_SKIP) continue;
        if (join) numJoinCell(had as NumBuckets, m.num, pool.data, at, vi);
        else b = numFoldCell(had as NumBuckets | null, m.num, pool.data, at, vi);
      } else {
        if (cells === null) cells = this.#decodeEntry(pool, at);
        const x = m.col < 0 ? undefined : cells[m.col];
        const val = m.val as ValWindowCfg<unknown>;
        if (!val.agg.accepts(x)) continue;
        // t for add: 0 when the agg ignores it, else read back from the array (one heap
        // number for every such member's call); the bucket epoch comes from the cell.
        const t = val.agg.timeless === true ? 0 : (cells[cells.length - 1] as number);
        if (join) valJoinAt(had as ValBuckets<unknown>, val, x === undefined ? 0 : x, pool.data, at, t, 0);
        else b = valFoldAt(had as ValBuckets<unknown> | null, val, x === undefined ? 0 : x, pool.data, at, t, 0);
      }
      if (b !== had) r = this.#storeBuckets(slot, r, i, had, b);
    }
  }

  /**
   * Member i's buckets became `b` (they were `had`): stores them in the slot's
   * record `r`, made when the slot has none (-1). Returns the record.
   */
  #storeBuckets(slot: number, r: number, i: number, had: Buckets | null, b: Buckets | null): number {
    if (r < 0) r = this.#newRec(slot);
    this.#bk[r * this.members.length + i] = b;
    if (had === null) {
      this.#recBusy[r]++;
      this.#recNext[r] = -Infinity; // a new oldest bucket: the next expiry walks
    }
    return r;
  }

  /**
   * Where numeric member `c` (reading column `col`) finds the value of the entry
   * at `at`: the index of its cell in the pool, CELL_ONE (it counts the event as 1)
   * or CELL_SKIP (it does not take the event), as num_window.ts update decides.
   * Passed on as an index, the value is never boxed (numFoldCell).
   */
  #numCell(c: NumWindowCfg, col: number, pool: ClassPool, at: number): number {
    if (c.input === Input.Event) return CELL_ONE;
    if (col < 0) return CELL_SKIP;
    const i = at + 1 + col;
    // A NaN-boxed cell (not a number) reads as NaN.
    if (c.input === Input.Number) return Number.isFinite(pool.data[i]) ? i : CELL_SKIP;
    return isNullCell(pool.data, pool.u32, i) ? CELL_SKIP : CELL_ONE;
  }

  /** Drops the buckets every member's window has left by `t`; #recNext[r] becomes the next time one leaves. */
  #expireBuckets(slot: number, r: number, t: number): void {
    let next = Infinity;
    const members = this.members;
    const base = r * members.length;
    for (let i = 0; i < members.length; i++) {
      const b = this.#bk[base + i];
      if (b === null) continue;
      const m = members[i];
      const w = this.windows[m.win];
      const cutoff = t - w;
      const left = m.num !== null ? numExpireBuckets(b as NumBuckets, m.num, cutoff) : valExpireBuckets(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>, cutoff);
      if (left === null) {
        this.#bk[base + i] = null;
        this.#recBusy[r]--;
        continue;
      }
      const end = w + (m.num !== null ? numOldestEnd(left as NumBuckets, m.num) : valOldestEnd(left as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>));
      if (end < next) next = end;
    }
    if (this.#recBusy[r] > 0) this.#recNext[r] = next;
    else this.#freeRec(slot, r);
  }

  /**
   * The ring holds RING_ENTRIES_MAX live events: its oldest leaves it for the
   * buckets of the members whose window holds it. Deferred (above) when that is
   * every member; else folded now. None are deferred then: the skip loop of
   * #expire folded them when a skip count left 0, and none are deferred after.
   */
  #evict(slot: number): void {
    const s0 = slot * this.sw;
    for (let w = 0; w < this.sw; w++) {
      if (this.skip[s0 + w] !== 0) {
        this.#evictOldest(slot);
        return;
      }
    }
    if (this.cls[slot] === RING_CLASS_MAX) this.#moveUp(slot);
    else if (this.pend[slot] === PENDING_MAX) this.#settle(slot);
    this.pend[slot]++;
    this.head[slot] = (this.head[slot] + 1) & ((1 << RING_CLASS_PENDING) - 1);
    this.len[slot]--;
  }

  /** #evict now: the oldest goes into each accepting member's bucket. */
  #evictOldest(slot: number): void {
    const pool = this.pools[this.cls[slot]];
    const at = this.#entry(slot, 0);
    this.#foldEntry(slot, pool, at, EVICT);
    this.#release(pool, at);
    this.head[slot] = (this.head[slot] + 1) & ((1 << this.cls[slot]) - 1);
    this.len[slot]--;
    for (let w = 0, i = slot * this.sw; w < this.sw; w++, i++) if (this.skip[i] > 0) this.skip[i]--;
  }

  /**
   * Folds the slot's deferred evictions into the members' buckets, oldest first,
   * member by member, and gives back their cells' references: the buckets are
   * then what folding each at its eviction made (#foldEntry EVICT, every member
   * taking it: no window had expired it).
   */
  #settle(slot: number): void {
    const n = this.pend[slot];
    if (n === 0) return;
    const pool = this.pools[this.cls[slot]];
    // They sit just before head: entries -n..-1.
    const ats = this.#pendAt;
    for (let k = 0; k < n; k++) ats[k] = this.#entry(slot, k - n);
    const members = this.members;
    let r = this.rec[slot] - 1;
    for (let i = 0; i < members.length; i++) {
      const m = members[i];
      const had = r < 0 ? null : this.#bk[r * members.length + i];
      let b: Buckets | null = had;
      if (m.num !== null) {
        for (let k = 0; k < n; k++) {
          const vi = this.#numCell(m.num, m.col, pool, ats[k]);
          if (vi !== CELL_SKIP) b = numFoldCell(b as NumBuckets | null, m.num, pool.data, ats[k], vi);
        }
      } else {
        const val = m.val as ValWindowCfg<unknown>;
        const timed = val.agg.timeless !== true;
        for (let k = 0; k < n; k++) {
          const at = ats[k];
          const x = m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col);
          if (!val.agg.accepts(x)) continue;
          b = valFoldAt(b as ValBuckets<unknown> | null, val, x === undefined ? 0 : x, pool.data, at, timed ? pool.data[at] : 0, 0);
        }
      }
      if (b !== had) r = this.#storeBuckets(slot, r, i, had, b);
    }
    for (let k = 0; k < n; k++) this.#release(pool, ats[k]);
    this.pend[slot] = 0;
  }

  #freeRing(slot: number): void {
    const cls = this.cls[slot];
    if (cls === 0) return;
    this.pools[cls].release(this.blk[slot]);
    this.cls[slot] = 0;
    this.blk[slot] = 0;
    this.head[slot] = 0;
  }

  /**
   * Gives back the intern references of the slot's ring cells and nothing else:
   * the group is being dropped (dropped_cells.ts), so its blocks, records
   * and free lists go with it.
   */
  releaseRefs(slot: number): void {
    const cls = this.cls[slot];
    if (cls === 0) return;
    const pool = this.pools[cls];
    // From the deferred evictions (before head) on.
    for (let k = -this.pend[slot]; k < this.len[slot]; k++) this.#release(pool, this.#entry(slot, k));
  }

  /** Empties the slot (the entity leaves: frozen, dropped, or its slot is reused). */
  clear(slot: number): void {
    // The slot's next entity may be loaded with older entries (a thaw): its first push walks.
    this.#due[slot] = -Infinity;
    if (this.cls[slot] > 0) {
      this.releaseRefs(slot);
      this.len[slot] = 0;
      this.pend[slot] = 0;
      this.skip.fill(0, slot * this.sw, slot * this.sw + this.sw);
      this.#freeRing(slot);
    }
    const r = this.rec[slot] - 1;
    if (r >= 0) {
      const m = this.members.length;
      for (let i = 0; i < m; i++) this.#bk[r * m + i] = null;
      this.#freeRec(slot, r);
    }
  }

  /**
   * From time `t` on, the slot reads and updates like an empty one: every ring
   * entry and every bucket of every member has left the window (OpState.emptyAt).
   */
  emptyAt(slot: number, t: number): boolean {
    // Deferred evictions count as the buckets they fold into: a push after t reads a
    // bucket that ends after the cutoff, also when its entries are at or before it.
    this.#settle(slot);
    // Any entry, not only the newest (after a late event an older arrival is the latest),
    // against the longest window's cutoff, the earliest.
    const len = this.len[slot];
    if (len > 0) {
      const data = this.pools[this.cls[slot]].data;
      const cutoff = t - this.windowMs;
      for (let k = 0; k < len; k++) if (data[this.#entry(slot, k)] > cutoff) return false;
    }
    const r = this.rec[slot] - 1;
    if (r < 0) return true;
    const members = this.members;
    for (let i = 0; i < members.length; i++) {
      const b = this.#bk[r * members.length + i];
      if (b === null) continue;
      const m = members[i];
      const cutoff = t - this.windows[m.win];
      if (m.num !== null ? !numBucketsGoneAt(b as NumBuckets, m.num, cutoff) : !valBucketsGoneAt(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>, cutoff)) return false;
    }
    return true;
  }

  /** The value of member `m` for the slot at query time `now`. */
  read(m: RingMember, slot: number, now: number): JsonValue {
    this.#settle(slot);
    const cutoff = now - this.windows[m.win];
    const cls = this.cls[slot];
    const len = this.len[slot];
    const pool = this.pools[cls];
    // The member's own ring: the entries its window has not expired.
    const from = m.win === this.sw ? 0 : this.skip[slot * this.sw + m.win];
    let k = from;
    while (k < len && pool.data[this.#entry(slot, k)] <= cutoff) k++;
    // Buckets only hold events older than every entry of the member's ring: when
    // that ring's oldest has left the window, so has every bucketed event.
    const b = k === from && len > from ? this.#bucketsOf(m, slot) : null;
    if (m.num !== null) {
      const c = m.num;
      const f = FOLDS[c.kind];
      resetFold(f);
      if (b !== null) numFoldBuckets(b as NumBuckets, c, cutoff, f);
      for (; k < len; k++) {
        const vi = this.#numCell(c, m.col, pool, this.#entry(slot, k));
        if (vi !== CELL_SKIP) foldValue(f, c.kind, vi === CELL_ONE ? 1 : pool.data[vi]);
      }
      return numResult(c, f);
    }
    const c = m.val as ValWindowCfg<unknown>;
    const scratch = valScratch(c);
    let acc = scratch;
    if (b !== null) acc = valMergeBuckets(b as ValBuckets<unknown>, c, cutoff, acc);
    for (; k < len; k++) {
      const at = this.#entry(slot, k);
      const x = m.col < 0 ? undefined : this.#decode(pool, at + 1 + m.col, m.col);
      if (c.agg.accepts(x)) acc = c.agg.add(acc, x === undefined ? 0 : x, c.agg.timeless === true ? 0 : pool.data[at], 0);
    }
    valKeepScratch(c, acc, scratch);
    return c.agg.result(acc);
  }

  /**
   * The slot as plain data (cold freeze, per-entity snapshots, partition export):
   * [entries oldest first as t, values..., per member its saved buckets or null].
   */
  save(slot: number): GroupSave {
    this.#settle(slot);
    const ring: Array<Value | undefined> = [];
    const len = this.len[slot];
    if (len > 0) {
      const pool = this.pools[this.cls[slot]];
      for (let k = 0; k < len; k++) {
        const at = this.#entry(slot, k);
        ring.push(pool.data[at]);
        for (let c = 0; c < this.fields.length; c++) ring.push(this.#decode(pool, at + 1 + c, c));
      }
    }
    const out: GroupSave = [ring, this.#saveBuckets(slot)];
    if (this.sw > 0) out.push(Array.from(this.skip.subarray(slot * this.sw, slot * this.sw + this.sw)));
    return out;
  }

  /** Member m's buckets for the slot, or null. */
  #bucketsOf(m: RingMember, slot: number): Buckets | null {
    const r = this.rec[slot] - 1;
    return r < 0 ? null : this.#bk[r * this.members.length + m.at];
  }

  #saveBuckets(slot: number): unknown[] {
    return this.members.map((m) => {
      const b = this.#bucketsOf(m, slot);
      if (b === null) return null;
      return m.num !== null ? numSaveBuckets(b as NumBuckets, m.num) : valSaveBuckets(b as ValBuckets<unknown>, m.val as ValWindowCfg<unknown>);
    });
  }

  /** Inverse of save, into an empty slot. */
  load(slot: number, saved: GroupSave): void {
    assert(this.cls[slot] === 0 && this.rec[slot] === 0, 'ring load into a slot in use');
    this.#due[slot] = -Infinity;
    const [ring, buckets] = saved;
    const skips = skipsOf(saved);
    const len = ring.length / this.stride;
    assert(Number.isInteger(len) && len <= RING_ENTRIES_MAX, 'saved ring does not fit the group');
    this.#setSkips(slot, skips, 0, len);
    if (len > 0) {
      const cls = classFor(len);
      const pool = this.pools[cls];
      this.blk[slot] = pool.alloc();
      this.cls[slot] = cls;
      this.head[slot] = 0;
      for (let k = 0; k < len; k++) {
        const at = this.blk[slot] * pool.blockDoubles + k * this.stride;
        pool.data[at] = ring[k * this.stride] as number;
        for (let c = 0; c < this.fields.length; c++) this.#encode(pool, at + 1 + c, c, ring[k * this.stride + 1 + c]);
      }
      this.len[slot] = len;
    }
    this.#loadBuckets(slot, buckets);
  }

  /**
   * A slot's skip counts from `src` at `at` (a save's, or a slab chunk's bytes;
   * undefined: none saved, a layout of one window per group), each within the
   * ring's `len` entries.
   */
  #setSkips(slot: number, src: ArrayLike<number> | undefined, at: number, len: number): void {
    for (let w = 0; w < this.sw; w++) {
      const k = src === undefined ? 0 : src[at + w];
      assert(Number.isInteger(k) && k >= 0 && k <= len, 'saved skip count does not fit the ring');
      this.skip[slot * this.sw + w] = k;
    }
  }

  /** The slot's skip counts (slab export): one byte per window but the longest, at `at` of `out`. */
  exportSkips(slot: number, out: Uint8Array, at: number): void {
    for (let w = 0; w < this.sw; w++) out[at + w] = this.skip[slot * this.sw + w];
  }

  /** Inverse of exportSkips, after importSlot (the ring's length bounds each count). */
  importSkips(slot: number, src: Uint8Array, at: number): void {
    this.#setSkips(slot, src, at, this.len[slot]);
  }

  #loadBuckets(slot: number, buckets: unknown[]): void {
    const members = this.members;
    let r = this.rec[slot] - 1;
    for (let i = 0; i < members.length; i++) {
      const m = members[i];
      const sb = buckets[i];
      if (sb === null || sb === undefined) continue;
      const b = m.num !== null
        ? numLoadBuckets(sb as number[], m.num)
        : valLoadBuckets((sb as [number[], unknown[]])[0], (sb as [number[], unknown[]])[1], m.val as ValWindowCfg<unknown>);
      if (b === null) continue;
      if (r < 0) r = this.#newRec(slot);
      assert(this.#bk[r * members.length + i] === null, 'bucket load over buckets');
      this.#bk[r * members.length + i] = b;
      this.#recBusy[r]++;
      this.#recNext[r] = -Infinity;
    }
  }

  /**
   * Slab export (snapshots, slab_chunk.ts): copies the slot's entries, oldest
   * first, as raw cells into `out` (a Uint32Array view) from double offset `at`,
   * and records every interned id they hold with its value in `ids` (per column),
   * since ids are only meaningful with this table's intern tables. Returns the
   * number of entries (deferred evictions are not among them: saveBuckets folds
   * them into the buckets it saves).
   */
  exportSlot(slot: number, out: Uint32Array, at: number, ids: Array<Map<number, Interned>>): number {
    const len = this.len[slot];
    if (len === 0) return 0;
    const pool = this.pools[this.cls[slot]];
    const w = this.stride * 2;
    const u = pool.u32;
    for (let k = 0; k < len; k++) {
      const src = this.#entry(slot, k) * 2;
      const dst = (at + k * this.stride) * 2;
      // Word by word: a subarray view per entry would cost more than the copy (entries are a few words).
      for (let j = 0; j < w; j++) out[dst + j] = u[src + j];
      for (let c = 0; c < this.fields.length; c++) {
        const i = dst + 2 * (1 + c);
        if (out[i + 1] === HI_ID && !ids[c].has(out[i])) ids[c].set(out[i], this.interns[c].value(out[i]));
      }
    }
    return len;
  }

  /** Inverse of exportSlot into an empty slot: ids are interned anew from `ids` (a reference per cell). */
  importSlot(slot: number, src: Uint32Array, at: number, len: number, ids: Array<Map<number, Interned>>): void {
    assert(this.cls[slot] === 0 && this.rec[slot] === 0, 'ring import into a slot in use');
    assert(len <= RING_ENTRIES_MAX);
    this.#due[slot] = -Infinity;
    if (len === 0) return;
    const cls = classFor(len);
    const pool = this.pools[cls];
    const blk = pool.alloc();
    this.cls[slot] = cls;
    this.blk[slot] = blk;
    this.head[slot] = 0;
    this.len[slot] = len;
    const base = blk * pool.blockDoubles * 2;
    const words = len * this.stride * 2;
    const u = pool.u32;
    const from = at * 2;
    for (let j = 0; j < words; j++) u[base + j] = src[from + j];
    for (let c = 0; c < this.fields.length; c++) {
      // A column whose cells hold no id in this chunk (numbers) needs no rewrite.
      if (ids[c].size === 0) continue;
      for (let k = 0; k < len; k++) {
        const i = base + 2 * (k * this.stride + 1 + c);
        if (u[i + 1] === HI_ID) u[i] = this.interns[c].ref(ids[c].get(u[i]) as Interned);
      }
    }
  }

  /** The slot's buckets per member (saved form), or null when it has none. */
  saveBuckets(slot: number): unknown[] | null {
    this.#settle(slot);
    return this.rec[slot] === 0 ? null : this.#saveBuckets(slot);
  }

  /** Loads saveBuckets' result into a slot without buckets (nor deferred evictions: it was just loaded). */
  loadBuckets(slot: number, saved: unknown[]): void {
    this.#loadBuckets(slot, saved);
  }
}


export type { Interned };
