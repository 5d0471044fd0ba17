/**
 * Issue 14's spec readings and peer forms (docs/compatibility.md), each over HTTP
 * and framed TCP: kind:table nodes with derivation fields, batch_get body shapes,
 * null settings, server_version, declared str columns, entity_id, and the peer
 * forms the interface spec rules out (empty table key, the `json` type).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, type HttpResult, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET_RESPONSE, OP_PING, OP_REGISTER } from '../../src/protocol/frame';
import { PACKAGE_VERSION } from '../harness/package_version';

let srv: TestServer;
let tcp: TcpClient;

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64', id: 'str' }, optional_fields: [] } };

before(async () => {
  srv = await startServer({ memoryOnly: true });
  tcp = await TcpClient.connect(srv.tcpPort);
  const r = await post(srv.base, '/register', { nodes: [TXN] });
  assert.equal(r.status, 200, r.text);
});

after(async () => {
  tcp.close();
  await srv.stop();
  srv.cleanup();
});

/** Registers over HTTP or TCP and returns {ok, body} (body: the success or error JSON). */
async function register(via: 'http' | 'tcp', body: unknown): Promise<{ ok: boolean; json: any; text: string }> {
  if (via === 'http') {
    const r: HttpResult = await post(srv.base, '/register', body);
    return { ok: r.status === 200, json: r.json, text: r.text };
  }
  const t = await tcp.request(OP_REGISTER, body);
  assert.ok(t.op === OP_REGISTER || t.op === OP_ERROR_RESPONSE, `reply op ${t.op}`);
  return { ok: t.op === OP_REGISTER, json: t.json, text: t.text };
}

const VIAS = ['http', 'tcp'] as const;

test('item 1: a kind:table node sent with the derivation fields (output_kind, ops: []) is accepted', async () => {
  for (const via of VIAS) {
    const node = { kind: 'table', output_kind: 'table', ops: [], upstreams: ['Txn'], key: ['user'], agg: { [`n_${via}`]: { op: 'count', params: {} } }, name: `KT_${via}` };
    const r = await register(via, { nodes: [node] });
    assert.ok(r.ok, `${via}: ${r.text}`);
    assert.deepEqual(r.json.added, [`KT_${via}`]);
    // The peer's group_by form under kind:table too, with table_primary_key agreeing.
    const g = await register(via, { nodes: [{ kind: 'table', name: `KG_${via}`, output_kind: 'table', upstreams: ['Txn'], table_primary_key: ['user'], ops: [{ op: 'group_by', keys: ['user'], agg: { [`g_${via}`]: { op: 'count' } } }] }] });
    assert.ok(g.ok, `${via}: ${g.text}`);
    // output_kind event contradicts kind table.
    const bad = await register(via, { nodes: [{ ...node, name: `KB_${via}`, output_kind: 'event' }] });
    assert.equal(bad.ok, false);
    assert.equal(bad.json.error.code, 'schema_invalid');
    assert.equal(bad.json.error.path, 'nodes[0].output_kind');
    // Two keys that disagree.
    const two = await register(via, { nodes: [{ ...node, name: `KK_${via}`, table_primary_key: ['id'] }] });
    assert.equal(two.json.error.code, 'table_key_invalid', two.text);
  }
  await post(srv.base, '/push', { event: 'Txn', data: { user: 'kt', amount: 1, id: 'x' } });
  assert.deepEqual((await post(srv.base, '/get', { table: 'KT_http', key: 'kt' })).json, { n_http: 1 });
  assert.deepEqual((await post(srv.base, '/get', { table: 'KG_tcp', key: 'kt' })).json, { g_tcp: 1 });
});

test('item 3: /batch_get with a bare array or any other wrong shape is a coded 400, never a row (HTTP and TCP)', async () => {
  const entry = { table: 'KT_http', key: 'kt' };
  const shapes: unknown[] = [[entry], [], {}, { requests: entry }, { requests: 'KT_http' }, { request: [entry] }, 'KT_http', 42, null, true];
  for (const body of shapes) {
    const h = await post(srv.base, '/batch_get', JSON.stringify(body));
    assert.equal(h.status, 400, `${JSON.stringify(body)}: ${h.text}`);
    assert.equal(h.json.error.code, 'unsupported_request_shape', h.text);
    assert.equal(h.json.results, undefined);
    const t = await tcp.request(OP_BATCH_GET, JSON.stringify(body));
    assert.equal(t.op, OP_ERROR_RESPONSE, `${JSON.stringify(body)}: ${t.text}`);
    assert.equal(t.text, h.text, 'same envelope over both transports');
  }
  const ok = await tcp.request(OP_BATCH_GET, { requests: [entry] });
  assert.equal(ok.op, OP_GET_RESPONSE);
  assert.deepEqual(ok.json, { results: [{ n_http: 1 }] });
});

test('item 6: optional settings sent as JSON null mean "not set" (HTTP and TCP)', async () => {
  for (const via of VIAS) {
    const name = `Nul_${via}`;
    const node = {
      kind: 'event', name, schema: { fields: { a: 'str', b: 'i64' }, optional_fields: null },
      dedupe_key: null, dedupe_window_ms: null, dedupe_window: null, keep_events_for_ms: null, keep_events_for: null,
      cold_after_ms: null, cold_after: null, description: null, validators: null, renamed_from: null,
    };
    const table = {
      kind: 'table', name: `NulT_${via}`, upstreams: [name], key: ['a'], ops: null, schema: null,
      agg: { [`c_${via}`]: { op: 'count', params: { window: null, where: null } }, [`s_${via}`]: { op: 'sum', params: { field: 'b', window: '1h', where: null } } },
    };
    const r = await register(via, { nodes: [node, table], force: null, dry_run: null });
    assert.ok(r.ok, `${via}: ${r.text}`);
    assert.deepEqual(r.json.added, [name, `NulT_${via}`]);
    // The stored node is the same as one without the nulls: re-sending either is unchanged.
    const again = await register(via, { nodes: [{ kind: 'event', name, schema: { fields: { a: 'str', b: 'i64' } } }] });
    assert.ok(again.ok, again.text);
    assert.deepEqual(again.json.unchanged, [name]);
    // A null setting is unset, not a value: without dedupe, the same push is applied twice.
    for (let i = 0; i < 2; i++) {
      const p = await post(srv.base, '/push', { event: name, data: { a: 'k', b: 2 } });
      assert.equal(p.json.idempotent_replay, false);
    }
    assert.deepEqual((await post(srv.base, '/get', { table: `NulT_${via}`, key: 'k' })).json, { [`c_${via}`]: 2, [`s_${via}`]: 4 });
    // Still required when required: dedupe_key set with its window null.
    const bad = await register(via, { nodes: [{ ...node, name: `NulD_${via}`, dedupe_key: 'a' }] });
    assert.equal(bad.json.error.code, 'schema_invalid', bad.text);
    assert.equal(bad.json.error.path, 'nodes[0].dedupe_window');
  }
});

test('item 7: ping has server_version (the package version) over HTTP and TCP', async () => {
  const h = await post(srv.base, '/ping', '');
  assert.equal(h.json.server_version, PACKAGE_VERSION);
  const t = await tcp.request(OP_PING, '');
  assert.equal(t.op, OP_PING);
  assert.equal(t.json.server_version, PACKAGE_VERSION);
  assert.equal(t.text, h.text);
});

test('item 9: a declared str for a computed column is accepted, the produced type wins and the answer says so', async () => {
  for (const via of VIAS) {
    const name = `Rate_${via}`;
    const node = {
      kind: 'derivation', name, output_kind: 'event', upstreams: ['Txn'],
      ops: [{ op: 'with_columns', exprs: { rate: 'amount / 2', big: 'amount > 10', whole: 'cast(amount, int)' } }],
      schema: { fields: { user: 'str', amount: 'f64', id: 'str', rate: 'str', big: 'str', whole: 'str' }, optional_fields: [] },
    };
    const table = { kind: 'table', name: `RateT_${via}`, upstreams: [name], key: ['user'], agg: { [`mx_${via}`]: { op: 'max', params: { field: 'rate', window: '1h' } }, [`bg_${via}`]: { op: 'count', params: { where: 'big' } } } };
    const r = await register(via, { nodes: [node, table] });
    assert.ok(r.ok, `${via}: ${r.text}`);
    const w = r.json.warnings;
    assert.deepEqual(w.map((x: { code: string; path: string }) => [x.code, x.path]), [
      ['declared_type_overridden', 'nodes[0].schema.big'],
      ['declared_type_overridden', 'nodes[0].schema.rate'],
      ['declared_type_overridden', 'nodes[0].schema.whole'],
    ]);
    assert.match(w[1].message, /declared str but the ops produce f64/);
    // The dry run says so too; nodes already registered are not reported again.
    const dry = await register(via, { nodes: [node], dry_run: true });
    assert.equal(dry.json.warnings.length, 3, dry.text);
    const other = await register(via, { nodes: [TXN] });
    assert.equal(other.json.warnings, undefined);
  }
  await post(srv.base, '/push', { event: 'Txn', data: { user: 'r', amount: 30, id: 'r1' } });
  await post(srv.base, '/push', { event: 'Txn', data: { user: 'r', amount: 4, id: 'r2' } });
  // rate is a number (f64), not a string; big is a bool usable as a predicate.
  assert.deepEqual((await post(srv.base, '/get', { table: 'RateT_http', key: 'r' })).json, { mx_http: 15, bg_http: 1 });
  // Real contradictions are still rejected.
  for (const [declared, code, path] of [
    [{ user: 'str', amount: 'f64', id: 'str', rate: 'i64' }, 'schema_mismatch', 'nodes[0].schema.rate'],
    [{ user: 'str', amount: 'bool', id: 'str', rate: 'f64' }, 'schema_mismatch', 'nodes[0].schema.amount'],
    [{ user: 'str', amount: 'f64', id: 'str' }, 'bad_return_type', 'nodes[0].schema'],
  ] as const) {
    for (const via of VIAS) {
      const bad = await register(via, { nodes: [{ kind: 'derivation', name: 'Bad', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'with_columns', exprs: { rate: 'amount / 2' } }], schema: { fields: declared, optional_fields: [] } }] });
      assert.equal(bad.json.error.code, code, `${via}: ${bad.text}`);
      assert.equal(bad.json.error.path, path);
    }
  }
});

test('item 10: batch entries take entity_id for key (not both); peer forms the spec rules out get the spec codes', async () => {
  const b = await post(srv.base, '/batch_get', { requests: [{ table: 'KT_http', entity_id: 'kt' }, { table: 'KT_http', key: 'kt', entity_id: 'kt' }] });
  assert.equal(b.status, 200, b.text);
  assert.deepEqual(b.json.results[0], { n_http: 1 });
  assert.equal(b.json.results[1].error.code, 'unsupported_request_shape');
  for (const via of VIAS) {
    // A global table (empty key): spec 2.2 wants a non-empty key.
    const g = await register(via, { nodes: [{ kind: 'derivation', name: 'Global', output_kind: 'table', upstreams: ['Txn'], table_primary_key: [], ops: [{ op: 'group_by', keys: [], agg: { n: { op: 'count' } } }] }] });
    assert.equal(g.json.error.code, 'table_key_invalid', g.text);
    // The peer's `json` field type is outside spec 2.1's vocabulary.
    const j = await register(via, { nodes: [{ kind: 'event', name: 'J', schema: { fields: { a: 'json' }, optional_fields: [] } }] });
    assert.equal(j.json.error.code, 'unknown_field_type', j.text);
  }
});

test("item 10: the peer's cast and fillna chain ops (HTTP and TCP)", async () => {
  const ev = { kind: 'event', name: 'Raw', schema: { fields: { user: 'str', qty: 'str', price: 'f64', note: 'str' }, optional_fields: ['price', 'note'] } };
  const r0 = await register('http', { nodes: [ev] });
  assert.ok(r0.ok, r0.text);
  for (const via of VIAS) {
    const t = {
      kind: 'derivation', name: `Clean_${via}`, output_kind: 'table', upstreams: ['Raw'], table_primary_key: ['user'],
      ops: [
        { op: 'cast', type_map: { qty: 'int' } },
        { op: 'fillna', defaults: { price: 2.5, note: 'it\'s "none"' } },
        { op: 'group_by', keys: ['user'], agg: { [`q_${via}`]: { op: 'sum', params: { field: 'qty', window: '1h' } }, [`p_${via}`]: { op: 'sum', params: { field: 'price', window: '1h' } }, [`n_${via}`]: { op: 'last', params: { field: 'note' } } } },
      ],
    };
    const r = await register(via, { nodes: [t] });
    assert.ok(r.ok, `${via}: ${r.text}`);
    // Targets and defaults are checked.
    const badCast = await register(via, { nodes: [{ ...t, name: 'BadCast', ops: [{ op: 'cast', type_map: { qty: 'i64' } }, t.ops[2]] }] });
    assert.equal(badCast.json.error.code, 'invalid_cast_target', badCast.text);
    const badFill = await register(via, { nodes: [{ ...t, name: 'BadFill', ops: [{ op: 'fillna', defaults: { price: [1] } }, t.ops[2]] }] });
    assert.equal(badFill.json.error.code, 'schema_invalid', badFill.text);
    const wrongType = await register(via, { nodes: [{ ...t, name: 'BadFillType', ops: [{ op: 'fillna', defaults: { price: 'x' } }, t.ops[2]] }] });
    assert.equal(wrongType.json.error.code, 'schema_mismatch', wrongType.text);
  }
  await post(srv.base, '/push', { event: 'Raw', data: { user: 'f', qty: '3', price: null } });
  await post(srv.base, '/push', { event: 'Raw', data: { user: 'f', qty: '4', price: 1, note: 'x' } });
  await post(srv.base, '/push', { event: 'Raw', data: { user: 'f', qty: 'lots' } });
  // qty: 3 + 4 (+ null for 'lots'); price: 2.5 + 1 + 2.5; the last note is the default.
  assert.deepEqual((await post(srv.base, '/get', { table: 'Clean_tcp', key: 'f' })).json, { q_tcp: 7, p_tcp: 6, n_tcp: 'it\'s "none"' });
});
