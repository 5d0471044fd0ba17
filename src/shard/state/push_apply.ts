/**
 * Applies PUSH records (wal/push_record.ts) to a ShardState, live or replayed:
 * no JSON.parse, no chains, no key building or routing hash (the front did all
 * of that once), and no key string: the entity is found by the key's bytes in
 * the record (entity_index.ts). Each feed's values are decoded into one reused row object per
 * table (same columns, same order, so one hidden class per table) and applied
 * through ShardState.applyFeed, the seam shared with every other way a row
 * reaches an entity.
 */
import { strict as assert } from 'node:assert';
import { hashAscii53Into } from '../../ops/sketch/hash';
import { asciiString } from '../../util/ascii';
import type { ColumnSetter, CompiledRegistry } from '../../registry/compile';
import type { Row } from '../../types';
import { PushRecordReader, TAG_F64 } from '../../wal/push_record';
import type { DedupeLog } from './dedupe_log';
import type { InternTable } from './intern';
import type { ShardState } from './state';

export class PushApplier {
  readonly #reader = new PushRecordReader();
  /** By table index of #reg: the row object each feed's values are decoded into. */
  #rows: Row[] = [];
  #reg: CompiledRegistry | null = null;
  /**
   * The record's time, boxed once here: a field that is not always a number keeps
   * its value as one heap number, which every call below passes on as it is. From
   * the reader's number field each call with the time boxed it anew (a heap
   * number per feed).
   */
  #t: number | null = null;
  /**
   * The last f64 value decoded, as a heap number, and its 8 bytes (two words): an
   * event field that several feeds carry (the fraud workload's amount reaches all
   * four tables) is boxed once, not once per feed.
   */
  #num: number | null = null;
  #numLo = 0;
  #numHi = 0;

  constructor(readonly state: ShardState) {}

  /**
   * Applies the PUSH record whose type byte is at `buf[body]`, recording its dedupe
   * value in `dedupe` (null: not tracked). False when it was written under another
   * registry version than the installed one: nothing was applied.
   */
  apply(buf: Buffer, body: number, dedupe: DedupeLog | null): boolean {
    const state = this.state;
    const reg = state.registry;
    const rd = this.#reader;
    rd.open(buf, body);
    if (reg === null || rd.registryVersion !== reg.version) return false;
    if (reg !== this.#reg) this.#rowsFor(reg);
    const plan = reg.eventList[rd.eventIndex];
    if (state.refuseNew) this.#refuseIfNew(reg);
    this.#t = rd.timeMs;
    const t = this.#t;
    const lsn = rd.lsn;
    state.advance(t, lsn);
    const tables = state.tables;
    for (let f = rd.feedCount; f > 0; f--) {
      const ti = rd.u16();
      rd.strBytes();
      const keyTag = rd.strTag;
      const keyAt = rd.strAt;
      const keyLen = rd.strLen;
      const n = rd.u16();
      const tp = reg.tableList[ti];
      assert(n === tp.columns.length, 'a feed carries one value per column of its table');
      const set = (tp.columnSetter ??= columnSetter(tp.columns));
      const row = this.#rows[ti];
      const ts = tables[ti];
      // A column whose values cells hold: an ASCII value is found by its bytes (no
      // string made for a value the table holds already), and the row gets the
      // table's own string when something reads it from the row; each cell takes a
      // reference of its id at once (intern.ts).
      const interns = ts.cols.colInterns;
      const ids = ts.cols.colIds;
      const reads = ts.cols.rowReads();
      const hashed = ts.cols.colHashed;
      const hashes = ts.cols.colHash;
      for (let j = 0; j < n; j++) {
        const it = interns[j];
        if (hashed[j] === 1 && rd.asciiBytes()) {
          // Cells hold the value's hash (ring_group.ts hashed fields): made from the bytes, no lookup, no string.
          hashAscii53Into(buf, rd.strAt, rd.strAt + rd.strLen, hashes, j);
          set(row, j, reads[j] === 1 ? asciiString(buf, rd.strAt, rd.strAt + rd.strLen) : undefined);
        } else if (it !== null && rd.asciiBytes()) {
          // Held while the feed applies: a cell that expires meanwhile cannot free it under the ring cells that take it by id.
          const id = it.idOfAscii(buf, rd.strAt, rd.strAt + rd.strLen);
          it.refId(id);
          ids[j] = id;
          // The string only when something reads it from the row (TableColumns.rowReads): ring cells take the id.
          set(row, j, reads[j] === 1 ? it.lookedUp(id) : undefined);
        } else if (buf[rd.p] === TAG_F64) set(row, j, this.#f64(buf, rd.p + 1));
        else set(row, j, rd.value());
      }
      try {
        state.applyFeedBytes(ts, buf, keyAt, keyLen, keyTag, row, t, lsn);
      } finally {
        for (let j = 0; j < n; j++) {
          // NaN: every other path that applies a row (text records, replays) leaves the hash to the ring.
          hashes[j] = NaN;
          if (ids[j] < 0) continue;
          (interns[j] as InternTable).unref(ids[j]);
          ids[j] = -1;
        }
      }
    }
    if (dedupe !== null && rd.dedupe !== null && plan.dedupeField !== null) {
      dedupe.record(plan.name, plan.dedupeWindowMs, rd.dedupe, lsn, rd.registryVersion, t);
    }
    return true;
  }

  /** The f64 value whose bytes are at `at` (after its tag), reusing the last one's heap number when the bytes are the same. */
  #f64(buf: Buffer, at: number): number {
    const rd = this.#reader;
    rd.p = at + 8;
    const lo = buf[at] | (buf[at + 1] << 8) | (buf[at + 2] << 16) | (buf[at + 3] << 24);
    const hi = buf[at + 4] | (buf[at + 5] << 8) | (buf[at + 6] << 16) | (buf[at + 7] << 24);
    if (this.#num !== null && lo === this.#numLo && hi === this.#numHi) return this.#num;
    this.#numLo = lo;
    this.#numHi = hi;
    this.#num = buf.readDoubleLE(at);
    return this.#num;
  }

  /**
   * Over --memory-limit without disk: refuses the record (memory_limit_exceeded)
   * when any entity it reaches is new, before anything is applied. Reads the feeds
   * ahead and puts the reader back.
   */
  #refuseIfNew(reg: CompiledRegistry): void {
    const rd = this.#reader;
    const at = rd.p;
    for (let f = rd.feedCount; f > 0; f--) {
      const ti = rd.u16();
      const key = rd.str();
      for (let n = rd.u16(); n > 0; n--) rd.value();
      if (!this.state.tables[ti].holds(key)) this.state.refuseNewEntity();
    }
    rd.p = at;
    assert(reg === this.state.registry);
  }

  #rowsFor(reg: CompiledRegistry): void {
    this.#reg = reg;
    this.#rows = reg.tableList.map((tp) => {
      const row: Row = {};
      for (const c of tp.columns) row[c] = undefined;
      return row;
    });
  }
}

/**
 * One generated function per table: a property store per column with the name
 * inlined (V8 caches each one), where `row[columns[j]]` was one keyed store site
 * for every column of every table, i.e. megamorphic (front/routing.ts
 * columnWriter is the front's counterpart).
 */
function columnSetter(columns: readonly string[]): ColumnSetter {
  const cases = columns.map((c, j) => `case ${j}: r[${JSON.stringify(c)}] = v; return;`).join('\n');
  return new Function('r', 'j', 'v', `switch (j) {\n${cases}\n}`) as ColumnSetter;
}
