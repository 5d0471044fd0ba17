/**
 * Register rules of spec 2.8, 4.2 and docs/registry.md over real sockets:
 * registry_version (starts at 0, +1 per successful register including no-op
 * ones, never on failures or dry runs), merge semantics, the success body,
 * additive changes without force, force applying destructive ones (and which
 * state survives), dry runs that change nothing, declared renames.
 */
import { beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type HttpResult, serverForFile } from '../harness/server';

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } };
const USER_T = {
  kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'],
  agg: { cnt: { op: 'count', params: { window: '1h' } }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } },
};

const srv = serverForFile({ memoryOnly: true });

/** Each test starts from an empty registry; returns nothing (versions keep counting). */
beforeEach(async () => {
  const r = await post(srv.base, '/reset', '');
  assert.equal(r.status, 200, r.text);
});

const register = (body: unknown): Promise<HttpResult> => post(srv.base, '/register', body);
const version = async (): Promise<number> => (await post(srv.base, '/ping', '')).json.registry_version;
const push = async (user: string, amount: number): Promise<HttpResult> => {
  const r = await post(srv.base, '/push', { event: 'Txn', data: { user, amount } });
  assert.equal(r.status, 200, r.text);
  return r;
};
const row = async (table: string, key: unknown): Promise<unknown> => (await post(srv.base, '/get', { table, key })).json;

test('a fresh server starts at registry_version 0; every successful register adds exactly 1', async () => {
  const fresh = await startServer({ memoryOnly: true });
  try {
    assert.equal((await get(fresh.base, '/registry')).json.registry_version, 0);
    const a = await post(fresh.base, '/register', { nodes: [TXN] });
    assert.equal(a.json.registry_version, 1);
    const b = await post(fresh.base, '/register', { nodes: [USER_T] });
    assert.equal(b.json.registry_version, 2);
    const same = await post(fresh.base, '/register', { nodes: [TXN, USER_T] });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.json.registry_version, 3, 'a register that changes nothing still counts');
    assert.deepEqual(same.json.unchanged, ['Txn', 'UserT']);
    const empty = await post(fresh.base, '/register', { nodes: [] });
    assert.equal(empty.json.registry_version, 4);
    const bad = await post(fresh.base, '/register', { nodes: [{ kind: 'foo', name: 'X' }] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.registry_version, 4, 'a failed register does not count');
    const dry = await post(fresh.base, '/register', { nodes: [{ ...TXN, name: 'Other' }], dry_run: true });
    assert.equal(dry.json.registry_version, 4, 'a dry run does not count');
    assert.equal((await post(fresh.base, '/ping', '')).json.registry_version, 4);
    const p = await post(fresh.base, '/push', { event: 'Txn', data: { user: 'u', amount: 1 } });
    assert.equal(p.json.registry_version, 4, 'acks carry the current version');
  } finally {
    await fresh.stop();
    fresh.cleanup();
  }
});

test('success body: status, registry_version, added / changed / unchanged, sorted diff', async () => {
  const v = await version();
  const r = await register({ nodes: [TXN, USER_T] });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, {
    status: 'ok', registry_version: v + 1, added: ['Txn', 'UserT'], changed: [], unchanged: [],
    diff: { additive: [{ kind: 'new_descriptor', descriptor_kind: 'event', name: 'Txn' }, { kind: 'new_descriptor', descriptor_kind: 'table', name: 'UserT' }], destructive: [] },
    already_present: [], registered_descriptors: ['Txn', 'UserT'],
  });
  const d = { kind: 'derivation', name: 'Big', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount > 100' }] };
  const r2 = await register({ nodes: [TXN, { ...USER_T, agg: { ...USER_T.agg, mx: { op: 'max', params: { field: 'amount', window: '1h' } } } }, d] });
  assert.equal(r2.status, 200, r2.text);
  assert.deepEqual(r2.json.added, ['Big']);
  assert.deepEqual(r2.json.changed, ['UserT']);
  assert.deepEqual(r2.json.unchanged, ['Txn']);
  assert.deepEqual(r2.json.diff, {
    additive: [{ kind: 'new_agg', table: 'UserT', agg: 'mx', source: 'max' }, { kind: 'new_descriptor', descriptor_kind: 'derivation', name: 'Big' }],
    destructive: [],
  });
});

test('merge semantics: nodes absent from a payload stay registered and keep their state', async () => {
  await register({ nodes: [TXN, USER_T] });
  await push('m', 5);
  const other = { kind: 'event', name: 'Click', schema: { fields: { user: 'str' }, optional_fields: [] } };
  const r = await register({ nodes: [other] });
  assert.deepEqual(r.json.added, ['Click']);
  const names = (await get(srv.base, '/registry')).json.nodes.map((n: { name: string }) => n.name);
  assert.deepEqual(names, ['Txn', 'UserT', 'Click']);
  assert.deepEqual(await row('UserT', 'm'), { cnt: 1, total: 5 });
});

test('additive changes apply without force: new field, new aggregation, new descriptor; state is kept', async () => {
  await register({ nodes: [TXN, USER_T] });
  await push('a', 3);
  const txn2 = { ...TXN, schema: { fields: { user: 'str', amount: 'f64', country: 'str' }, optional_fields: ['country'] } };
  const t2 = { ...USER_T, agg: { ...USER_T.agg, mx: { op: 'max', params: { field: 'amount', window: '1h' } } } };
  const r = await register({ nodes: [txn2, t2] });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.diff.additive, [
    { kind: 'new_agg', table: 'UserT', agg: 'mx', source: 'max' },
    { kind: 'new_field', event: 'Txn', field: 'country', type: 'str' },
  ]);
  assert.deepEqual(r.json.diff.destructive, []);
  const p = await post(srv.base, '/push', { event: 'Txn', data: { user: 'a', amount: 4, country: 'FR' } });
  assert.equal(p.status, 200, p.text);
  assert.deepEqual(await row('UserT', 'a'), { cnt: 2, total: 7, mx: 4 }, 'old features kept state; the new one starts now');
});

test('force applies destructive changes: the changed feature loses its state, the others keep it', async () => {
  await register({ nodes: [TXN, USER_T] });
  await push('f', 2);
  await push('f', 3);
  const v = await version();
  const changed = { ...USER_T, agg: { ...USER_T.agg, cnt: { op: 'count', params: { window: '2h' } } } };
  const no = await register({ nodes: [changed] });
  assert.equal(no.status, 409);
  assert.equal(no.json.error.code, 'force_required');
  assert.equal(await version(), v);
  assert.deepEqual(await row('UserT', 'f'), { cnt: 2, total: 5 }, 'a refused change changes nothing');
  const yes = await register({ nodes: [changed], force: true });
  assert.equal(yes.status, 200, yes.text);
  assert.equal(yes.json.registry_version, v + 1);
  assert.deepEqual(yes.json.changed, ['UserT']);
  assert.deepEqual(yes.json.diff.destructive, [{ kind: 'window_change', agg: 'UserT.cnt', from: '1h', to: '2h' }]);
  assert.deepEqual((await get(srv.base, '/registry')).json.nodes[1], changed);
  await push('f', 10);
  assert.deepEqual(await row('UserT', 'f'), { cnt: 1, total: 15 });
});

test('force with an aggregation removal and a key change', async () => {
  await register({ nodes: [{ ...TXN, schema: { fields: { user: 'str', card: 'str', amount: 'f64' }, optional_fields: [] } }, USER_T] });
  await post(srv.base, '/push', { event: 'Txn', data: { user: 'k', card: 'c1', amount: 1 } });
  const rekeyed = { ...USER_T, key: ['card'], agg: { total: USER_T.agg.total } };
  const r = await register({ nodes: [rekeyed], force: true });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.diff.destructive, [
    { kind: 'agg_removal', table: 'UserT', agg: 'cnt' },
    { kind: 'key_cols_change', table: 'UserT', from: ['user'], to: ['card'] },
  ]);
  await post(srv.base, '/push', { event: 'Txn', data: { user: 'k', card: 'c1', amount: 2 } });
  assert.deepEqual(await row('UserT', 'c1'), { total: 2 }, 're-keyed features start empty');
  const g = await post(srv.base, '/get', { table: 'UserT', key: 'k', features: ['cnt'] });
  assert.equal(g.json.error.code, 'feature_not_found', 'a removed feature is gone');
});

test('dry_run changes nothing: no version bump, no new node, no state change, not pushable', async () => {
  await register({ nodes: [TXN, USER_T] });
  await push('d', 1);
  const before = (await get(srv.base, '/registry')).text;
  const click = { kind: 'event', name: 'Click', schema: { fields: { user: 'str' }, optional_fields: [] } };
  const changed = { ...USER_T, agg: { cnt: { op: 'count', params: { window: '5m' } } } };
  const dry = await register({ nodes: [click, changed], dry_run: true, force: true });
  assert.equal(dry.status, 200, dry.text);
  assert.equal(dry.json.dry_run, true);
  assert.equal(dry.json.would_apply, true);
  assert.deepEqual(dry.json.diff.additive, [{ kind: 'new_descriptor', descriptor_kind: 'event', name: 'Click' }]);
  assert.deepEqual(dry.json.diff.destructive, [
    { kind: 'agg_removal', table: 'UserT', agg: 'total' },
    { kind: 'window_change', agg: 'UserT.cnt', from: '1h', to: '5m' },
  ]);
  assert.equal((await get(srv.base, '/registry')).text, before);
  const p = await post(srv.base, '/push', { event: 'Click', data: { user: 'd' } });
  assert.equal(p.json.error.code, 'event_not_found');
  assert.deepEqual(await row('UserT', 'd'), { cnt: 1, total: 1 });
  // A dry run still validates.
  const bad = await register({ nodes: [{ kind: 'event', name: 'E', schema: { fields: { a: 'int' } } }], dry_run: true });
  assert.equal(bad.json.error.code, 'unknown_field_type');
});

test('a declared rename (renamed_from) is destructive; with force the table keeps its state and follows the new name', async () => {
  await register({ nodes: [TXN, USER_T] });
  await push('r', 4);
  const renamed = { ...USER_T, name: 'UserStats', renamed_from: 'UserT' };
  const no = await register({ nodes: [renamed] });
  assert.equal(no.status, 409);
  assert.deepEqual(no.json.error.diff.destructive, [{ kind: 'rename', from: 'UserT', to: 'UserStats' }]);
  const yes = await register({ nodes: [renamed], force: true });
  assert.equal(yes.status, 200, yes.text);
  const names = (await get(srv.base, '/registry')).json.nodes.map((n: { name: string }) => n.name);
  assert.deepEqual(names, ['Txn', 'UserStats']);
  assert.equal((await post(srv.base, '/get', { table: 'UserT', key: 'r' })).json.error.code, 'unknown_table');
  assert.deepEqual(await row('UserStats', 'r'), { cnt: 1, total: 4 });
  // Renaming into another kind is a conflict.
  const conflict = await register({ nodes: [{ ...TXN, name: 'Txn2', renamed_from: 'UserStats' }], force: true });
  assert.equal(conflict.status, 409);
  assert.equal(conflict.json.error.code, 'registration_conflict');
});

test('an event field type change needs force; with force pushes follow the new schema', async () => {
  await register({ nodes: [TXN, USER_T] });
  const t2 = { ...TXN, schema: { fields: { user: 'str', amount: 'i64' }, optional_fields: [] } };
  const no = await register({ nodes: [t2, USER_T] });
  assert.equal(no.status, 409);
  assert.deepEqual(no.json.error.diff.destructive, [{ kind: 'type_change', field: 'Txn.amount', from: 'f64', to: 'i64' }]);
  const yes = await register({ nodes: [t2, USER_T], force: true });
  assert.equal(yes.status, 200, yes.text);
  const bad = await post(srv.base, '/push', { event: 'Txn', data: { user: 'x', amount: 1.5 } });
  assert.equal(bad.json.error.code, 'schema_mismatch');
  assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'x', amount: 2 } })).status, 200);
});

test('a derived event can be pushed to by name and feeds tables downstream (spec 2.2)', async () => {
  const big = { kind: 'derivation', name: 'Big', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount > 100' }, { op: 'select', fields: ['user', 'amount'] }] };
  const bigT = { kind: 'table', name: 'BigT', upstreams: ['Big'], key: ['user'], agg: { n: { op: 'count' } } };
  const r = await register({ nodes: [TXN, big, bigT] });
  assert.equal(r.status, 200, r.text);
  await push('g', 5);
  await push('g', 500);
  const direct = await post(srv.base, '/push', { event: 'Big', data: { user: 'g', amount: 1 } });
  assert.equal(direct.status, 200, direct.text);
  assert.deepEqual(await row('BigT', 'g'), { n: 2 });
  const wrong = await post(srv.base, '/push', { event: 'Big', data: { user: 'g', amount: 1, extra: 1 } });
  assert.equal(wrong.json.error.code, 'unknown_field_v0');
});
