/**
 * A misspelled event, table, feature, field, op or upstream gets the same code,
 * status, path and envelope as before, and a message that says what was meant
 * when a close name exists, and what exists when the list is short. Over HTTP
 * and TCP (the same front code answers both).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_ERROR_RESPONSE, OP_GET, OP_PUSH } from '../../src/protocol/frame';

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } };
const table = (name: string, agg: Record<string, unknown>, key = ['user']): Record<string, unknown> =>
  ({ kind: 'table', name, upstreams: ['Txn'], key, agg });
const SPEND = table('UserSpend', { n: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: '1h' } } });

let srv: TestServer;

before(async () => {
  srv = await startServer({ memoryOnly: true });
  const empty = await post(srv.base, '/get', { table: 'UserSpend', key: 'u1' });
  assert.equal(empty.json.error.message, 'table "UserSpend" is not registered (no tables are registered)');
  assert.equal((await post(srv.base, '/register', { nodes: [TXN, SPEND] })).status, 200);
});
after(async () => { await srv.stop(); srv.cleanup(); });

test('push: an unknown event or field names the close one and what exists; codes and paths unchanged', async () => {
  let r = await post(srv.base, '/push', { event: 'txn', data: { user: 'u1', amount: 1 } });
  assert.equal(r.status, 404);
  assert.deepEqual(Object.keys(r.json), ['error', 'registry_version'], 'the envelope of push errors');
  assert.equal(r.json.error.code, 'event_not_found');
  assert.equal(r.json.error.path, 'event');
  assert.equal(r.json.error.message, 'event "txn" is not registered; did you mean "Txn"? (registered events: Txn)');
  r = await post(srv.base, '/push', { event: 'Payment', data: {} });
  assert.equal(r.json.error.message, 'event "Payment" is not registered (registered events: Txn)', 'no close name: the list alone');
  r = await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', amout: 1 } });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'unknown_field_v0');
  // A push's own fields get the hint only: the schema is the caller's, and the answer to a body must
  // not depend on fields the body does not name.
  assert.equal(r.json.error.message, '"amout" is not a declared field of this event in v0; did you mean "amount"?');
});

test('get and batch_get: an unknown table or feature names the close one and what exists', async () => {
  let r = await post(srv.base, '/get', { table: 'UserSpnd', key: 'u1' });
  assert.equal(r.status, 404);
  assert.equal(r.json.error.code, 'unknown_table');
  assert.equal(r.json.error.path, 'table');
  assert.equal(r.json.error.message, 'table "UserSpnd" is not registered; did you mean "UserSpend"? (registered tables: UserSpend)');
  r = await post(srv.base, '/get', { table: 'UserSpend', key: 'u1', features: ['totl'] });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.code, 'feature_not_found');
  assert.equal(r.json.error.path, 'features');
  assert.equal(r.json.error.message, 'feature "totl" is not registered; did you mean "total"? (features of UserSpend: n, total)');
  r = await post(srv.base, '/batch_get', { requests: [{ table: 'UserSpend', key: 'u1' }, { table: 'userspend', key: 'u1' }] });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.results[0], {});
  assert.equal(r.json.results[1].error.code, 'unknown_table');
  assert.equal(r.json.results[1].error.path, 'requests[1].table');
  assert.equal(r.json.results[1].error.message, 'table "userspend" is not registered; did you mean "UserSpend"? (registered tables: UserSpend)');
});

test('TCP: the same messages in the error frame', async () => {
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    let r = await tcp.request(OP_PUSH, { event: 'Txnn', data: { user: 'u1', amount: 1 } });
    assert.equal(r.op, OP_ERROR_RESPONSE);
    assert.equal(r.json.error.code, 'event_not_found');
    assert.equal(r.json.error.message, 'event "Txnn" is not registered; did you mean "Txn"? (registered events: Txn)');
    r = await tcp.request(OP_GET, { table: 'UserSpend', key: 'u1', features: ['N'] });
    assert.equal(r.op, OP_ERROR_RESPONSE);
    assert.equal(r.json.error.message, 'feature "N" is not registered; did you mean "n"? (features of UserSpend: n, total)');
  } finally {
    tcp.socket.destroy();
  }
});

test('register: an unknown op, aggregated field, key field or upstream names the close one', async () => {
  const cases: Array<[Record<string, unknown>, string, RegExp]> = [
    [table('T1', { s: { op: 'summ', params: { field: 'amount', window: '1h' } } }), 'unknown_op', /^op "summ" is not in the catalogue; did you mean "sum"\? \(docs\/ops\.md lists every op\)$/],
    [table('T2', { s: { op: 'sum', params: { field: 'amout', window: '1h' } } }), 'schema_propagation_failure', /column "amout" is not produced by the upstream chain; did you mean "amount"\? \(upstream columns: amount, user\)$/],
    [table('T3', { n: { op: 'count' } }, ['usr']), 'table_key_invalid', /key field "usr" is not a column of the upstream schema; did you mean "user"\? \(upstream columns: amount, user\)$/],
    [{ ...table('T4', { n: { op: 'count' } }), upstreams: ['Tx'] }, 'missing_upstream', /upstream "Tx" is neither in the payload nor registered; did you mean "Txn"\?/],
    [{ ...table('T5', { n: { op: 'count' } }), ops: [{ op: 'filtr', expr: 'amount > 1' }] }, 'unknown_op', /unknown chain op "filtr"; did you mean "filter"\?; supported: filter,/],
  ];
  for (const [node, code, message] of cases) {
    const r = await post(srv.base, '/register', { nodes: [node] });
    assert.equal(r.status, 400, r.text);
    const all = [r.json.error, ...(r.json.errors ?? [])];
    const hit = all.find((e: { code?: string; kind?: string }) => (e.code ?? e.kind) === code);
    assert.ok(hit !== undefined, `${code} in ${r.text}`);
    assert.match(hit.message, message, r.text);
  }
});
