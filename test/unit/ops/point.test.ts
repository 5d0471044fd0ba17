/** Property tests of first, last, first_n, last_n, most_recent_n, lag against naive recomputation. */
import { test } from 'node:test';
import type { FieldType, JsonValue, Value } from '../../../src/types';
import { BOOL, F64, I64, STR, expectEq, rowOf, runOpCases, type Ev, type Rng } from './harness';

const GENS: Array<[FieldType, (rng: Rng) => Value]> = [
  ['f64', F64],
  ['i64', I64],
  ['str', STR],
  ['bool', BOOL],
];

const present = (evs: readonly Ev[]): Value[] =>
  evs.filter((e) => e.match && e.row.x !== null && e.row.x !== undefined).map((e) => e.row.x as Value);

function cases(op: string, params: Record<string, unknown>, naive: (xs: Value[]) => JsonValue): void {
  test(`${op} ${JSON.stringify(params)} matches a naive recomputation`, () => {
    for (const [type, gen] of GENS) {
      runOpCases({
        name: `${op}/${type}/${JSON.stringify(params)}`,
        spec: { op, params: { field: 'x', ...params } },
        fields: { x: type },
        row: rowOf(gen, 0.2),
        matchRate: 0.8,
        seeds: 6,
        check: (v, evs) => expectEq(v, naive(present(evs))),
      });
    }
  });
}

cases('first', {}, (xs) => (xs.length === 0 ? null : (xs[0] as JsonValue)));
cases('last', { window: 'forever' }, (xs) => (xs.length === 0 ? null : (xs[xs.length - 1] as JsonValue)));
for (const n of [1, 3, 70]) {
  cases('first_n', { n }, (xs) => xs.slice(0, n) as JsonValue);
  cases('last_n', { n }, (xs) => xs.slice(Math.max(0, xs.length - n)) as JsonValue);
  cases('most_recent_n', { n }, (xs) => xs.slice(Math.max(0, xs.length - n)) as JsonValue);
  cases('lag', { n }, (xs) => (xs.length <= n ? null : (xs[xs.length - 1 - n] as JsonValue)));
}
