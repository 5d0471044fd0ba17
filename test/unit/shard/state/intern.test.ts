/**
 * A table column's intern table (shard/state/intern.ts): values looked up from record
 * bytes (idOfAscii, the push path) and by string (ref, restores and kept
 * values) must find one id per value, whatever bytes surround the value in its
 * record, whichever of the two paths added it, across growth, backward-shift
 * deletion and shrinking. A random run is checked against a Map as the model.
 *
 * The tables' hash is seeded per process, so collisions cannot be forced by
 * choosing values: the collision test interns enough values of one length and
 * one 8-unit prefix that some pairs share the slot's 24-bit hash word (about 48
 * expected pairs among 40,000), where only comparing the rest of the value
 * tells them apart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InternTable } from '../../../../src/shard/state/intern';
import { prng } from '../../../harness/prng';

/** `v` as bytes inside a buffer with `pre` bytes before it and `post` after, each filled with `fill`. */
function placed(v: string, pre: number, post: number, fill: number): { b: Buffer; from: number; to: number } {
  const b = Buffer.alloc(pre + v.length + post, fill);
  b.write(v, pre, 'latin1');
  return { b, from: pre, to: pre + v.length };
}

/** idOfAscii of `v` placed with the given surroundings, holding one reference as the push path does. */
function byBytes(t: InternTable, v: string, pre = 3, post = 5, fill = 0x7a): number {
  const { b, from, to } = placed(v, pre, post, fill);
  const id = t.idOfAscii(b, from, to);
  t.refId(id);
  return id;
}

test('intern: a value has one id whether looked up by its bytes or by its string, whatever bytes follow it', () => {
  const values = ['', 'a', 'ab', 'abcdefgh', 'abcdefghi', 'merchant-12345', 'x'.repeat(300), 'user:0042'];
  for (const v of values) {
    // String first, then bytes with different neighbours (a record's next field, its crc).
    const t = new InternTable();
    const id = t.ref(v);
    for (const [pre, post, fill] of [[0, 0, 0], [7, 1, 0xff], [1, 9, 0x41], [2, 2, 0x00]] as const) {
      assert.equal(byBytes(t, v, pre, post, fill), id, `${JSON.stringify(v)} by bytes (${pre}, ${post}, ${fill})`);
    }
    assert.equal(t.size, 1);
    // Bytes first, then the string: a restore (ref) after pushes finds the push's id.
    const u = new InternTable();
    const id2 = byBytes(u, v, 4, 4, 0x30);
    assert.equal(byBytes(u, v, 0, 11, 0x31), id2);
    assert.equal(u.ref(v), id2);
    assert.equal(u.size, 1);
    assert.equal(u.value(id2), v);
  }
});

test('intern: values that differ only in length or trailing zero bytes get their own ids, also straight after each other', () => {
  const t = new InternTable();
  // Same prefix words (a zero byte reads as "past the end"), different lengths: the key word and the last-value cache must tell them apart.
  const vs = ['ab', 'ab\u0000', 'ab\u0000\u0000', '', '\u0000', 'abcdefgh', 'abcdefgh\u0000', 'abcd', 'abcd\u0000\u0000\u0000\u0000'];
  const ids = new Map<string, number>();
  for (let round = 0; round < 3; round++) {
    for (const v of round === 1 ? [...vs].reverse() : vs) {
      const id = byBytes(t, v);
      if (ids.has(v)) assert.equal(id, ids.get(v), `${JSON.stringify(v)} again`);
      else ids.set(v, id);
      assert.equal(t.value(id), v, `the id of ${JSON.stringify(v)} holds it`);
    }
  }
  assert.equal(new Set(ids.values()).size, vs.length);
  assert.equal(t.size, vs.length);
  // Each value twice in a row (the cached path), alternating with its zero-extended twin.
  for (let i = 0; i < 4; i++) {
    assert.equal(byBytes(t, 'ab'), ids.get('ab'));
    assert.equal(byBytes(t, 'ab'), ids.get('ab'));
    assert.equal(byBytes(t, 'ab\u0000'), ids.get('ab\u0000'));
    assert.equal(byBytes(t, 'ab\u0000'), ids.get('ab\u0000'));
  }
});

test('intern: 40,000 values of one length and prefix (hash words collide) each keep their own id, short and long', () => {
  for (const [prefix, digits] of [['merchant', 6], ['m', 6]] as const) {
    const t = new InternTable();
    const n = 40_000;
    const vs = Array.from({ length: n }, (_, i) => prefix + String(i).padStart(digits, '0'));
    const ids = vs.map((v) => byBytes(t, v));
    assert.equal(new Set(ids).size, n, `${prefix}: distinct ids`);
    for (let i = 0; i < n; i++) assert.equal(t.value(ids[i]), vs[i]);
    // Again in another order (no last-value cache between equal values), by bytes and by string.
    const rnd = prng(17);
    for (let k = 0; k < n; k++) {
      const i = Math.floor(rnd() * n);
      assert.equal(byBytes(t, vs[i], 1 + (k & 7), k & 3, k & 0xff), ids[i], `${vs[i]} by bytes`);
      assert.equal(t.ref(vs[(i * 7919) % n]), ids[(i * 7919) % n], `${vs[(i * 7919) % n]} by string`);
    }
    assert.equal(t.size, n);
  }
});

test('intern: a random run of lookups, references and releases agrees with a Map (growth, backward-shift deletion, shrink)', () => {
  const rnd = prng(20261125);
  // Short, 8-unit and long values, prefixes of each other, zero-extended twins, one non-ASCII (by string only), booleans.
  const pool: Array<string | boolean> = [true, false, '', '\u0000', 'é-only-by-string'];
  for (let i = 0; i < 1500; i++) {
    pool.push(`m${i}`);
    pool.push(`merchant${i}`);
    // Exactly PREFIX_UNITS (8) units: the last length the short path takes by its prefix words.
    pool.push(`k${String(i).padStart(7, '0')}`);
    if (i % 10 === 0) pool.push(`m${i}\u0000`);
  }
  const t = new InternTable();
  const model = new Map<string | boolean, { id: number; refs: number }>();
  const held: Array<string | boolean> = [];
  /** The push path looks a value up by its bytes only when they are ASCII (intern.ts idOfAscii). */
  const ascii = (v: string | boolean): v is string => typeof v === 'string' && !/[^\u0000-\u007f]/.test(v);
  const release = (v: string | boolean): void => {
    const m = model.get(v)!;
    t.unref(m.id);
    if (--m.refs === 0) model.delete(v);
  };
  const check = (v: string | boolean, id: number): void => {
    const m = model.get(v);
    if (m !== undefined) assert.equal(id, m.id, `${JSON.stringify(v)} keeps its id`);
    else {
      for (const [w, o] of model) assert.notEqual(o.id, id, `${JSON.stringify(v)} took the id of ${JSON.stringify(w)}`);
      model.set(v, { id, refs: 0 });
    }
    assert.equal(t.value(id), v);
    model.get(v)!.refs++;
    held.push(v);
  };
  let resizing = 0;
  for (let step = 0; step < 60_000; step++) {
    if (t.resizing) resizing++;
    // Phases that fill the table, then empty it (the table shrinks back), then mix.
    const phase = Math.floor(step / 10_000) % 3;
    const addP = phase === 0 ? 0.8 : phase === 1 ? 0.15 : 0.5;
    if (held.length === 0 || rnd() < addP) {
      const v = pool[Math.floor(rnd() * pool.length)];
      const id = ascii(v) && rnd() < 0.7 ? byBytes(t, v, Math.floor(rnd() * 4), Math.floor(rnd() * 4), Math.floor(rnd() * 256)) : t.ref(v);
      check(v, id);
    } else {
      const k = Math.floor(rnd() * held.length);
      const v = held[k];
      held[k] = held[held.length - 1];
      held.pop();
      release(v);
    }
    // While a resize walks the old table, every value is looked up (runs that straddle the walk's position).
    if (step % 5000 === 4999 || (t.resizing && step % 2 === 0)) {
      assert.equal(t.size, model.size, `size at step ${step}`);
      for (const [v, m] of model) {
        assert.equal(t.value(m.id), v);
        // A lookup that finds it changes nothing once its reference is dropped again.
        // By bytes and by string in turn (their probe loops differ).
        const id = ascii(v) && step % 4 === 0 ? byBytes(t, v, 2, 2, 0x55) : t.ref(v);
        assert.equal(id, m.id, `${JSON.stringify(v)} found at step ${step}`);
        t.unref(id);
      }
    }
  }
  // The table of 8,192 slots and up resizes incrementally (shard/state/probe_table.ts): lookups and releases ran meanwhile.
  assert.ok(resizing > 100 && resizing < 6_000, `steps while a resize was under way: ${resizing}`);
  // Everything released: the table is empty and takes values again.
  for (const v of held) release(v);
  assert.equal(model.size, 0);
  assert.equal(t.size, 0);
  const id = byBytes(t, 'merchant7');
  assert.equal(t.value(id), 'merchant7');
  assert.equal(t.ref('merchant7'), id);
});

test('intern: a value removed right after its lookup is not answered from the last-lookup cache (short path, long path, by string)', () => {
  const t = new InternTable();
  for (const v of ['abc', 'a-value-past-eight-units']) {
    const id = byBytes(t, v);
    // Its last reference goes: the value is removed, and it was the last lookup.
    t.unref(id);
    assert.equal(t.size, 0);
    const again = byBytes(t, v);
    assert.equal(t.value(again), v, `${v} looked up again is interned again`);
    assert.equal(t.size, 1);
    const other = t.ref('zzz');
    assert.notEqual(other, again, 'and its id is not handed to another value');
    t.unref(again);
    t.unref(other);
  }
  const id = t.ref('by-string');
  t.unref(id);
  const again = t.ref('by-string');
  assert.equal(t.value(again), 'by-string');
  assert.notEqual(t.ref('other'), again);
});
