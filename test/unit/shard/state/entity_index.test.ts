/**
 * The entity index (shard/state/entity_index.ts): keys as bytes in an arena, an
 * open-addressing table over them. Collisions are forced by passing the same
 * hash for different keys (findBytes/addBytes take the hash from the caller);
 * a random run is checked against a Map as the model.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EntityIndex, keyHash } from '../../../../src/shard/state/entity_index';
import { PushFrameWriter, PushRecordReader, TAG_STR_ASCII, TAG_STR_UTF16, TAG_STR_UTF8 } from '../../../../src/wal/push_record';
import { ENTITY_INDEX_LOAD_MAX, PROBE_TABLE_MOVE_MIN_ENTRIES, ENTITY_SLOTS_MIN } from '../../../../src/limits';
import { prng } from '../../../harness/prng';

/** The feed key of a PUSH record the front's writer encodes: where its bytes are, and their tag. */
function recordKey(key: string): { buf: Buffer; at: number; len: number; tag: number } {
  const w = new PushFrameWriter();
  w.begin(1, 1000, 1, 0, null);
  w.feed(0, key);
  w.end();
  const buf = Buffer.from(w.take());
  const rd = new PushRecordReader();
  rd.open(buf, 8);
  rd.u16();
  rd.strBytes();
  return { buf, at: rd.strAt, len: rd.strLen, tag: rd.strTag };
}

function ascii(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

test('entity index: keys with one hash (forced collisions) stay apart; removal shifts the run back', () => {
  const ix = new EntityIndex();
  const H = 12345;
  const keys = ['a', 'b', 'ab', 'ba', 'abc', ''];
  keys.forEach((k, i) => assert.equal(ix.addBytes(ascii(k), 0, k.length, TAG_STR_ASCII, H, i, i), i));
  for (const [i, k] of keys.entries()) assert.equal(ix.findBytes(ascii(k), 0, k.length, TAG_STR_ASCII, H), i, k);
  assert.equal(ix.findBytes(ascii('abcd'), 0, 4, TAG_STR_ASCII, H), -1);
  // Entries of other homes sitting inside the collided run must survive removals.
  ix.addBytes(ascii('x'), 0, 1, TAG_STR_ASCII, H + 1, 0, 0);
  ix.addBytes(ascii('y'), 0, 1, TAG_STR_ASCII, H + 2, 0, 0);
  ix.removeSlot(ix.findBytes(ascii('b'), 0, 1, TAG_STR_ASCII, H));
  ix.removeSlot(ix.findBytes(ascii('a'), 0, 1, TAG_STR_ASCII, H));
  assert.equal(ix.findBytes(ascii('a'), 0, 1, TAG_STR_ASCII, H), -1);
  assert.equal(ix.findBytes(ascii('b'), 0, 1, TAG_STR_ASCII, H), -1);
  for (const k of ['ab', 'ba', 'abc', '']) assert.ok(ix.findBytes(ascii(k), 0, k.length, TAG_STR_ASCII, H) >= 0, k);
  assert.equal(ix.findBytes(ascii('x'), 0, 1, TAG_STR_ASCII, H + 1), keys.length);
  assert.equal(ix.findBytes(ascii('y'), 0, 1, TAG_STR_ASCII, H + 2), keys.length + 1);
  assert.equal(ix.size, keys.length);
  assert.throws(() => ix.addBytes(ascii('ab'), 0, 2, TAG_STR_ASCII, H, 0, 0), /already has a slot/);
});

test('entity index: under one hash, keys that share a prefix, differ only in length or trailing zero bytes, or in str class, stay apart, also after the arena moves', () => {
  const ix = new EntityIndex();
  const H = 777;
  // Prefixes of each other, with zero bytes at their ends (a comparison that stops at the shorter key or pads with zeros would merge them).
  const keys = ['ab', 'ab\0', 'ab\0\0\0\0\0\0', 'abcdefg', 'abcdefgh', 'abcdefgh\0', 'abcdefghi', 'abcdefghj', 'abcdefghij', 'abcdefgh-long-tail-1', 'abcdefgh-long-tail-2', ''];
  const add = (k: string, i: number): number => ix.addBytes(ascii(k), 0, k.length, TAG_STR_ASCII, H, i, i);
  keys.forEach((k, i) => assert.equal(add(k, i), i, JSON.stringify(k)));
  const find = (k: string): number => ix.findBytes(ascii(k), 0, k.length, TAG_STR_ASCII, H);
  for (const [i, k] of keys.entries()) assert.equal(find(k), i, JSON.stringify(k));
  for (const k of ['a', 'ab\0\0', 'abcdefgi', 'abcdefghk', 'abcdefgh-long-tail-3', 'abcdefgh-long-tail-']) assert.equal(find(k), -1, JSON.stringify(k));
  // The same bytes as UTF-16 are another key, short or long, even under the same hash.
  for (const k of ['ab', 'abcdefghij']) {
    assert.equal(ix.findBytes(ascii(k), 0, k.length, TAG_STR_UTF16, H), -1, `${k} as UTF-16`);
    const wide = ix.addBytes(ascii(k), 0, k.length, TAG_STR_UTF16, H, 0, 0);
    assert.equal(ix.findBytes(ascii(k), 0, k.length, TAG_STR_UTF16, H), wide);
    assert.equal(find(k), keys.indexOf(k));
    ix.removeSlot(wide);
  }
  // The arena is compacted under them: every key still finds its own slot.
  const filler = (i: number): string => `abcdefgh-filler-${i}`;
  for (let i = 0; i < 20_000; i++) ix.add(filler(i), 0, 0);
  for (let i = 0; i < 20_000; i++) ix.remove(filler(i));
  for (const [i, k] of keys.entries()) assert.equal(find(k), i, `${JSON.stringify(k)} after the arena moved`);
  assert.equal(find('abcdefgh-long-tail-3'), -1);
  for (const k of keys) ix.removeSlot(find(k));
  assert.equal(ix.size, 0);
});

test('entity index: a key from a PUSH record and the same key as a string are one entity (ASCII, UTF-8, lone surrogate, long)', () => {
  const ix = new EntityIndex();
  // The last ASCII unit and the first two beyond it sit on the boundary of the ASCII encoding.
  const keys = ['user42', 'naïve|Zürich', '\u{1f600}', 'a\ud800b', 'x'.repeat(300), `${'y'.repeat(60)}é`, '1|2|3', '', 'a\u007f', 'a\u0080', '\u0081b'];
  const tags = [TAG_STR_ASCII, TAG_STR_UTF8, TAG_STR_UTF8, TAG_STR_UTF16, TAG_STR_ASCII, TAG_STR_UTF8, TAG_STR_ASCII, TAG_STR_ASCII, TAG_STR_ASCII, TAG_STR_UTF8, TAG_STR_UTF8];
  keys.forEach((k, i) => {
    const r = recordKey(k);
    assert.equal(r.tag, tags[i], `tag of ${JSON.stringify(k)}`);
    // Added from the record's bytes, found by the string; and the other way round.
    const slot = ix.addBytes(r.buf, r.at, r.len, r.tag, keyHash(r.buf, r.at, r.len, r.tag), 1, 2);
    assert.equal(ix.slotOf(k), slot, JSON.stringify(k));
    assert.equal(ix.keyOf(slot), k, 'decoded back to the same string');
  });
  for (const k of ['user4', 'user420', 'a\ud801b', 'naive|Zurich']) assert.equal(ix.slotOf(k), -1, JSON.stringify(k));
  const other = new EntityIndex();
  for (const k of keys) other.add(k, 0, 0);
  for (const k of keys) {
    const r = recordKey(k);
    assert.equal(other.findBytes(r.buf, r.at, r.len, r.tag, keyHash(r.buf, r.at, r.len, r.tag)), other.slotOf(k));
  }
  // UTF-16 bytes that spell a UTF-8 key are another key.
  const wide = Buffer.from('ab', 'latin1');
  assert.equal(ix.findBytes(wide, 0, 2, TAG_STR_UTF16, keyHash(wide, 0, 2, TAG_STR_UTF16)), -1);
  ix.add('ab', 0, 0);
  assert.equal(ix.findBytes(wide, 0, 2, TAG_STR_UTF16, keyHash(wide, 0, 2, TAG_STR_UTF16)), -1);
  assert.ok(ix.findBytes(wide, 0, 2, TAG_STR_ASCII, keyHash(wide, 0, 2, TAG_STR_ASCII)) >= 0);
});

test('entity index: slots and table grow by doubling, free slots are reused last-freed first, lastT/lastLsn follow their slot', () => {
  const ix = new EntityIndex();
  const grown: number[] = [];
  ix.onGrow = (cap) => grown.push(cap);
  const n = ENTITY_SLOTS_MIN * 16;
  for (let i = 0; i < n; i++) assert.equal(ix.add(`key-${i}`, i, i + 1), i);
  assert.deepEqual(grown, [2, 4, 8, 16].map((m) => ENTITY_SLOTS_MIN * m));
  assert.ok(ix.tableEntries >= n / ENTITY_INDEX_LOAD_MAX, 'the table is at most ENTITY_INDEX_LOAD_MAX full');
  assert.ok(ix.tableEntries < 2 * n / ENTITY_INDEX_LOAD_MAX, 'and doubles only when it must');
  for (let i = 0; i < n; i++) assert.equal(ix.slotOf(`key-${i}`), i);
  // Every slot taken (high === capacity): the walks of live slots stop at the last one.
  assert.equal(ix.capacity, n);
  // Slots at and past `high` are not live, though their meta was never written (a growth leaves it unset).
  ix.add(`key-${n}`, n, n + 1);
  assert.equal(ix.capacity, 2 * n);
  assert.equal(ix.live(ix.high), false);
  assert.equal(ix.live(ix.capacity - 1), false);
  assert.equal(ix.remove(`key-${n}`), n);
  assert.deepEqual(ix.liveSlots(), Array.from({ length: n }, (_, i) => i));
  assert.deepEqual(ix.keyList(), Array.from({ length: n }, (_, i) => `key-${i}`));
  assert.equal(ix.remove('key-7'), 7);
  assert.equal(ix.remove('key-7'), -1);
  ix.removeSlot(ix.slotOf('key-9'));
  assert.equal(ix.live(7), false);
  assert.equal(ix.lastT[9], 0);
  assert.equal(ix.add('new-1', 5, 6), 9);
  assert.equal(ix.add('new-2', 5, 6), 7);
  assert.equal(ix.add('new-3', 5, 6), n);
  assert.equal(ix.lastLsn[7], 6);
  assert.equal(ix.lastT[100], 100, 'times survive growth');
  assert.equal(ix.keyOf(7), 'new-2');
  assert.equal(ix.size, n + 1);
  assert.equal(ix.liveSlots().length, ix.size);
  assert.throws(() => ix.releaseSlot(7), /still points/, 'a slot the index points to is released only with its key');
  assert.equal(ix.keyList().length, ix.size);
});

test('entity index: released keys leave the arena once they pass the dead fraction; the table shrinks when mostly empty', () => {
  const ix = new EntityIndex();
  const n = 20_000;
  const key = (i: number): string => `a-rather-long-entity-key-number-${i}`;
  for (let i = 0; i < n; i++) ix.add(key(i), 0, 0);
  const arena = ix.arenaBytes;
  const entries = ix.tableEntries;
  // Drop all but every 50th: the arena is compacted on the way and the table halves.
  for (let i = 0; i < n; i++) if (i % 50 !== 0) ix.remove(key(i));
  assert.equal(ix.size, n / 50);
  assert.ok(ix.arenaBytes <= arena / 8, `arena ${ix.arenaBytes} B after the drops, ${arena} B before`);
  assert.ok(ix.tableEntries <= entries / 8, `table ${ix.tableEntries} entries after the drops, ${entries} before`);
  for (let i = 0; i < n; i++) {
    const s = ix.slotOf(key(i));
    if (i % 50 === 0) assert.equal(ix.keyOf(s), key(i));
    else assert.equal(s, -1);
  }
  // Churn: new keys reuse slots and arena space; memory stays bounded.
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 2000; i++) ix.add(`churn-${round}-${i}`, 0, 0);
    for (let i = 0; i < 2000; i++) ix.remove(`churn-${round}-${i}`);
  }
  assert.equal(ix.size, n / 50);
  assert.ok(ix.arenaBytes <= arena / 4, `arena ${ix.arenaBytes} B after churn`);
  assert.ok(ix.high <= n, 'slots are reused');
  for (let i = 0; i < n; i += 50) assert.equal(ix.keyOf(ix.slotOf(key(i))), key(i));
});

test('entity index: the arena is compacted with every slot taken (high === capacity), and keeps every live key', () => {
  const ix = new EntityIndex();
  const key = (i: number): string => `a-rather-long-entity-key-number-${i}`;
  const n = ENTITY_SLOTS_MIN * 64;
  for (let i = 0; i < n; i++) ix.add(key(i), 0, 0);
  assert.equal(ix.capacity, n);
  const arena = ix.arenaBytes;
  // The last slot stays taken, so high stays at capacity while the drops compact the arena.
  for (let i = 0; i < n - 1; i++) if (i % 10 !== 0) ix.remove(key(i));
  assert.ok(ix.arenaBytes < arena, `arena ${ix.arenaBytes} B after the drops, ${arena} B before`);
  for (let i = 0; i < n; i++) {
    const s = ix.slotOf(key(i));
    if (i % 10 === 0 || i === n - 1) assert.equal(ix.keyOf(s), key(i));
    else assert.equal(s, -1);
  }
  const s = ix.add('after-compaction', 0, 0);
  assert.equal(ix.keyOf(s), 'after-compaction');
  assert.equal(ix.slotOf(key(n - 1)), n - 1);
});

test('entity index: random adds and removals (forced hash collisions, reserve) agree with a Map', () => {
  const rnd = prng(1234);
  const ix = new EntityIndex();
  const model = new Map<string, number>();
  const alphabet = ['a', 'é', '\u{1f600}', '\ud800', '|', '0'];
  const keyOf = (): string => {
    let s = '';
    for (let n = Math.floor(rnd() * 6); n > 0; n--) s += alphabet[Math.floor(rnd() * alphabet.length)];
    return s;
  };
  // A weak hash (few distinct values) makes long collided runs; the string API uses the real one.
  const weak = (k: string): number => k.length % 3;
  const asBytes = (k: string): { buf: Buffer; at: number; len: number; tag: number } => recordKey(k);
  for (let step = 0; step < 20_000; step++) {
    const k = keyOf();
    const r = asBytes(k);
    const h = weak(k) === 0 ? 7 : keyHash(r.buf, r.at, r.len, r.tag);
    const op = rnd();
    if (step === 10_000) ix.reserve(4096);
    if (op < 0.55) {
      if (model.has(k)) assert.equal(ix.findBytes(r.buf, r.at, r.len, r.tag, h), model.get(k));
      else model.set(k, ix.addBytes(r.buf, r.at, r.len, r.tag, h, step, step));
    } else if (op < 0.85) {
      const slot = ix.findBytes(r.buf, r.at, r.len, r.tag, h);
      assert.equal(slot, model.has(k) ? model.get(k) : -1, `step ${step}: ${JSON.stringify(k)}`);
      if (slot >= 0) {
        ix.removeSlot(slot);
        model.delete(k);
      }
    } else {
      assert.equal(ix.findBytes(r.buf, r.at, r.len, r.tag, h), model.has(k) ? model.get(k) : -1);
    }
    assert.equal(ix.size, model.size);
  }
  for (const [k, slot] of model) {
    assert.equal(ix.keyOf(slot), k);
    assert.equal(ix.lastLsn[slot] >= 0, true);
  }
  assert.equal(ix.liveSlots().length, model.size);
});

test('entity index: addReplacing finds a key filed at table entry 0 or at the last entry, and files its new slot there', () => {
  for (const want of ['first', 'last'] as const) {
    const ix = new EntityIndex();
    const mask = ix.tableEntries - 1;
    // The hash is seeded per process: search for a key whose home is the entry wanted (nothing else is in the table).
    let key = '';
    for (let i = 0; key === ''; i++) {
      const k = `k${i}`;
      const home = keyHash(ascii(k), 0, k.length, TAG_STR_ASCII) & mask;
      if (home === (want === 'first' ? 0 : mask)) key = k;
    }
    const old = ix.add(key, 1, 1);
    const replaced = new Int32Array(1);
    const slot = ix.addReplacing(key, 5, 9, replaced);
    assert.equal(replaced[0], old, want);
    assert.notEqual(slot, old, want);
    assert.equal(ix.slotOf(key), slot, want);
    assert.equal(ix.lastLsn[slot], 9, want);
    ix.releaseSlot(old);
    assert.deepEqual(ix.keyList(), [key], want);
  }
});

test('entity index: an incremental resize serves finds, adds, replacements and removals from both tables (forced collisions, arena compactions) as a Map does', () => {
  const rnd = prng(99);
  const ix = new EntityIndex();
  const model = new Map<string, number>();
  const keys: string[] = [];
  // Long keys, so the removals compact the arena while a resize is under way.
  const keyOf = (i: number): string => `entity-with-a-long-key-${i}`;
  // Every 500th key shares one hash: a long run that crosses the walk's position in the old table.
  const collides = (k: string): boolean => Number(k.slice(23)) % 500 === 0;
  const hashOf = (k: string, r: ReturnType<typeof recordKey>): number => (collides(k) ? 12345 : keyHash(r.buf, r.at, r.len, r.tag));
  let next = 0;
  let resizingSteps = 0;
  const replaced = new Int32Array(1);
  const check = (k: string, step: number): void => {
    const r = recordKey(k);
    assert.equal(ix.findBytes(r.buf, r.at, r.len, r.tag, hashOf(k, r)), model.has(k) ? model.get(k) : -1, `step ${step}: ${k}`);
  };
  for (let step = 0; step < 120_000; step++) {
    if (ix.resizing) resizingSteps++;
    const op = rnd();
    if (op < 0.5 || keys.length === 0) {
      const k = keyOf(next++);
      const r = recordKey(k);
      model.set(k, ix.addBytes(r.buf, r.at, r.len, r.tag, hashOf(k, r), step, step));
      keys.push(k);
    } else if (op < 0.75) {
      const at = Math.floor(rnd() * keys.length);
      const k = keys[at];
      keys[at] = keys[keys.length - 1];
      keys.pop();
      const r = recordKey(k);
      const slot = model.get(k) as number;
      // Half the time a find of another key (maybe in the other table) comes between.
      if (rnd() < 0.5) check(keys[Math.floor(rnd() * keys.length)] ?? k, step);
      else assert.equal(ix.findBytes(r.buf, r.at, r.len, r.tag, hashOf(k, r)), slot, `step ${step}: ${k}`);
      if (rnd() < 0.5) ix.removeSlot(slot);
      else if (!collides(k)) assert.equal(ix.remove(k), slot);
      else ix.removeSlot(slot);
      model.delete(k);
    } else if (op < 0.8 && keys.length > 0) {
      // Replacing goes through the string API (the real hash): only keys filed under it.
      const k = keys[Math.floor(rnd() * keys.length)];
      if (collides(k)) continue;
      const slot = ix.addReplacing(k, step, step, replaced);
      assert.equal(replaced[0], model.get(k));
      ix.releaseSlot(replaced[0]);
      model.set(k, slot);
    } else {
      check(keys[Math.floor(rnd() * keys.length)], step);
      check(keyOf(next + 1), step);
    }
    assert.equal(ix.size, model.size);
    if (step % 20_000 === 19_999) for (const k of model.keys()) check(k, step);
  }
  assert.ok(ix.tableEntries >= 4 * PROBE_TABLE_MOVE_MIN_ENTRIES, `the table grew past incremental resizes (${ix.tableEntries} entries)`);
  assert.ok(resizingSteps > 1000, `operations ran while a resize was under way (${resizingSteps})`);
  for (const k of model.keys()) check(k, -1);
  assert.equal(ix.liveSlots().length, model.size);
  // Drops down to a few keys: the table shrinks again once no resize is under way, and keeps them.
  const left = [...model.keys()].slice(0, 10);
  for (const k of [...model.keys()].slice(10)) {
    const r = recordKey(k);
    ix.removeSlot(ix.findBytes(r.buf, r.at, r.len, r.tag, hashOf(k, r)));
    model.delete(k);
  }
  for (let k = 0; k < 4 * PROBE_TABLE_MOVE_MIN_ENTRIES && ix.resizing; k++) {
    const extra = `shrink-${k}`;
    ix.remove(ix.keyOf(ix.add(extra, 0, 0)));
  }
  assert.equal(ix.resizing, false);
  assert.ok(ix.tableEntries <= PROBE_TABLE_MOVE_MIN_ENTRIES, `the table shrank (${ix.tableEntries} entries)`);
  for (const k of left) check(k, -2);
  assert.equal(ix.size, left.length);
});

test('entity index: while a resize walks through a probe run of the old table (one that wraps past its last entry, too), every key of the run is found, and removals inside it shift the rest back', () => {
  // 0x3fffffff: the run starts at the table's last entry and wraps to its first; 0: hash words that are 0, as an empty entry's.
  for (const hash of [777, 0x3fffffff, 0]) runThroughResize(hash);
});

test('entity index: a reserve (restore) while a resize is under way finishes it first and keeps every key', () => {
  const ix = new EntityIndex();
  let n = 0;
  while (!ix.resizing || ix.tableEntries < 2 * PROBE_TABLE_MOVE_MIN_ENTRIES) ix.add(`key-${n++}`, 0, n);
  ix.add(`key-${n++}`, 0, n);
  assert.ok(ix.resizing, 'still resizing');
  ix.reserve(4 * n);
  assert.equal(ix.resizing, false, 'a reserve resizes at once');
  assert.ok(ix.tableEntries >= 4 * n / ENTITY_INDEX_LOAD_MAX);
  for (let i = 0; i < n; i++) assert.equal(ix.lastLsn[ix.slotOf(`key-${i}`)], i + 1, `key-${i}`);
  assert.equal(ix.size, n);
});

function runThroughResize(hash: number): void {
  const ix = new EntityIndex();
  const bytes = (k: string): Buffer => ascii(k);
  const run: string[] = [];
  // 300 keys with one hash: a run of 300 entries in the old table, which the walk passes in several adds.
  for (let i = 0; i < 300; i++) {
    const k = `run-${i}`;
    run.push(k);
    ix.addBytes(bytes(k), 0, k.length, TAG_STR_ASCII, hash, 0, 0);
  }
  const find = (k: string): number => ix.findBytes(bytes(k), 0, k.length, TAG_STR_ASCII, hash);
  let filler = 0;
  while (!ix.resizing || ix.tableEntries < 2 * PROBE_TABLE_MOVE_MIN_ENTRIES) ix.add(`filler-${filler++}`, 0, 0);
  const live = new Set(run);
  let adds = 0;
  for (; ix.resizing; adds++) {
    ix.add(`filler-${filler++}`, 0, 0);
    for (const k of run) assert.equal(find(k) >= 0, live.has(k), `hash ${hash}: ${k} after ${adds} adds into the resize`);
    // Every third add, drop one key of the run (from its middle, where the walk may be).
    if (adds % 3 === 0) {
      const k = run[150 + adds];
      if (k !== undefined && live.has(k)) {
        ix.removeSlot(find(k));
        live.delete(k);
      }
    }
  }
  assert.ok(adds > 10, `the resize took several adds (${adds})`);
  for (const k of run) assert.equal(find(k) >= 0, live.has(k), k);
  for (let i = 0; i < filler; i++) assert.ok(ix.slotOf(`filler-${i}`) >= 0);
  assert.equal(ix.size, live.size + filler);
}
