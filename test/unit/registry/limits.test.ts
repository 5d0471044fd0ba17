/**
 * The limit checks of issue 11, unit by unit: bounded "did you mean" distance,
 * registry size limits, name length, pushed string size, derived concatenation,
 * key size on get, and one evaluation of each derived event per push.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundedEditDistance, nearestName } from '../../../src/util/near_name';
import { compileExpression } from '../../../src/expr';
import { compileRegistry } from '../../../src/registry/compile';
import { register } from '../../../src/coordinator/register';
import { PushValidator, stringFits } from '../../../src/registry/push_validator';
import { isValidName } from '../../../src/registry/model';
import { SfError } from '../../../src/errors';
import {
  DERIVATION_DEPTH_MAX, KEY_FIELDS_MAX, NAME_LENGTH_MAX, REGISTRY_EXPRESSIONS_MAX, STRING_VALUE_BYTES_MAX, TABLE_FEATURES_MAX,
} from '../../../src/limits';
import { prng } from '../../harness/prng';

function fullDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

test('boundedEditDistance equals Levenshtein up to the bound and max + 1 beyond it', () => {
  const rand = prng(11);
  const word = (n: number): string => Array.from({ length: n }, () => 'abc'[Math.floor(rand() * 3)]).join('');
  for (let k = 0; k < 3000; k++) {
    const a = word(Math.floor(rand() * 9));
    const b = rand() < 0.5 ? word(Math.floor(rand() * 9)) : a.slice(0, Math.floor(rand() * a.length)) + word(Math.floor(rand() * 3));
    for (const max of [0, 1, 2, 3]) {
      const d = fullDistance(a, b);
      assert.equal(boundedEditDistance(a, b, max), d <= max ? d : max + 1, `${a} ${b} max ${max}`);
    }
  }
});

test('nearestName: hints within distance 2 (also among long names), none for names no valid name can be near', () => {
  assert.equal(nearestName('amuont', ['amount', 'user']), 'amount');
  assert.equal(nearestName('Amount', ['amount']), 'amount');
  assert.equal(nearestName('zzzzzz', ['amount']), null);
  const long = Array.from({ length: 1000 }, (_, i) => `${'x'.repeat(NAME_LENGTH_MAX - 4)}${String(i).padStart(4, '0')}`);
  assert.equal(nearestName('x'.repeat(4000), long), null);
  assert.equal(nearestName(`${'x'.repeat(NAME_LENGTH_MAX - 4)}0O07`, long), long[7]);
});

test('every name is at most NAME_LENGTH_MAX characters', () => {
  assert.equal(isValidName('a'.repeat(NAME_LENGTH_MAX)), true);
  assert.equal(isValidName('a'.repeat(NAME_LENGTH_MAX + 1)), false);
  const code = (nodes: unknown[]): string => {
    try { register({ version: 0, nodes: [] }, { nodes }, { memoryGovEnforce: true }); return 'ok'; } catch (e) { return (e as SfError).code; }
  };
  const ev = { kind: 'event', name: 'E', schema: { fields: { user: 'str', a: 'f64' } } };
  const long = 'c'.repeat(NAME_LENGTH_MAX + 1);
  assert.equal(code([{ ...ev, schema: { fields: { [long]: 'str' } } }]), 'schema_invalid');
  assert.equal(code([ev, { kind: 'table', name: 'T', upstreams: ['E'], key: ['user'], agg: { [long]: { op: 'count' } } }]), 'schema_invalid');
  assert.equal(code([ev, { kind: 'derivation', name: 'D', output_kind: 'event', upstreams: ['E'], ops: [{ op: 'with_columns', exprs: { [long]: 'a + 1' } }] }]), 'schema_invalid');
  assert.equal(code([ev, { kind: 'derivation', name: 'D', output_kind: 'event', upstreams: ['E'], ops: [{ op: 'rename', mapping: { a: long } }] }]), 'schema_invalid');
});

test('registry limits: features per table, expressions, derivation depth, key fields', () => {
  const ev = { kind: 'event', name: 'E', schema: { fields: Object.fromEntries([['user', 'str'], ['a', 'f64'], ...Array.from({ length: 20 }, (_, i) => [`k${i}`, 'str'])]) } };
  const verdict = (nodes: unknown[]): { code: string; path?: string } => {
    try { register({ version: 0, nodes: [] }, { nodes }, { memoryGovEnforce: true }); return { code: 'ok' }; } catch (e) { return { code: (e as SfError).code, path: (e as SfError).detail.path }; }
  };
  const table = (n: number, where = false) => ({ kind: 'table', name: 'T', upstreams: ['E'], key: ['user'], agg: Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { op: 'count', params: where ? { where: 'a > 1' } : {} }])) });
  assert.equal(verdict([ev, table(TABLE_FEATURES_MAX)]).code, 'ok');
  assert.deepEqual(verdict([ev, table(TABLE_FEATURES_MAX + 1)]), { code: 'registry_too_large', path: 'nodes[1].agg' });
  const keyed = (n: number) => ({ kind: 'table', name: 'K', upstreams: ['E'], key: Array.from({ length: n }, (_, i) => `k${i}`), agg: { c: { op: 'count' } } });
  assert.equal(verdict([ev, keyed(KEY_FIELDS_MAX)]).code, 'ok');
  assert.equal(verdict([ev, keyed(KEY_FIELDS_MAX + 1)]).code, 'table_key_invalid');
  const chain = (n: number): unknown[] => [ev, ...Array.from({ length: n }, (_, i) => ({ kind: 'derivation', name: `D${i + 1}`, output_kind: 'event', upstreams: [i === 0 ? 'E' : `D${i}`], ops: [] }))];
  assert.equal(verdict(chain(DERIVATION_DEPTH_MAX)).code, 'ok');
  assert.deepEqual(verdict(chain(DERIVATION_DEPTH_MAX + 1)), { code: 'registry_too_large', path: `nodes[${DERIVATION_DEPTH_MAX + 1}].upstreams[0]` });
  // Expressions over the registry: 21 tables of 1,000 where clauses pass 20,000.
  const tables = Array.from({ length: Math.ceil(REGISTRY_EXPRESSIONS_MAX / TABLE_FEATURES_MAX) + 1 }, (_, t) => ({ ...table(TABLE_FEATURES_MAX, true), name: `T${t}` }));
  assert.equal(verdict([ev, ...tables]).code, 'registry_too_large');
});

test('pushed str and bytes values are at most STRING_VALUE_BYTES_MAX UTF-8 bytes', () => {
  const v = new PushValidator({ s: 'str', b: 'bytes' }, ['b'], [], 'nodes[0]');
  assert.doesNotThrow(() => v.validate({ s: 'x'.repeat(STRING_VALUE_BYTES_MAX) }));
  const over = (data: unknown): string => { try { v.validate(data); return 'ok'; } catch (e) { return `${(e as SfError).code} ${(e as SfError).detail.path}`; } };
  assert.equal(over({ s: 'x'.repeat(STRING_VALUE_BYTES_MAX + 1) }), 'invalid_event fields.s');
  assert.equal(over({ s: '€'.repeat(Math.floor(STRING_VALUE_BYTES_MAX / 3) + 1) }), 'invalid_event fields.s');
  assert.equal(over({ s: 'ok', b: 'QUJD'.repeat(STRING_VALUE_BYTES_MAX / 4 + 1) }), 'invalid_event fields.b');
  assert.equal(stringFits('€'.repeat(Math.floor(STRING_VALUE_BYTES_MAX / 3))), true);
  // The generated check still classifies every other failure as before.
  assert.equal(over({ s: 1 }), 'invalid_event fields.s');
  assert.equal(over({ s: 'a', zz: 1 }), 'unknown_field_v0 fields.zz');
  assert.equal(over({ s: null }), 'missing_field fields.s');
  assert.equal(over({ s: 'a', b: null }), 'ok');
  assert.equal(over({ s: 'a', b: '!!' }), 'schema_mismatch fields.b');
});

test('a derived concatenation over STRING_VALUE_BYTES_MAX is null', () => {
  const e = compileExpression('s + s', { s: 'str' });
  const half = 'x'.repeat(STRING_VALUE_BYTES_MAX / 2);
  assert.equal(e.fn({ s: half }), half + half);
  assert.equal(e.fn({ s: `${half}y` }), null);
  assert.equal(e.fn({ s: null }), null);
});

test('a derived event is evaluated once per push, whatever the number of tables below it', () => {
  const depth = 40;
  const nodes: Array<Record<string, unknown>> = [{ kind: 'event', name: 'R', schema: { fields: { user: 'str', c0: 'i64' } } }];
  for (let i = 1; i <= depth; i++) {
    nodes.push({ kind: 'derivation', name: `D${i}`, output_kind: 'event', upstreams: [i === 1 ? 'R' : `D${i - 1}`], ops: [{ op: 'with_columns', exprs: { [`c${i}`]: `c${i - 1} + 1` } }] });
    nodes.push({ kind: 'table', name: `T${i}`, upstreams: [`D${i}`], key: ['user'], agg: { s: { op: 'sum', params: { field: `c${i}`, window: '1h' } } } });
  }
  const reg = compileRegistry({ version: 1, nodes }, { memoryGovEnforce: false, pushValidators: false });
  const root = reg.events.get('R')!;
  assert.equal(root.derivs.length, depth + 1, 'one step per derived event, not one per (table, ancestor)');
  assert.equal(root.feeds.length, depth);
  const rows = root.feedRows({ user: 'u', c0: 0 });
  rows.forEach((r, i) => assert.equal(r![`c${i + 1}`], i + 1));
  // A feed of a derived event in the middle starts from that event's pushed row.
  const mid = reg.events.get('D20')!;
  assert.equal(mid.feeds.length, depth - 19);
  assert.equal(mid.feedRows({ user: 'u', c0: 0, c20: 100 } as never)[1]!.c21, 101);
});
