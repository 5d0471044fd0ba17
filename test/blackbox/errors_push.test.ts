/**
 * Every error code of /push (spec 4.1, 7.2 "Push") over real sockets, with its
 * status and the envelope of spec 2.7: error.code, error.path where docs/wire.md
 * gives one, and the top-level registry_version (present on push errors). Also
 * the success side of the same rules: optional fields, datetime and bytes
 * encodings, and dedupe replays (spec 4.1 rules 7-9).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, type HttpResult, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_ERROR_RESPONSE, OP_PUSH } from '../../src/protocol/frame';

const EVENT = {
  kind: 'event',
  name: 'Txn',
  schema: {
    fields: { user: 'str', amount: 'f64', n: 'i64', flag: 'bool', blob: 'bytes', ts: 'datetime', country: 'str' },
    optional_fields: ['n', 'flag', 'blob', 'ts', 'country'],
  },
};
const TABLE = {
  kind: 'table',
  name: 'UserT',
  upstreams: ['Txn'],
  key: ['user'],
  agg: {
    cnt: { op: 'count' },
    last_ts: { op: 'last', params: { field: 'ts' } },
    last_blob: { op: 'last', params: { field: 'blob' } },
    last_n: { op: 'last', params: { field: 'n' } },
  },
};
const PAY = {
  kind: 'event',
  name: 'Pay',
  schema: { fields: { txn_id: 'str', user: 'str', amount: 'f64' }, optional_fields: [] },
  dedupe_key: 'txn_id',
  dedupe_window: '10m',
  validators: ['amount >= 0'],
};
const PAY_TABLE = {
  kind: 'table',
  name: 'PayT',
  upstreams: ['Pay'],
  key: ['user'],
  agg: { cnt: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } },
};

let srv: TestServer;
let version = 0;

before(async () => {
  srv = await startServer({ memoryOnly: true });
  const r = await post(srv.base, '/register', { nodes: [EVENT, TABLE, PAY, PAY_TABLE] });
  assert.equal(r.status, 200, r.text);
  version = r.json.registry_version;
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

/** Checks status and envelope of a push error; push errors carry registry_version. */
function assertPushError(r: HttpResult, status: number, code: string, path?: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.headers.get('content-type'), 'application/json');
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  if (path !== undefined) assert.equal(r.json.error.path, path, r.text);
  assert.equal(r.json.registry_version, version, 'push errors carry the top-level registry_version');
}

const push = (body: unknown): Promise<HttpResult> => post(srv.base, '/push', body);
const ok = { user: 'u', amount: 1.5 };

test('event_not_found: 404 for an unregistered event', async () => {
  const r = await push({ event: 'Nope', data: ok });
  assertPushError(r, 404, 'event_not_found', 'event');
  assert.match(r.json.error.message, /Nope/);
});

test('invalid_json_body: 400 for a body that is not JSON (with and without content type)', async () => {
  assertPushError(await push('{"event": "Txn", '), 400, 'invalid_json_body');
  assertPushError(await push(''), 400, 'invalid_json_body');
  // Spec 4.1: the route does not enforce Content-Type and parses any body.
  const r = await post(srv.base, '/push', '{not json', { 'content-type': 'text/plain' });
  assertPushError(r, 400, 'invalid_json_body');
  const ok2 = await post(srv.base, '/push', JSON.stringify({ event: 'Txn', data: ok }), { 'content-type': 'text/plain' });
  assert.equal(ok2.status, 200, ok2.text);
});

test('missing_event_name_in_body: event absent, non-string, array body, scalar body', async () => {
  assertPushError(await push({ data: ok }), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push({ event: 5, data: ok }), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push({ event: null, data: ok }), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push({ event: ['Txn'], data: ok }), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push([{ event: 'Txn', data: ok }]), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push('"Txn"'), 400, 'missing_event_name_in_body', 'event');
  assertPushError(await push('null'), 400, 'missing_event_name_in_body', 'event');
});

test('invalid_event: wrong JSON type of a field', async () => {
  assertPushError(await push({ event: 'Txn', data: { user: 5, amount: 1 } }), 400, 'invalid_event', 'fields.user');
  assertPushError(await push({ event: 'Txn', data: { user: 'u', amount: '1.5' } }), 400, 'invalid_event', 'fields.amount');
  assertPushError(await push({ event: 'Txn', data: { ...ok, n: '42' } }), 400, 'invalid_event', 'fields.n');
  assertPushError(await push({ event: 'Txn', data: { ...ok, flag: 'true' } }), 400, 'invalid_event', 'fields.flag');
  assertPushError(await push({ event: 'Txn', data: { ...ok, blob: 12 } }), 400, 'invalid_event', 'fields.blob');
  assertPushError(await push({ event: 'Txn', data: { ...ok, ts: true } }), 400, 'invalid_event', 'fields.ts');
  assertPushError(await push({ event: 'Txn', data: { ...ok, country: { a: 1 } } }), 400, 'invalid_event', 'fields.country');
  assertPushError(await push({ event: 'Txn', data: { ...ok, country: ['US'] } }), 400, 'invalid_event', 'fields.country');
});

test('invalid_event: missing required field, data not an object, data missing', async () => {
  assertPushError(await push({ event: 'Txn', data: { user: 'u' } }), 400, 'invalid_event', 'fields.amount');
  assertPushError(await push({ event: 'Txn', data: {} }), 400, 'invalid_event');
  assertPushError(await push({ event: 'Txn', data: [ok] }), 400, 'invalid_event', 'data');
  assertPushError(await push({ event: 'Txn', data: 'user=u' }), 400, 'invalid_event', 'data');
  assertPushError(await push({ event: 'Txn', data: 7 }), 400, 'invalid_event', 'data');
  assertPushError(await push({ event: 'Txn', data: null }), 400, 'invalid_event', 'data');
  assertPushError(await push({ event: 'Txn' }), 400, 'invalid_event', 'data');
});

test('missing_field: a required field sent as null', async () => {
  assertPushError(await push({ event: 'Txn', data: { user: null, amount: 1 } }), 400, 'missing_field', 'fields.user');
  assertPushError(await push({ event: 'Txn', data: { user: 'u', amount: null } }), 400, 'missing_field', 'fields.amount');
});

test('unknown_field_v0: a key that is not a declared field', async () => {
  const r = await push({ event: 'Txn', data: { ...ok, extra: 1 } });
  assertPushError(r, 400, 'unknown_field_v0', 'fields.extra');
  assertPushError(await push({ event: 'Txn', data: { ...ok, Country: 'US' } }), 400, 'unknown_field_v0', 'fields.Country');
});

test('unknown_field_event_time_v0: event_time and event_time_ms in data', async () => {
  assertPushError(await push({ event: 'Txn', data: { ...ok, event_time: '2024-01-01T00:00:00Z' } }), 400, 'unknown_field_event_time_v0', 'fields.event_time');
  assertPushError(await push({ event: 'Txn', data: { ...ok, event_time_ms: 1700000000000 } }), 400, 'unknown_field_event_time_v0', 'fields.event_time_ms');
});

test('schema_mismatch: right JSON kind, value not representable', async () => {
  assertPushError(await push({ event: 'Txn', data: { ...ok, n: 42.5 } }), 400, 'schema_mismatch', 'fields.n');
  assertPushError(await push({ event: 'Txn', data: { ...ok, n: 2 ** 60 } }), 400, 'schema_mismatch', 'fields.n');
  assertPushError(await push({ event: 'Txn', data: { ...ok, blob: 'not base64!!' } }), 400, 'schema_mismatch', 'fields.blob');
  assertPushError(await push({ event: 'Txn', data: { ...ok, blob: 'abcde' } }), 400, 'schema_mismatch', 'fields.blob');
  assertPushError(await push({ event: 'Txn', data: { ...ok, ts: 'yesterday' } }), 400, 'schema_mismatch', 'fields.ts');
  assertPushError(await push({ event: 'Txn', data: { ...ok, ts: '2024-13-45T99:00:00Z' } }), 400, 'schema_mismatch', 'fields.ts');
  assertPushError(await push({ event: 'Txn', data: { ...ok, ts: 1.5 } }), 400, 'schema_mismatch', 'fields.ts');
});

test('validation_failed: an event validator rejects the payload; a passing one is accepted', async () => {
  const r = await push({ event: 'Pay', data: { txn_id: 'neg', user: 'v', amount: -1 } });
  assertPushError(r, 400, 'validation_failed', 'validators[0]');
  assert.match(r.json.error.message, /amount >= 0/);
  const fine = await push({ event: 'Pay', data: { txn_id: 'zero', user: 'v', amount: 0 } });
  assert.equal(fine.status, 200, fine.text);
  // The rejected push did not consume its dedupe value: the same id is novel now.
  const again = await push({ event: 'Pay', data: { txn_id: 'neg', user: 'v', amount: 3 } });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json.idempotent_replay, false);
});

test('a failed push changes nothing: no state, no LSN consumed visibly', async () => {
  const a = await push({ event: 'Txn', data: { user: 'fail', amount: 1 } });
  assert.equal(a.status, 200);
  for (const bad of [{ user: 'fail', amount: 'x' }, { user: 'fail' }, { user: 'fail', amount: 1, zz: 1 }]) {
    assert.equal((await push({ event: 'Txn', data: bad })).status, 400);
  }
  const g = await post(srv.base, '/get', { table: 'UserT', key: 'fail', features: ['cnt'] });
  assert.deepEqual(g.json, { cnt: 1 });
  const b = await push({ event: 'Txn', data: { user: 'fail', amount: 1 } });
  assert.ok(b.json.ack_lsn > a.json.ack_lsn);
});

test('dedupe_replay: 200, idempotent_replay true, replay header, same ack_lsn, byte-identical replays, state unchanged', async () => {
  const body = { event: 'Pay', data: { txn_id: 't-1', user: 'dd', amount: 10 } };
  const first = await push(body);
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.idempotent_replay, false);
  assert.equal(first.headers.get('x-service-idempotent-replay'), null, 'a novel push has no replay header');
  assert.equal(first.json.registry_version, version);
  const replays: HttpResult[] = [];
  for (let i = 0; i < 3; i++) replays.push(await push(i === 2 ? { event: 'Pay', data: { txn_id: 't-1', user: 'dd', amount: 999 } } : body));
  for (const r of replays) {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-service-idempotent-replay'), '1');
    assert.deepEqual(r.json, { ack_lsn: first.json.ack_lsn, registry_version: first.json.registry_version, idempotent_replay: true });
    assert.equal(r.text, replays[0].text, 'replays are byte-identical');
  }
  // The replay over TCP is the same bytes too.
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    const t = await tcp.request(OP_PUSH, body);
    assert.equal(t.op, OP_PUSH);
    assert.equal(t.text, replays[0].text);
  } finally {
    tcp.close();
  }
  const g = await post(srv.base, '/get', { table: 'PayT', key: 'dd' });
  assert.deepEqual(g.json, { cnt: 1, total: 10 }, 'replays do not change state');
  // A novel value on the same event is a normal push.
  const other = await push({ event: 'Pay', data: { txn_id: 't-2', user: 'dd', amount: 5 } });
  assert.equal(other.json.idempotent_replay, false);
  assert.ok(other.json.ack_lsn > first.json.ack_lsn);
  assert.deepEqual((await post(srv.base, '/get', { table: 'PayT', key: 'dd' })).json, { cnt: 2, total: 15 });
});

test('concurrent pushes of one dedupe value: exactly one is novel, all share its ack_lsn', async () => {
  const body = { event: 'Pay', data: { txn_id: 'race', user: 'race', amount: 1 } };
  const rs = await Promise.all(Array.from({ length: 20 }, () => push(body)));
  const novel = rs.filter((r) => r.json.idempotent_replay === false);
  assert.equal(novel.length, 1);
  for (const r of rs) {
    assert.equal(r.status, 200);
    assert.equal(r.json.ack_lsn, novel[0].json.ack_lsn);
  }
  assert.deepEqual((await post(srv.base, '/get', { table: 'PayT', key: 'race', features: ['cnt'] })).json, { cnt: 1 });
});

test('dedupe memory lasts dedupe_window: after it the same value is a novel push', async () => {
  const ev = { kind: 'event', name: 'Short', schema: { fields: { id: 'str', user: 'str' }, optional_fields: [] }, dedupe_key: 'id', dedupe_window_ms: 1500 };
  const r = await post(srv.base, '/register', { nodes: [ev] });
  assert.equal(r.status, 200, r.text);
  version = r.json.registry_version;
  const body = { event: 'Short', data: { id: 'x', user: 'u' } };
  const a = await push(body);
  const b = await push(body);
  assert.equal(b.json.idempotent_replay, true);
  assert.equal(b.json.ack_lsn, a.json.ack_lsn);
  // The window (1.5 s) is long enough that the replay above lands inside it on a loaded box.
  await new Promise((res) => setTimeout(res, 1700));
  const c = await push(body);
  assert.equal(c.json.idempotent_replay, false, 'the window has passed');
  assert.ok(c.json.ack_lsn > a.json.ack_lsn);
  // The same value on another event is independent.
  const other = await push({ event: 'Pay', data: { txn_id: 'x', user: 'sh', amount: 1 } });
  assert.equal(other.json.idempotent_replay, false);
});

test('without a dedupe_key a re-push is a new event (idempotent_replay false)', async () => {
  const body = { event: 'Txn', data: { user: 'nodedupe', amount: 1 } };
  const a = await push(body);
  const b = await push(body);
  assert.equal(a.json.idempotent_replay, false);
  assert.equal(b.json.idempotent_replay, false);
  assert.ok(b.json.ack_lsn > a.json.ack_lsn);
  assert.equal(b.headers.get('x-service-idempotent-replay'), null);
});

test('optional fields may be absent or null; body is an alias of data', async () => {
  const a = await push({ event: 'Txn', data: { user: 'opt', amount: 1 } });
  assert.equal(a.status, 200, a.text);
  const b = await push({ event: 'Txn', data: { user: 'opt', amount: 1, n: null, flag: null, blob: null, ts: null, country: null } });
  assert.equal(b.status, 200, b.text);
  const c = await push({ event: 'Txn', body: { user: 'opt', amount: 1, n: 7 } });
  assert.equal(c.status, 200, c.text);
  const g = await post(srv.base, '/get', { table: 'UserT', key: 'opt', features: ['cnt', 'last_n'] });
  assert.deepEqual(g.json, { cnt: 3, last_n: 7 });
});

test('datetime accepts RFC 3339 strings and integer epoch ms; bytes accept base64 and base64url', async () => {
  const r1 = await push({ event: 'Txn', data: { user: 'dt', amount: 1, ts: '2024-01-01T00:00:00Z', blob: 'aGVsbG8=' } });
  assert.equal(r1.status, 200, r1.text);
  let g = await post(srv.base, '/get', { table: 'UserT', key: 'dt', features: ['last_ts', 'last_blob'] });
  assert.deepEqual(g.json, { last_ts: Date.UTC(2024, 0, 1), last_blob: 'aGVsbG8=' });
  const r2 = await push({ event: 'Txn', data: { user: 'dt', amount: 1, ts: '2024-06-01T12:30:00.250+02:00', blob: 'aGk_' } });
  assert.equal(r2.status, 200, r2.text);
  g = await post(srv.base, '/get', { table: 'UserT', key: 'dt', features: ['last_ts', 'last_blob'] });
  assert.deepEqual(g.json, { last_ts: Date.UTC(2024, 5, 1, 10, 30, 0, 250), last_blob: 'aGk_' });
  const r3 = await push({ event: 'Txn', data: { user: 'dt', amount: 1, ts: 1700000000123 } });
  assert.equal(r3.status, 200, r3.text);
  g = await post(srv.base, '/get', { table: 'UserT', key: 'dt', features: ['last_ts'] });
  assert.deepEqual(g.json, { last_ts: 1700000000123 });
  const r4 = await push({ event: 'Txn', data: { user: 'dt', amount: 1, blob: '' } });
  assert.equal(r4.status, 200, 'the empty string is valid base64 of zero bytes');
});

test('push errors travel over TCP as op 0xFFFF frames with the same envelope as HTTP', async () => {
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    const cases: unknown[] = [
      { event: 'Nope', data: ok },
      { data: ok },
      { event: 'Txn', data: { user: 5, amount: 1 } },
      { event: 'Txn', data: { user: null, amount: 1 } },
      { event: 'Txn', data: { ...ok, extra: 1 } },
      { event: 'Txn', data: { ...ok, event_time: 1 } },
      { event: 'Txn', data: { ...ok, n: 42.5 } },
      { event: 'Pay', data: { txn_id: 'x', user: 'v', amount: -1 } },
    ];
    for (const c of cases) {
      const h = await push(c);
      const t = await tcp.request(OP_PUSH, c);
      assert.equal(t.op, OP_ERROR_RESPONSE, t.text);
      assert.equal(t.contentType, 0x01);
      assert.equal(t.text, h.text, `same envelope for ${JSON.stringify(c)}`);
    }
    const bad = await tcp.request(OP_PUSH, '{"event":');
    assert.equal(bad.op, OP_ERROR_RESPONSE);
    assert.equal(bad.json.error.code, 'invalid_json_body');
    assert.equal(bad.json.registry_version, version);
    // The connection is still usable after errors.
    const good = await tcp.request(OP_PUSH, { event: 'Txn', data: ok });
    assert.equal(good.op, OP_PUSH, good.text);
  } finally {
    tcp.close();
  }
});

// ---------------------------------------------------------------- server bugs (see the report / docs/errors.md)

test('field names that are Object.prototype members (toString, constructor, __proto__) are reserved: schema_invalid', async () => {
  for (const name of ['toString', 'valueOf', 'constructor']) {
    const ev = { kind: 'event', name: 'Proto', schema: { fields: { user: 'str', [name]: 'f64' }, optional_fields: [name] } };
    const r = await post(srv.base, '/register', { nodes: [ev] });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'schema_invalid', r.text);
    assert.equal(r.json.error.path, `descriptors[0].schema.${name}`);
  }
  const p = await post(srv.base, '/register', '{"nodes":[{"kind":"event","name":"ProtoField","schema":{"fields":{"__proto__":"str","v":"f64"},"optional_fields":[]}}]}');
  assert.equal(p.status, 400, p.text);
  assert.equal(p.json.error.code, 'schema_invalid', p.text);
});

test('an f64 that overflows to Infinity (JSON 1e400) is schema_mismatch and does not poison state', async () => {
  const r = await push('{"event":"Txn","data":{"user":"inf","amount":1e400}}');
  assertPushError(r, 400, 'schema_mismatch', 'fields.amount');
  const n = await push('{"event":"Txn","data":{"user":"inf","amount":-1e400}}');
  assertPushError(n, 400, 'schema_mismatch', 'fields.amount');
});

test('datetime epoch ms outside the safe integer range is schema_mismatch', async () => {
  assertPushError(await push('{"event":"Txn","data":{"user":"u","amount":1,"ts":1e20}}'), 400, 'schema_mismatch', 'fields.ts');
});
