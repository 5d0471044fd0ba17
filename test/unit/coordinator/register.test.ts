/**
 * The register algorithm as a pure function (coordinator/register.ts): every
 * additive and destructive kind of spec 4.2 / 7.4, the sorted and byte-identical
 * diff, dry run, force, renames, merge semantics and the version counter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { register, type RegisterOutcome } from '../../../src/coordinator/register';
import { SfError } from '../../../src/errors';
import type { RegistryState } from '../../../src/registry/model';

type Obj = Record<string, unknown>;
const OPTS = { memoryGovEnforce: true };

function ev(name: string, fields: Record<string, string>, optional: string[] = [], extra: Obj = {}): Obj {
  return { kind: 'event', name, schema: { fields, optional_fields: optional }, ...extra };
}

function table(name: string, upstream: string, key: string[], agg: Obj, extra: Obj = {}): Obj {
  return { kind: 'table', name, upstreams: [upstream], key, agg, ...extra };
}

const TXN = ev('Txn', { user: 'str', card: 'str', amount: 'f64', n: 'i64' }, ['n']);
const AGG = {
  a: { op: 'count', params: { window: '1h' } },
  b: { op: 'sum', params: { field: 'amount', window: '1h' } },
};
const T = table('T', 'Txn', ['user'], AGG);
const BIG = { kind: 'derivation', name: 'Big', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount > 10' }] };
const BT = table('BT', 'Big', ['user'], { c: { op: 'count', params: {} } });

function base(): RegistryState {
  const out = register({ version: 0, nodes: [] }, { nodes: [TXN, BIG, T, BT] }, OPTS);
  assert.ok(out.next !== null);
  return out.next;
}

function fails(fn: () => unknown, code: string): SfError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SfError, String(err));
    assert.equal(err.code, code, `${err.code}: ${err.message}`);
    return err;
  }
  assert.fail(`expected ${code}`);
}

function diffOf(out: RegisterOutcome): { additive: Obj[]; destructive: Obj[] } {
  return out.body.diff as { additive: Obj[]; destructive: Obj[] };
}

/** Registers `nodes` on top of `state` without force: must be a force_required with exactly `items` destructive. */
function destructive(state: RegistryState, nodes: Obj[], items: Obj[]): void {
  const err = fails(() => register(state, { nodes }, OPTS), 'force_required');
  const diff = err.detail.diff as { destructive: Obj[] };
  assert.deepEqual(diff.destructive, items);
  assert.equal(typeof err.detail.reason, 'string');
  assert.equal(err.detail.path, undefined, 'force_required carries no path');
  // With force it applies and bumps the version by one.
  const forced = register(state, { nodes, force: true }, OPTS);
  assert.ok(forced.next !== null);
  assert.equal(forced.next.version, state.version + 1);
  assert.deepEqual(diffOf(forced).destructive, items);
}

test('additive kinds apply without force: new_descriptor (each kind), new_agg, new_field', () => {
  const s = base();
  const out = register(s, {
    nodes: [
      ev('Txn', { user: 'str', card: 'str', amount: 'f64', n: 'i64', country: 'str' }, ['n', 'country']),
      ev('Login', { user: 'str' }),
      { kind: 'derivation', name: 'Small', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount < 1' }] },
      table('L', 'Login', ['user'], { n: { op: 'count', params: {} } }),
      { kind: 'derivation', name: 'L2', output_kind: 'table', upstreams: ['Login'], key: ['user'], agg: { n: { op: 'count', params: {} } } },
      table('T', 'Txn', ['user'], { ...AGG, z: { op: 'max', params: { field: 'amount', window: '1d' } } }),
    ],
  }, OPTS);
  assert.ok(out.next !== null);
  assert.equal(out.next.version, s.version + 1);
  assert.deepEqual(diffOf(out), {
    additive: [
      { kind: 'new_agg', table: 'T', agg: 'z', source: 'max' },
      { kind: 'new_descriptor', descriptor_kind: 'table', name: 'L' },
      { kind: 'new_descriptor', descriptor_kind: 'table', name: 'L2' },
      { kind: 'new_descriptor', descriptor_kind: 'event', name: 'Login' },
      { kind: 'new_descriptor', descriptor_kind: 'derivation', name: 'Small' },
      { kind: 'new_field', event: 'Txn', field: 'country', type: 'str' },
    ],
    destructive: [],
  });
  assert.deepEqual(out.body.added, ['Login', 'Small', 'L', 'L2']);
  assert.deepEqual(out.body.changed, ['Txn', 'T']);
});

test('every destructive kind needs force (409 force_required with the exact items)', () => {
  const s = base();
  // type_change: retype and removal (to "<absent>").
  destructive(s, [ev('Txn', { user: 'str', card: 'str', amount: 'i64', n: 'i64' }, ['n'])],
    [{ kind: 'type_change', field: 'Txn.amount', from: 'f64', to: 'i64' }]);
  destructive(s, [ev('Txn', { user: 'str', amount: 'f64', n: 'i64' }, ['n'])],
    [{ kind: 'type_change', field: 'Txn.card', from: 'str', to: '<absent>' }]);
  // window_change, agg_removal, op_removal (aggregation op, param, where, chain op, upstream).
  destructive(s, [table('T', 'Txn', ['user'], { ...AGG, b: { op: 'sum', params: { field: 'amount', window: '30m' } } })],
    [{ kind: 'window_change', agg: 'T.b', from: '1h', to: '30m' }]);
  destructive(s, [table('T', 'Txn', ['user'], { a: AGG.a })], [{ kind: 'agg_removal', table: 'T', agg: 'b' }]);
  destructive(s, [table('T', 'Txn', ['user'], { ...AGG, b: { op: 'max', params: { field: 'amount', window: '1h' } } })],
    [{ kind: 'op_removal', table: 'T', agg: 'b' }]);
  destructive(s, [table('T', 'Txn', ['user'], { ...AGG, a: { op: 'count', params: { window: '1h', where: 'amount > 1' } } })],
    [{ kind: 'op_removal', table: 'T', agg: 'a' }]);
  destructive(s, [{ ...BIG, ops: [{ op: 'filter', expr: 'amount > 20' }] }], [{ kind: 'op_removal', table: 'Big', agg: 'ops[0]' }]);
  destructive(s, [table('T', 'Txn', ['user'], AGG, { ops: [{ op: 'filter', expr: 'n > 0' }] })],
    [{ kind: 'op_removal', table: 'T', agg: 'ops[0]' }]);
  destructive(s, [table('BT', 'Txn', ['user'], { c: { op: 'count', params: {} } })], [{ kind: 'op_removal', table: 'BT', agg: 'upstreams' }]);
  // key_cols_change (including a reorder of a composite key).
  destructive(s, [table('T', 'Txn', ['card'], AGG)], [{ kind: 'key_cols_change', table: 'T', from: ['user'], to: ['card'] }]);
  const s2 = register(s, { nodes: [table('CU', 'Txn', ['card', 'user'], { k: { op: 'count', params: {} } })] }, OPTS).next!;
  destructive(s2, [table('CU', 'Txn', ['user', 'card'], { k: { op: 'count', params: {} } })],
    [{ kind: 'key_cols_change', table: 'CU', from: ['card', 'user'], to: ['user', 'card'] }]);
  // rename (declared with renamed_from), of a table and of an event source.
  destructive(s, [table('T9', 'Txn', ['user'], AGG, { renamed_from: 'T' })], [{ kind: 'rename', from: 'T', to: 'T9' }]);
  destructive(s, [{ ...TXN, name: 'Payment', renamed_from: 'Txn' }], [{ kind: 'rename', from: 'Txn', to: 'Payment' }]);
});

test('a refused register changes nothing; the same spelling of the same meaning is no change', () => {
  const s = base();
  const before = JSON.stringify(s);
  fails(() => register(s, { nodes: [table('T', 'Txn', ['card'], AGG)] }, OPTS), 'force_required');
  assert.equal(JSON.stringify(s), before);
  // 60m == 1h, avg == mean, a default written out: no diff items (and the shard keeps the state: same signature).
  const same = register(s, { nodes: [table('T', 'Txn', ['user'], { a: { op: 'count', params: { window: '60m' } }, b: { op: 'sum', params: { field: 'amount', window: '3600s' } } })] }, OPTS);
  assert.deepEqual(diffOf(same), { additive: [], destructive: [] });
  assert.equal(same.next!.version, s.version + 1);
});

test('the 409 diff is sorted by (kind, primary field) and byte-identical for identical and permuted inputs', () => {
  const s = register(base(), { nodes: [ev('Login', { user: 'str', ip: 'str' }), table('LT', 'Login', ['user'], { n: { op: 'count', params: {} }, m: { op: 'count', params: { window: '1h' } } })] }, OPTS).next!;
  const nodes: Obj[] = [
    ev('Zeta', { z: 'str' }),
    ev('Alpha', { a: 'str' }),
    ev('Txn', { user: 'str', card: 'i64', amount: 'f64', n: 'i64', zz: 'bool', aa: 'str' }, ['n', 'zz', 'aa']),
    ev('Login', { user: 'str', ip: 'i64' }),
    table('T', 'Txn', ['user', 'card'], { b: { op: 'sum', params: { field: 'amount', window: '2h' } }, y: { op: 'count', params: {} }, c: { op: 'count', params: {} } }),
    table('LT2', 'Login', ['user'], { m: { op: 'count', params: { window: '5m' } } }, { renamed_from: 'LT' }),
    { ...BIG, ops: [{ op: 'filter', expr: 'amount > 11' }] },
  ];
  const run = (ns: Obj[]): string => {
    const err = fails(() => register(s, { nodes: ns }, OPTS), 'force_required');
    return JSON.stringify(err.detail.diff);
  };
  const first = run(nodes);
  assert.equal(run(nodes), first, 'same input, same bytes');
  // Permuted node order (where the topology allows) and permuted agg keys: same bytes.
  const permuted = [nodes[1], nodes[0], nodes[3], nodes[2], table('T', 'Txn', ['user', 'card'], { c: { op: 'count', params: {} }, y: { op: 'count', params: {} }, b: { op: 'sum', params: { field: 'amount', window: '2h' } } }), nodes[6], nodes[5]];
  assert.equal(run(permuted), first, 'order of the payload does not matter');
  const diff = JSON.parse(first) as { additive: Obj[]; destructive: Obj[] };
  const primary: Record<string, string> = {
    new_descriptor: 'name', new_agg: 'table', new_field: 'event', rename: 'from', type_change: 'field',
    op_removal: 'table', agg_removal: 'table', window_change: 'agg', key_cols_change: 'table',
  };
  for (const list of [diff.additive, diff.destructive]) {
    for (let i = 1; i < list.length; i++) {
      const a = [list[i - 1].kind, list[i - 1][primary[String(list[i - 1].kind)]]].map(String);
      const b = [list[i].kind, list[i][primary[String(list[i].kind)]]].map(String);
      assert.ok(a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1]), `${JSON.stringify(list[i - 1])} before ${JSON.stringify(list[i])}`);
    }
  }
  assert.deepEqual(diff.additive, [
    { kind: 'new_agg', table: 'T', agg: 'c', source: 'count' },
    { kind: 'new_agg', table: 'T', agg: 'y', source: 'count' },
    { kind: 'new_descriptor', descriptor_kind: 'event', name: 'Alpha' },
    { kind: 'new_descriptor', descriptor_kind: 'event', name: 'Zeta' },
    { kind: 'new_field', event: 'Txn', field: 'aa', type: 'str' },
    { kind: 'new_field', event: 'Txn', field: 'zz', type: 'bool' },
  ]);
  assert.deepEqual(diff.destructive, [
    { kind: 'agg_removal', table: 'LT2', agg: 'n' },
    { kind: 'agg_removal', table: 'T', agg: 'a' },
    { kind: 'key_cols_change', table: 'T', from: ['user'], to: ['user', 'card'] },
    { kind: 'op_removal', table: 'Big', agg: 'ops[0]' },
    { kind: 'rename', from: 'LT', to: 'LT2' },
    { kind: 'type_change', field: 'Login.ip', from: 'str', to: 'i64' },
    { kind: 'type_change', field: 'Txn.card', from: 'str', to: 'i64' },
    { kind: 'window_change', agg: 'LT2.m', from: '1h', to: '5m' },
    { kind: 'window_change', agg: 'T.b', from: '1h', to: '2h' },
  ]);
  // Each item's members in the order of spec 7.4, `kind` first.
  assert.deepEqual(Object.keys(diff.destructive[2]), ['kind', 'table', 'from', 'to']);
  assert.deepEqual(Object.keys(diff.additive[0]), ['kind', 'table', 'agg', 'source']);
});

test('dry_run previews the diff and mutates nothing; with force it says it would apply', () => {
  const s = base();
  const before = JSON.stringify(s);
  const nodes = [table('T', 'Txn', ['user'], { a: AGG.a, b: { op: 'sum', params: { field: 'amount', window: '2h' } }, c: { op: 'count', params: {} } })];
  const dry = register(s, { nodes, dry_run: true }, OPTS);
  assert.equal(dry.next, null);
  assert.equal(JSON.stringify(s), before);
  assert.deepEqual(dry.body, {
    status: 'ok', dry_run: true, would_apply: false, registry_version: s.version,
    diff: {
      additive: [{ kind: 'new_agg', table: 'T', agg: 'c', source: 'count' }],
      destructive: [{ kind: 'window_change', agg: 'T.b', from: '1h', to: '2h' }],
    },
  });
  const dryForce = register(s, { nodes, dry_run: true, force: true }, OPTS);
  assert.equal(dryForce.next, null);
  assert.equal(dryForce.body.would_apply, true);
  const dryAdd = register(s, { nodes: [ev('New', { x: 'str' })], dry_run: true }, OPTS);
  assert.equal(dryAdd.body.would_apply, true);
  // Validation still runs in a dry run.
  fails(() => register(s, { nodes: [table('Q', 'Txn', ['nope'], AGG)], dry_run: true }, OPTS), 'table_key_invalid');
});

test('merge semantics and the version counter: absent nodes stay, every successful register bumps', () => {
  let s = base();
  const v = s.version;
  const again = register(s, { nodes: [TXN] }, OPTS);
  assert.equal(again.next!.version, v + 1);
  assert.deepEqual(again.body.unchanged, ['Txn']);
  assert.deepEqual(again.next!.nodes.map((n) => n.name), s.nodes.map((n) => n.name), 'nodes absent from the payload are untouched');
  s = again.next!;
  const empty = register(s, { nodes: [] }, OPTS);
  assert.equal(empty.next!.version, v + 2);
  assert.equal(empty.next!.nodes.length, s.nodes.length);
});

test('renames: declared by renamed_from; downstream nodes follow; checks on the declaration', () => {
  const s = base();
  const out = register(s, { nodes: [{ ...TXN, name: 'Payment', renamed_from: 'Txn' }], force: true }, OPTS);
  const names = out.next!.nodes.map((n) => n.name);
  assert.ok(!names.includes('Txn') && names.includes('Payment'));
  for (const n of out.next!.nodes) {
    if (n.name === 'Big' || n.name === 'T') assert.deepEqual(n.upstreams, ['Payment'], `${String(n.name)} follows the rename`);
  }
  assert.deepEqual(out.renames, [['Txn', 'Payment']]);
  // Re-sending the same payload later is idempotent (the node exists under its new name).
  const resend = register(out.next!, { nodes: [{ ...TXN, name: 'Payment', renamed_from: 'Txn' }] }, OPTS);
  assert.deepEqual(diffOf(resend), { additive: [], destructive: [] });
  // renamed_from naming nothing registered: an ordinary new descriptor.
  const fresh = register({ version: 0, nodes: [] }, { nodes: [{ ...TXN, renamed_from: 'Old' }] }, OPTS);
  assert.deepEqual(diffOf(fresh).additive, [{ kind: 'new_descriptor', descriptor_kind: 'event', name: 'Txn' }]);
  // Bad declarations.
  assert.equal(fails(() => register(s, { nodes: [{ ...TXN, name: 'P', renamed_from: 7 }] }, OPTS), 'invalid_registration').detail.path, 'nodes[0].renamed_from');
  fails(() => register(s, { nodes: [{ ...TXN, renamed_from: 'Txn' }] }, OPTS), 'invalid_registration');
  fails(() => register(s, { nodes: [TXN, { ...TXN, name: 'P', renamed_from: 'Txn' }], force: true }, OPTS), 'invalid_registration');
  fails(() => register(s, { nodes: [{ ...TXN, name: 'P', renamed_from: 'Txn' }, { ...TXN, name: 'Q', renamed_from: 'Txn' }], force: true }, OPTS), 'invalid_registration');
  // A rename may not change the kind, even with force.
  fails(() => register(s, { nodes: [table('X', 'Txn', ['user'], AGG, { renamed_from: 'Big' })], force: true }, OPTS), 'registration_conflict');
});

test('kind change: registration_conflict even with force; force_required is reported first', () => {
  const s = base();
  fails(() => register(s, { nodes: [table('Big', 'Txn', ['user'], AGG)], force: true }, OPTS), 'registration_conflict');
  const both = [table('T', 'Txn', ['card'], AGG), table('Big', 'Txn', ['user'], AGG)];
  fails(() => register(s, { nodes: both }, OPTS), 'force_required');
  fails(() => register(s, { nodes: both, force: true }, OPTS), 'registration_conflict');
});
