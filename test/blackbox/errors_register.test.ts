/**
 * Register errors of spec 7.2 about payload structure, node shapes, names,
 * schemas, the graph (cycles, order, upstreams), v0 rejections, force/conflict
 * (409) and media type (415), over real sockets. Expression and aggregation
 * codes are in errors_register_ops.test.ts. Every failed register must leave
 * the registry (and its version) untouched; the last test checks that.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type HttpResult, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_ERROR_RESPONSE, OP_REGISTER } from '../../src/protocol/frame';

const TXN = {
  kind: 'event',
  name: 'Txn',
  schema: { fields: { user: 'str', card: 'str', amount: 'f64', n: 'i64', ok: 'bool', ts: 'datetime' }, optional_fields: ['n'] },
};
const USER_T = {
  kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'],
  agg: { cnt: { op: 'count', params: { window: '1h' } }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } },
};
/** Two chained derived events, so that re-registering the first on the second closes a cycle. */
const D1 = { kind: 'derivation', name: 'D1', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount > 0' }] };
const D2 = { kind: 'derivation', name: 'D2', output_kind: 'event', upstreams: ['D1'], ops: [{ op: 'select', fields: ['user', 'amount'] }] };

/** The seven kinds of spec 7.3 (plus two more = the frozen set of nine). */
const VALIDATION_KINDS = new Set(['cycle', 'missing_upstream', 'schema_mismatch', 'bad_return_type', 'unknown_field_type',
  'table_key_invalid', 'registration_conflict', 'duplicate_name', 'unsupported_node_kind']);

let srv: TestServer;
let version = 0;
let registryText = '';

before(async () => {
  srv = await startServer({ memoryOnly: true });
  const r = await post(srv.base, '/register', { nodes: [TXN, USER_T, D1, D2] });
  assert.equal(r.status, 200, r.text);
  version = r.json.registry_version;
  registryText = (await get(srv.base, '/registry')).text;
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

const register = (body: unknown, headers: Record<string, string> = {}): Promise<HttpResult> => post(srv.base, '/register', body, headers);

/** Status, code, path, message and top-level registry_version of a register error; every `errors` item is well formed. */
function assertRegError(r: HttpResult, status: number, code: string, path?: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  if (path !== undefined) assert.equal(r.json.error.path, path, r.text);
  assert.equal(r.json.registry_version, version, 'register errors carry the current registry_version');
  if (r.json.errors !== undefined) {
    assert.ok(Array.isArray(r.json.errors) && r.json.errors.length > 1, 'an errors list has several items');
    for (const it of r.json.errors) {
      assert.deepEqual(Object.keys(it).sort(), ['kind', 'message', 'path']);
      assert.ok(VALIDATION_KINDS.has(it.kind), `kind ${it.kind} is one of spec 7.3`);
    }
  }
}

async function expectReg(nodes: unknown[], code: string, path?: string, status = 400): Promise<HttpResult> {
  const r = await register({ nodes });
  assertRegError(r, status, code, path);
  return r;
}

const ev = (name: string, fields: Record<string, string>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ kind: 'event', name, schema: { fields, optional_fields: [] }, ...extra });
const table = (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ kind: 'table', name, upstreams: ['Txn'], key: ['user'], agg: { c: { op: 'count' } }, ...extra });
const derived = (name: string, ops: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ kind: 'derivation', name, output_kind: 'event', upstreams: ['Txn'], ops, ...extra });

test('invalid_registration: body and node structure', async () => {
  assertRegError(await register({}), 400, 'invalid_registration', 'nodes');
  assertRegError(await register({ nodes: 'Txn' }), 400, 'invalid_registration', 'nodes');
  assertRegError(await register({ nodes: { a: TXN } }), 400, 'invalid_registration', 'nodes');
  assertRegError(await register([TXN]), 400, 'invalid_registration');
  assertRegError(await register('null'), 400, 'invalid_registration');
  await expectReg([1], 'invalid_registration', 'nodes[0]');
  await expectReg([[TXN]], 'invalid_registration', 'nodes[0]');
  await expectReg([null], 'invalid_registration', 'nodes[0]');
  await expectReg([{ name: 'E', schema: TXN.schema }], 'invalid_registration', 'nodes[0].kind');
  await expectReg([{ kind: 7, name: 'E', schema: TXN.schema }], 'invalid_registration', 'nodes[0].kind');
  await expectReg([{ kind: 'event', schema: TXN.schema }], 'invalid_registration', 'nodes[0].name');
  await expectReg([{ kind: 'event', name: 5, schema: TXN.schema }], 'invalid_registration', 'nodes[0].name');
  assertRegError(await register({ nodes: [], force: 'yes' }), 400, 'invalid_registration', 'force');
  assertRegError(await register({ nodes: [], dry_run: 1 }), 400, 'invalid_registration', 'dry_run');
  await expectReg([{ kind: 'derivation', name: 'X', upstreams: ['Txn'], ops: [] }], 'invalid_registration', 'nodes[0].output_kind');
  await expectReg([table('T', { upstreams: undefined })], 'invalid_registration', 'nodes[0].upstreams');
  await expectReg([table('T', { upstreams: [] })], 'invalid_registration', 'nodes[0].upstreams');
  await expectReg([table('T', { upstreams: ['Txn', 'D1'] })], 'invalid_registration', 'nodes[0].upstreams');
  await expectReg([table('T', { agg: { c: { params: {} } } })], 'invalid_registration', 'nodes[0].agg.c.op');
  await expectReg([derived('X', [{ expr: 'amount > 1' }])], 'invalid_registration', 'nodes[0].ops[0].op');
});

test('schema_invalid: names, unknown keys, optional fields, dedupe settings, schema shape', async () => {
  await expectReg([ev('9bad', { a: 'str' })], 'schema_invalid', 'nodes[0].name');
  await expectReg([ev('has space', { a: 'str' })], 'schema_invalid', 'nodes[0].name');
  await expectReg([ev('', { a: 'str' })], 'schema_invalid', 'nodes[0].name');
  await expectReg([ev('E', { a: 'str' }, { colour: 'red' })], 'schema_invalid', 'nodes[0].colour');
  await expectReg([table('T', { colour: 'red' })], 'schema_invalid', 'nodes[0].colour');
  await expectReg([derived('X', [], { colour: 'red' })], 'schema_invalid', 'nodes[0].colour');
  await expectReg([{ kind: 'event', name: 'E', schema: { fields: { a: 'str' }, optional_fields: ['b'] } }], 'schema_invalid', 'nodes[0].schema.optional_fields');
  await expectReg([{ kind: 'event', name: 'E', schema: { fields: { a: 'str' }, optional_fields: 'a' } }], 'schema_invalid', 'nodes[0].schema.optional_fields');
  await expectReg([ev('E', { a: 'str' }, { dedupe_key: 'a' })], 'schema_invalid', 'nodes[0].dedupe_window');
  await expectReg([ev('E', { a: 'str' }, { dedupe_key: 'zz', dedupe_window: '10m' })], 'schema_invalid', 'nodes[0].dedupe_key');
  await expectReg([ev('E', { a: 'str' }, { dedupe_key: 'a', dedupe_window: '10x' })], 'schema_invalid', 'nodes[0].dedupe_window');
  await expectReg([ev('E', { a: 'str' }, { dedupe_key: 'a', dedupe_window_ms: -5 })], 'schema_invalid', 'nodes[0].dedupe_window_ms');
  await expectReg([{ kind: 'event', name: 'E' }], 'schema_invalid', 'nodes[0].schema');
  await expectReg([{ kind: 'event', name: 'E', schema: { fields: ['a'] } }], 'schema_invalid', 'nodes[0].schema.fields');
  await expectReg([ev('E', {})], 'schema_invalid', 'nodes[0].schema.fields');
  await expectReg([{ kind: 'event', name: 'E', schema: { fields: { a: 'str' }, optional_fields: [], extra: 1 } }], 'schema_invalid', 'nodes[0].schema.extra');
  await expectReg([table('T', { agg: {} })], 'schema_invalid', 'nodes[0].agg');
  await expectReg([table('T', { agg: { 'bad name': { op: 'count' } } })], 'schema_invalid');
  await expectReg([derived('X', 'filter' as unknown as unknown[])], 'schema_invalid', 'nodes[0].ops');
});

test('optional_fields may be omitted or empty; both register', async () => {
  // Spec 2.1 lists optional_fields as required-but-may-be-empty; docs accept it omitted (treated as []).
  const r = await register({ nodes: [{ kind: 'event', name: 'E', schema: { fields: { a: 'str' } } }], dry_run: true });
  assert.equal(r.status, 200, r.text);
});

test('duplicate_name: the same name twice in one call', async () => {
  const r = await expectReg([ev('Dup', { a: 'str' }), ev('Dup', { a: 'str' })], 'duplicate_name', 'nodes[1].name');
  assert.match(r.json.error.message, /nodes\[0\]/);
  await expectReg([ev('Dup', { a: 'str' }), table('Dup')], 'duplicate_name', 'nodes[1].name');
});

test('unsupported_node_kind: upsert, delete, retract and unknown kinds', async () => {
  for (const kind of ['upsert', 'delete', 'retract', 'foo', 'stream', 'Event']) {
    await expectReg([{ kind, name: 'K', schema: TXN.schema }], 'unsupported_node_kind', 'nodes[0].kind');
  }
});

test('unknown_field_type: path descriptors[i].schema.<field>', async () => {
  for (const t of ['int', 'string', 'float', 'i32', 'list', 'STR']) {
    await expectReg([ev('OkEv', { a: 'str' }), ev('E', { x: 'str', bad: t })], 'unknown_field_type', 'descriptors[1].schema.bad');
  }
  await expectReg([{ kind: 'event', name: 'E', schema: { fields: { a: 5 }, optional_fields: [] } }], 'unknown_field_type', 'descriptors[0].schema.a');
});

test('table_key_invalid: empty, non-string, unknown field, f64 field, repeated field, missing', async () => {
  await expectReg([table('T', { key: [] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: [1] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: 'user' })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: ['nope'] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: ['user', 'nope'] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: ['amount'] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: ['user', 'user'] })], 'table_key_invalid', 'nodes[0].key');
  await expectReg([table('T', { key: undefined })], 'table_key_invalid', 'nodes[0].key');
  // A key column dropped by the table's own chain is unknown to the table.
  await expectReg([table('T', { ops: [{ op: 'drop', fields: ['user'] }] })], 'table_key_invalid', 'nodes[0].key');
});

test('bad_return_type: output_kind not event/table; declared derived schema that does not match the chain', async () => {
  await expectReg([derived('X', [], { output_kind: 'stream' })], 'bad_return_type', 'nodes[0].output_kind');
  await expectReg([derived('X', [], { output_kind: 5 })], 'bad_return_type', 'nodes[0].output_kind');
  const sel = [{ op: 'select', fields: ['user', 'amount'] }];
  // A type contradiction is schema_mismatch (a declared str is accepted: peer_dialect.test.ts).
  await expectReg([derived('X', sel, { schema: { fields: { user: 'str', amount: 'i64' }, optional_fields: [] } })], 'schema_mismatch', 'nodes[0].schema.amount');
  await expectReg([derived('X', sel, { schema: { fields: { user: 'str' }, optional_fields: [] } })], 'bad_return_type', 'nodes[0].schema');
  await expectReg([derived('X', sel, { schema: { fields: { user: 'str', amount: 'f64', extra: 'str' }, optional_fields: [] } })], 'bad_return_type', 'nodes[0].schema');
  const good = await register({ nodes: [derived('X', sel, { schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } })], dry_run: true });
  assert.equal(good.status, 200, good.text);
});

test('unknown_op: chain op not in filter/with_columns/select/drop/rename', async () => {
  for (const op of ['explode', 'flat_map', 'group_by_key', 'window']) {
    await expectReg([derived('X', [{ op }])], 'unknown_op', 'nodes[0].ops[0].op');
  }
});

test('schema_propagation_failure: select/drop/rename of a column the chain does not produce', async () => {
  await expectReg([derived('X', [{ op: 'select', fields: ['nope'] }])], 'schema_propagation_failure', 'nodes[0].ops[0].fields');
  await expectReg([derived('X', [{ op: 'drop', fields: ['nope'] }])], 'schema_propagation_failure', 'nodes[0].ops[0].fields');
  await expectReg([derived('X', [{ op: 'rename', mapping: { nope: 'x' } }])], 'schema_propagation_failure', 'nodes[0].ops[0].mapping.nope');
  await expectReg([derived('X', [{ op: 'rename', mapping: { user: 'card' } }])], 'schema_propagation_failure', 'nodes[0].ops[0].mapping.user');
  // A column removed by an earlier op is gone for the later ones.
  await expectReg([derived('X', [{ op: 'select', fields: ['user'] }, { op: 'select', fields: ['amount'] }])], 'schema_propagation_failure', 'nodes[0].ops[1].fields');
  // And for a downstream node.
  await expectReg([table('T', { upstreams: ['D2'], agg: { s: { op: 'sum', params: { field: 'card', window: '1h' } } } })], 'schema_propagation_failure', 'nodes[0].agg.s.params.field');
});

test('cycle: inside one payload (A <- B <- A, and a self loop)', async () => {
  const a = { kind: 'derivation', name: 'CA', output_kind: 'event', upstreams: ['CB'], ops: [] };
  const b = { kind: 'derivation', name: 'CB', output_kind: 'event', upstreams: ['CA'], ops: [] };
  const r = await expectReg([a, b], 'cycle', 'nodes[0].upstreams[0]');
  assert.match(r.json.error.message, /cycle/);
  await expectReg([{ ...a, upstreams: ['CA'] }], 'cycle', 'nodes[0].upstreams[0]');
  const c = { kind: 'derivation', name: 'CC', output_kind: 'event', upstreams: ['CA'], ops: [] };
  await expectReg([{ ...a, upstreams: ['CC'] }, b, { ...c, upstreams: ['CB'] }], 'cycle');
});

test('registration_cycle: re-registering a node so that the merged registry cycles', async () => {
  // D2 reads D1; making D1 read D2 closes D1 <- D2 <- D1 only with the registry.
  const r = await expectReg([{ ...D1, upstreams: ['D2'] }], 'registration_cycle');
  assert.match(r.json.error.message, /D1/);
  assert.match(r.json.error.message, /D2/);
  // Force does not help.
  assertRegError(await register({ nodes: [{ ...D1, upstreams: ['D2'] }], force: true }), 400, 'registration_cycle');
});

test('missing_upstream: neither in the payload nor registered', async () => {
  await expectReg([table('T', { upstreams: ['Ghost'] })], 'missing_upstream', 'nodes[0].upstreams[0]');
  await expectReg([derived('X', [], { upstreams: ['Ghost'] })], 'missing_upstream', 'nodes[0].upstreams[0]');
});

test('topological_order_violation: an upstream listed after its downstream', async () => {
  const r = await expectReg([table('T', { upstreams: ['Late'] }), ev('Late', { user: 'str' })], 'topological_order_violation', 'nodes[0].upstreams[0]');
  assert.match(r.json.error.message, /nodes\[1\]/);
  // Upstreams first is fine.
  const ok = await register({ nodes: [ev('Late', { user: 'str' }), table('T', { upstreams: ['Late'] })], dry_run: true });
  assert.equal(ok.status, 200, ok.text);
});

test('aggregation_on_table_not_supported: a table (or derived event) over a table', async () => {
  await expectReg([table('T2', { upstreams: ['UserT'] })], 'aggregation_on_table_not_supported', 'nodes[0].upstreams[0]');
  await expectReg([derived('X', [], { upstreams: ['UserT'] })], 'aggregation_on_table_not_supported', 'nodes[0].upstreams[0]');
  await expectReg([table('T1'), table('T2', { upstreams: ['T1'] })], 'aggregation_on_table_not_supported', 'nodes[1].upstreams[0]');
});

test('event_time_not_supported_in_v0: an event_time schema field; top-level event_time_field / tolerate_delay_ms', async () => {
  await expectReg([ev('E', { a: 'str', event_time: 'datetime' })], 'event_time_not_supported_in_v0', 'descriptors[0].schema.event_time');
  await expectReg([ev('E', { a: 'str', event_time_ms: 'i64' })], 'event_time_not_supported_in_v0', 'descriptors[0].schema.event_time_ms');
  assertRegError(await register({ nodes: [ev('E', { a: 'str' })], event_time_field: 'a' }), 400, 'event_time_not_supported_in_v0', 'event_time_field');
  assertRegError(await register({ nodes: [ev('E', { a: 'str' })], tolerate_delay_ms: 1000 }), 400, 'event_time_not_supported_in_v0', 'tolerate_delay_ms');
});

test('unknown_field_event_time_v0 and unknown_field_tolerate_delay_v0: the keys inside a node, an op or agg params', async () => {
  await expectReg([ev('E', { a: 'str', ts: 'datetime' }, { event_time_field: 'ts' })], 'unknown_field_event_time_v0', 'nodes[0].event_time_field');
  await expectReg([table('T', { event_time_field: 'ts' })], 'unknown_field_event_time_v0', 'nodes[0].event_time_field');
  await expectReg([ev('E', { a: 'str' }, { tolerate_delay_ms: 500 })], 'unknown_field_tolerate_delay_v0', 'nodes[0].tolerate_delay_ms');
  await expectReg([table('T', { tolerate_delay_ms: 500 })], 'unknown_field_tolerate_delay_v0', 'nodes[0].tolerate_delay_ms');
  await expectReg([table('T', { agg: { c: { op: 'count', params: { tolerate_delay_ms: 5 } } } })], 'unknown_field_tolerate_delay_v0', 'nodes[0].agg.c.params.tolerate_delay_ms');
  await expectReg([derived('X', [{ op: 'filter', expr: 'amount > 0', event_time_field: 'ts' }])], 'unknown_field_event_time_v0', 'nodes[0].ops[0].event_time_field');
});

test('feature_removed_no_joins_v0 and feature_removed_no_unions_v0', async () => {
  await expectReg([derived('X', [{ op: 'join', with: 'D1', on: ['user'] }])], 'feature_removed_no_joins_v0', 'nodes[0].ops[0]');
  await expectReg([table('T', { ops: [{ op: 'join', with: 'D1' }] })], 'feature_removed_no_joins_v0', 'nodes[0].ops[0]');
  await expectReg([derived('X', [{ op: 'union', with: ['D1'] }])], 'feature_removed_no_unions_v0', 'nodes[0].ops[0]');
  await expectReg([derived('X', [{ op: 'filter', expr: 'ok' }, { op: 'union' }])], 'feature_removed_no_unions_v0', 'nodes[0].ops[1]');
});

test('session_windows_not_supported_in_v0: session ops, session windows, session keys', async () => {
  await expectReg([table('T', { agg: { s: { op: 'session_count', params: {} } } })], 'session_windows_not_supported_in_v0', 'nodes[0].agg.s.op');
  await expectReg([table('T', { agg: { s: { op: 'count', params: { window: 'session' } } } })], 'session_windows_not_supported_in_v0', 'nodes[0].agg.s.params.window');
  await expectReg([table('T', { agg: { s: { op: 'count', params: { session_gap: '5m' } } } })], 'session_windows_not_supported_in_v0', 'nodes[0].agg.s.params.session_gap');
  await expectReg([derived('X', [{ op: 'session_window', gap: '5m' }])], 'session_windows_not_supported_in_v0', 'nodes[0].ops[0]');
  await expectReg([table('T', { session_gap: '5m' })], 'session_windows_not_supported_in_v0', 'nodes[0].session_gap');
});

test('unsupported_media_type: 415 unless Content-Type is application/json', async () => {
  const body = JSON.stringify({ nodes: [ev('Media', { a: 'str' })] });
  for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'application/jsonx', 'text/json']) {
    const r = await register(body, { 'content-type': ct });
    assertRegError(r, 415, 'unsupported_media_type');
  }
  const res = await fetch(`${srv.base}/register`, { method: 'POST', body: new Uint8Array(Buffer.from(body)) });
  const text = await res.text();
  assert.equal(res.status, 415, text);
  assert.equal(JSON.parse(text).error.code, 'unsupported_media_type');
  // Parameters and case are fine.
  const ok = await register(JSON.stringify({ nodes: [], dry_run: true }), { 'content-type': 'Application/JSON; charset=utf-8' });
  assert.equal(ok.status, 200, ok.text);
});

test('register errors over TCP (OP_REGISTER): op 0xFFFF with the HTTP envelope; no media-type check on TCP', async () => {
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (const nodes of [[{ kind: 'upsert', name: 'K' }], [ev('E', { a: 'int' })], [table('T', { upstreams: ['Ghost'] })]]) {
      const h = await register({ nodes });
      const t = await tcp.request(OP_REGISTER, { nodes });
      assert.equal(t.op, OP_ERROR_RESPONSE);
      assert.equal(t.text, h.text);
    }
    const ok = await tcp.request(OP_REGISTER, { nodes: [], dry_run: true });
    assert.equal(ok.op, OP_REGISTER, ok.text);
    assert.equal(ok.json.dry_run, true);
  } finally {
    tcp.close();
  }
});

test('several failures: first is the envelope, every failure is an errors item {kind, path, message} of spec 7.3', async () => {
  const r = await register({
    nodes: [
      { kind: 'upsert', name: 'K' },
      ev('E', { a: 'int' }),
      table('T', { upstreams: ['Ghost'] }),
      ev('Twice', { a: 'str' }),
      ev('Twice', { a: 'str' }),
      table('TK', { key: [] }),
    ],
  });
  assertRegError(r, 400, 'unsupported_node_kind', 'nodes[0].kind');
  const items = r.json.errors as Array<{ kind: string; path: string; message: string }>;
  const byPath = new Map(items.map((it) => [it.path, it.kind]));
  assert.equal(byPath.get('nodes[0].kind'), 'unsupported_node_kind');
  assert.equal(byPath.get('descriptors[1].schema.a'), 'unknown_field_type');
  assert.equal(byPath.get('nodes[2].upstreams[0]'), 'missing_upstream');
  assert.equal(byPath.get('nodes[4].name'), 'duplicate_name');
  assert.equal(byPath.get('nodes[5].key'), 'table_key_invalid');
  assert.equal(items.length, 5, JSON.stringify(items));
  // Compile-stage failures are collected too (several features of one table).
  const c = await register({
    nodes: [table('TC', { agg: { a: { op: 'sum', params: { field: 'amount' } }, b: { op: 'nope' }, c: { op: 'count', params: { where: 'amount +' } } } })],
  });
  assertRegError(c, 400, 'aggregation_invalid_window', 'nodes[0].agg.a.params.window');
  assert.equal(c.json.errors.length, 3, c.text);
  assert.deepEqual(c.json.errors.map((it: { path: string }) => it.path), ['nodes[0].agg.a.params.window', 'nodes[0].agg.b.op', 'nodes[0].agg.c.params.where']);
  // A single failure has no errors list.
  const one = await expectReg([ev('E', { a: 'int' })], 'unknown_field_type');
  assert.equal('errors' in one.json, false);
});

test('registration_conflict: 409 when a node changes kind, even with force', async () => {
  const asTable = { kind: 'table', name: 'Txn', upstreams: ['D1'], key: ['user'], agg: { c: { op: 'count' } } };
  const r = await expectReg([asTable], 'registration_conflict', 'nodes[0].kind', 409);
  assert.match(r.json.error.message, /Txn/);
  assertRegError(await register({ nodes: [asTable], force: true }), 409, 'registration_conflict', 'nodes[0].kind');
  await expectReg([{ ...ev('UserT', { user: 'str' }) }], 'registration_conflict', 'nodes[0].kind', 409);
  await expectReg([{ ...D1, output_kind: 'table', key: ['user'], agg: { c: { op: 'count' } } }], 'registration_conflict', 'nodes[0].kind', 409);
});

test('verdict order of spec 7.2: force_required is checked before registration_conflict; with force the conflict remains', async () => {
  const both = [
    { ...USER_T, agg: { ...USER_T.agg, cnt: { op: 'count', params: { window: '3h' } } } },
    { kind: 'table', name: 'D2', upstreams: ['Txn'], key: ['user'], agg: { c: { op: 'count' } } },
  ];
  const r = await register({ nodes: both });
  assertRegError(r, 409, 'force_required');
  const f = await register({ nodes: both, force: true });
  assertRegError(f, 409, 'registration_conflict', 'nodes[1].kind');
});

test('force_required: 409 body per spec 7.4, sorted diff, byte-identical on repeat; dry_run previews it', async () => {
  const changed = {
    ...USER_T,
    key: ['card'],
    agg: {
      cnt: { op: 'count', params: { window: '2h' } },
      avg: { op: 'mean', params: { field: 'amount', window: '1h' } },
      amax: { op: 'max', params: { field: 'amount', window: '1h' } },
    },
  };
  const payload = { nodes: [{ ...TXN, schema: { fields: { ...TXN.schema.fields, n: 'f64', zz: 'str' }, optional_fields: ['n', 'zz'] } }, changed] };
  const r = await register(payload);
  assertRegError(r, 409, 'force_required');
  const e = r.json.error;
  assert.equal('path' in e, false, 'force_required has no path');
  assert.equal(typeof e.reason, 'string');
  assert.ok(e.reason.length > 0);
  assert.deepEqual(e.diff.additive, [
    { kind: 'new_agg', table: 'UserT', agg: 'amax', source: 'max' },
    { kind: 'new_agg', table: 'UserT', agg: 'avg', source: 'mean' },
    { kind: 'new_field', event: 'Txn', field: 'zz', type: 'str' },
  ]);
  assert.deepEqual(e.diff.destructive, [
    { kind: 'agg_removal', table: 'UserT', agg: 'total' },
    { kind: 'key_cols_change', table: 'UserT', from: ['user'], to: ['card'] },
    { kind: 'type_change', field: 'Txn.n', from: 'i64', to: 'f64' },
    { kind: 'window_change', agg: 'UserT.cnt', from: '1h', to: '2h' },
  ]);
  const again = await register(payload);
  assert.equal(again.text, r.text, 'identical inputs give byte-identical bodies');
  // The same over TCP.
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    const t = await tcp.request(OP_REGISTER, payload);
    assert.equal(t.op, OP_ERROR_RESPONSE);
    assert.equal(t.text, r.text);
  } finally {
    tcp.close();
  }
  // A dry run shows the same diff and would not apply without force.
  const dry = await register({ ...payload, dry_run: true });
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(dry.json, { status: 'ok', dry_run: true, would_apply: false, registry_version: version, diff: e.diff });
  const dryForce = await register({ ...payload, dry_run: true, force: true });
  assert.equal(dryForce.json.would_apply, true);
  // One destructive item alone: a window change.
  const w = await expectReg([{ ...USER_T, agg: { ...USER_T.agg, cnt: { op: 'count', params: { window: '5m' } } } }], 'force_required', undefined, 409);
  assert.deepEqual(w.json.error.diff, { additive: [], destructive: [{ kind: 'window_change', agg: 'UserT.cnt', from: '1h', to: '5m' }] });
  // Removing a field is a type_change to "<absent>"; changing an op is an op_removal.
  const rm = await expectReg([{ ...TXN, schema: { fields: { user: 'str', card: 'str', amount: 'f64', n: 'i64', ok: 'bool' }, optional_fields: ['n'] } }], 'force_required', undefined, 409);
  assert.deepEqual(rm.json.error.diff.destructive, [{ kind: 'type_change', field: 'Txn.ts', from: 'datetime', to: '<absent>' }]);
  const op = await expectReg([{ ...USER_T, agg: { ...USER_T.agg, total: { op: 'mean', params: { field: 'amount', window: 'forever' } } } }], 'force_required', undefined, 409);
  assert.deepEqual(op.json.error.diff.destructive, [{ kind: 'op_removal', table: 'UserT', agg: 'total' }]);
});

test('an over-deep JSON value inside a register payload is invalid_registration, not internal_error', async () => {
  const deep = '['.repeat(20_000) + ']'.repeat(20_000);
  const r = await register(`{"nodes":[{"kind":"event","name":"Deep","description":${deep},"schema":{"fields":{"a":"str"},"optional_fields":[]}}]}`);
  assertRegError(r, 400, 'invalid_registration');
  assert.match(r.json.error.message, /nested deeper than 64/);
  const w = await register(`{"nodes":[{"kind":"table","name":"T","upstreams":["Txn"],"key":["user"],"agg":{"c":{"op":"count","params":{"window":${deep}}}}}]}`);
  assertRegError(w, 400, 'invalid_registration');
});

test('every failed register above left the registry and its version untouched', async () => {
  const g = await get(srv.base, '/registry');
  assert.equal(g.text, registryText);
  const p = await post(srv.base, '/ping', '');
  assert.equal(p.json.registry_version, version);
});
