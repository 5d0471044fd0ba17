/**
 * The read path's JSON writer must print exactly what JSON.stringify prints:
 * random doubles, money-like values (the two-decimal fast path), integers, edge
 * numbers, strings needing escapes (quotes, control characters, lone surrogates)
 * and nested arrays/objects as the ops return them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonText, numberText } from '../../../../src/shard/state/json_text';
import type { JsonValue } from '../../../../src/types';
import { prng } from '../../../harness/prng';

const EDGE = [0, -0, 1, -1, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.01, 0.05, 0.5, 0.99, 1.1, 9.95, 10.1, 100.01, 12345.67, -12345.67,
  2 ** 31, 2 ** 31 - 1, 2 ** 53, 2 ** 53 - 1, 1e13 - 0.01, 1e13, 1e13 + 0.5, 9999999999999.99, 1e15, 1e21, 1e-7, 5e-324,
  Number.MAX_VALUE, -Number.MAX_VALUE, 1795245792792, 0.0033333333333333335, NaN, Infinity, -Infinity];

test('numberText equals JSON.stringify on edge numbers', () => {
  for (const x of EDGE) assert.equal(numberText(x), JSON.stringify(x), `x=${x}`);
});

for (const seed of [1, 2, 3]) {
  test(`numberText equals JSON.stringify on random numbers (seed ${seed})`, () => {
    const rnd = prng(seed);
    for (let i = 0; i < 200_000; i++) {
      const kind = i % 5;
      const mag = 10 ** Math.floor(rnd() * 16);
      let x: number;
      if (kind === 0) x = Math.round(rnd() * mag * 100) / 100; // cents
      else if (kind === 1) x = -Math.round(rnd() * mag * 10) / 10;
      else if (kind === 2) x = Math.floor(rnd() * mag);
      else if (kind === 3) x = (rnd() - 0.5) * mag;
      else x = Math.round(rnd() * 1e4) / 100 + Math.round(rnd() * 1e4) / 100; // sums of cents (float error)
      assert.equal(numberText(x), JSON.stringify(x), `seed ${seed} x=${x}`);
    }
  });
}

test('jsonText equals JSON.stringify on strings, arrays and objects', () => {
  const rnd = prng(9);
  const chars = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0001', '\u001f', '\u007f', 'é', '€', '\ud83d\ude00', '\ud800', '\udfff', '/'];
  const str = (): string => {
    let s = '';
    const n = Math.floor(rnd() * 6);
    for (let i = 0; i < n; i++) s += chars[Math.floor(rnd() * chars.length)];
    return s;
  };
  const value = (depth: number): JsonValue => {
    const k = Math.floor(rnd() * (depth > 2 ? 5 : 7));
    if (k === 0) return null;
    if (k === 1) return rnd() < 0.5;
    if (k === 2) return str();
    if (k === 3) return Math.round(rnd() * 1e6) / 100;
    if (k === 4) return (rnd() - 0.5) * 1e9;
    if (k === 5) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    const o: { [key: string]: JsonValue } = {};
    for (let i = Math.floor(rnd() * 4); i > 0; i--) o[rnd() < 0.2 ? String(Math.floor(rnd() * 10)) : str()] = value(depth + 1);
    return o;
  };
  for (let i = 0; i < 20_000; i++) {
    const v = value(0);
    assert.equal(jsonText(v), JSON.stringify(v));
  }
  assert.equal(jsonText([{ value: 'm5', count: 1 }, { value: 'a"b', count: 2 }]), '[{"value":"m5","count":1},{"value":"a\\"b","count":2}]');
});
