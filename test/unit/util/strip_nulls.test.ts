import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stripNullMembers } from '../../../src/util/strip_nulls';

test('null object members are dropped at every depth; array elements and other values stay', () => {
  const input = { a: null, b: 1, c: { d: null, e: [null, { f: null, g: false }], h: '' }, i: [] };
  assert.deepEqual(stripNullMembers(input), { b: 1, c: { e: [null, { g: false }], h: '' }, i: [] });
  assert.deepEqual(input.c.e[1], { f: null, g: false }, 'the input is not changed');
  assert.equal(stripNullMembers(null), null);
  assert.deepEqual(stripNullMembers([null, 1]), [null, 1]);
});

test('a member named __proto__ stays an own member (it must reach the reserved-name check)', () => {
  const out = stripNullMembers(JSON.parse('{"__proto__": {"x": 1}, "y": null}')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(out), ['__proto__']);
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
  assert.equal((out as { x?: number }).x, undefined);
});
