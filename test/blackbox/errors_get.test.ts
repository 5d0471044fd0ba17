/**
 * Every error code of /get and /batch_get (spec 4.3, 4.4, 7.2 "Get and
 * batch_get") over real sockets: status, envelope (error.code, error.path; no
 * top-level registry_version on get errors, docs/wire.md), per-entry errors
 * inside batch_get results, cold keys, and the batch size limit (spec 8).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { frontCpuMs, responsiveDuring } from '../harness/responsive';
import { post, startServer, type HttpResult, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_GET_RESPONSE } from '../../src/protocol/frame';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', card: 'str', n: 'i64', ok: 'bool', amount: 'f64' }, optional_fields: ['n', 'ok'] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } } },
  { kind: 'table', name: 'CardUser', upstreams: ['Txn'], key: ['card', 'user'], agg: { ccnt: { op: 'count' } } },
  { kind: 'table', name: 'NumT', upstreams: ['Txn'], key: ['n'], agg: { ncnt: { op: 'count' } } },
  { kind: 'table', name: 'BoolT', upstreams: ['Txn'], key: ['ok'], agg: { bcnt: { op: 'count' } } },
];

let srv: TestServer;

before(async () => {
  srv = await startServer({ memoryOnly: true, shards: 2 });
  const r = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(r.status, 200, r.text);
  for (const data of [
    { user: 'alice', card: 'c1', n: 42, ok: true, amount: 2 },
    { user: 'alice', card: 'c1', n: 42, ok: true, amount: 3 },
    { user: 'bob', card: 'c2', n: -7, amount: 5 },
  ]) {
    const p = await post(srv.base, '/push', { event: 'Txn', data });
    assert.equal(p.status, 200, p.text);
  }
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

/** Status + envelope of a get error; get/batch_get errors omit registry_version (docs/wire.md). */
function assertGetError(r: HttpResult, status: number, code: string, path?: string): void {
  assert.equal(r.status, status, r.text);
  assert.equal(r.json?.error?.code, code, r.text);
  assert.equal(typeof r.json.error.message, 'string');
  if (path !== undefined) assert.equal(r.json.error.path, path, r.text);
  assert.equal('registry_version' in r.json, false, 'get errors carry no registry_version');
}

const get = (body: unknown): Promise<HttpResult> => post(srv.base, '/get', body);
const batch = (body: unknown): Promise<HttpResult> => post(srv.base, '/batch_get', body);

test('successful gets: scalar keys, composite array and "a|b" keys, integer keys as number or digit string, bool keys', async () => {
  assert.deepEqual((await get({ table: 'UserT', key: 'alice' })).json, { cnt: 2, total: 5 });
  assert.deepEqual((await get({ table: 'CardUser', key: ['c1', 'alice'] })).json, { ccnt: 2 });
  assert.deepEqual((await get({ table: 'CardUser', key: 'c1|alice' })).json, { ccnt: 2 });
  assert.deepEqual((await get({ table: 'NumT', key: 42 })).json, { ncnt: 2 });
  assert.deepEqual((await get({ table: 'NumT', key: '42' })).json, { ncnt: 2 });
  assert.deepEqual((await get({ table: 'NumT', key: -7 })).json, { ncnt: 1 });
  assert.deepEqual((await get({ table: 'BoolT', key: true })).json, { bcnt: 2 });
  assert.deepEqual((await get({ table: 'UserT', key: 'alice', features: ['total'] })).json, { total: 5 });
  assert.deepEqual((await get({ table: 'UserT', key: 'alice', features: [] })).json, {});
});

test('datetime and bytes key parts: RFC 3339 strings, epoch ms numbers and digit strings name the same entity', async () => {
  const r = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Visit', schema: { fields: { day: 'datetime', tag: 'bytes', n: 'i64' }, optional_fields: [] } },
      { kind: 'table', name: 'DayT', upstreams: ['Visit'], key: ['day'], agg: { visits: { op: 'count' } } },
      { kind: 'table', name: 'TagN', upstreams: ['Visit'], key: ['n', 'tag'], agg: { tagged: { op: 'count' } } },
    ],
  });
  assert.equal(r.status, 200, r.text);
  for (const day of ['2024-01-01T00:00:00Z', '2024-01-01T01:00:00+01:00', Date.UTC(2024, 0, 1)]) {
    assert.equal((await post(srv.base, '/push', { event: 'Visit', data: { day, tag: 'aGk=', n: 5 } })).status, 200);
  }
  const ms = Date.UTC(2024, 0, 1);
  for (const key of ['2024-01-01T00:00:00Z', '2023-12-31T19:00:00-05:00', ms, String(ms)]) {
    assert.deepEqual((await get({ table: 'DayT', key })).json, { visits: 3 }, `key ${JSON.stringify(key)}`);
  }
  assert.deepEqual((await get({ table: 'TagN', key: [5, 'aGk='] })).json, { tagged: 3 });
  assert.deepEqual((await get({ table: 'TagN', key: ['5', 'aGk='] })).json, { tagged: 3 });
  assert.deepEqual((await get({ table: 'TagN', key: '5|aGk=' })).json, { tagged: 3 });
  assertGetError(await get({ table: 'DayT', key: 'not a date' }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'DayT', key: true }), 400, 'key_parse_failure', 'key');
});

test('cold key: {} with 200, not key_not_found', async () => {
  for (const body of [{ table: 'UserT', key: 'nobody' }, { table: 'CardUser', key: ['c9', 'x'] }, { table: 'NumT', key: 0 }, { table: 'UserT', key: 'nobody', features: ['cnt'] }]) {
    const r = await get(body);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, {});
  }
});

test('unknown_table: 404 with path table', async () => {
  const r = await get({ table: 'Nope', key: 'alice' });
  assertGetError(r, 404, 'unknown_table', 'table');
  // An event is not a table either.
  assertGetError(await get({ table: 'Txn', key: 'alice' }), 404, 'unknown_table', 'table');
});

test('key_parse_failure: wrong arity of a composite key, unreadable parts', async () => {
  assertGetError(await get({ table: 'CardUser', key: ['c1'] }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'CardUser', key: ['c1', 'alice', 'x'] }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'CardUser', key: 'c1|alice|x' }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'NumT', key: 'abc' }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'NumT', key: 4.5 }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'NumT', key: true }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'BoolT', key: 'maybe' }), 400, 'key_parse_failure', 'key');
  assertGetError(await get({ table: 'CardUser', key: ['c1', { a: 1 }] }), 400, 'key_parse_failure', 'key[1]');
  assertGetError(await get({ table: 'UserT', key: true }), 400, 'key_parse_failure', 'key');
});

test('key_shape_mismatch: array for a single key, scalar for a composite key, object key, null key', async () => {
  assertGetError(await get({ table: 'UserT', key: ['alice', 'bob'] }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'UserT', key: ['alice'] }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'CardUser', key: 'c1' }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'CardUser', key: 5 }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'UserT', key: { user: 'alice' } }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'CardUser', key: { card: 'c1', user: 'alice' } }), 400, 'key_shape_mismatch', 'key');
  assertGetError(await get({ table: 'UserT', key: null }), 400, 'key_shape_mismatch', 'key');
});

test('feature_not_in_table and feature_not_found', async () => {
  const r = await get({ table: 'UserT', key: 'alice', features: ['cnt', 'ccnt'] });
  assertGetError(r, 400, 'feature_not_in_table', 'features');
  assert.match(r.json.error.message, /CardUser/);
  assertGetError(await get({ table: 'UserT', key: 'alice', features: ['nope'] }), 400, 'feature_not_found', 'features');
  // Checked before the key, so a bad key does not hide it.
  assertGetError(await get({ table: 'UserT', key: 'nobody', features: ['zz'] }), 400, 'feature_not_found', 'features');
});

test('unsupported_request_shape on /get: missing table or key, non-object body, features not a list of names', async () => {
  assertGetError(await get({ key: 'alice' }), 400, 'unsupported_request_shape');
  assertGetError(await get({ table: 'UserT' }), 400, 'unsupported_request_shape');
  assertGetError(await get({ table: 5, key: 'alice' }), 400, 'unsupported_request_shape');
  assertGetError(await get([{ table: 'UserT', key: 'alice' }]), 400, 'unsupported_request_shape');
  assertGetError(await get('"UserT"'), 400, 'unsupported_request_shape');
  assertGetError(await get({ table: 'UserT', key: 'alice', features: 'cnt' }), 400, 'unsupported_request_shape', 'features');
  assertGetError(await get({ table: 'UserT', key: 'alice', features: [1] }), 400, 'unsupported_request_shape', 'features');
});

test('invalid_json_body on /get and /batch_get', async () => {
  for (const path of ['/get', '/batch_get']) {
    const r = await post(srv.base, path, '{"table":');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.json.error.code, 'invalid_json_body');
  }
});

test('unsupported_request_shape on /batch_get: requests an object, missing, or a string', async () => {
  assertGetError(await batch({ requests: { table: 'UserT', key: 'alice' } }), 400, 'unsupported_request_shape', 'requests');
  assertGetError(await batch({ table: 'UserT', key: 'alice' }), 400, 'unsupported_request_shape', 'requests');
  assertGetError(await batch({ requests: 'UserT' }), 400, 'unsupported_request_shape', 'requests');
  assertGetError(await batch('7'), 400, 'unsupported_request_shape', 'requests');
});

test('batch_get: results in request order, per-entry errors with code and path, cold keys {}', async () => {
  const requests = [
    { table: 'UserT', key: 'alice', features: ['cnt'] },
    { table: 'Nope', key: 'x' },
    { table: 'CardUser', key: ['c1'] },
    { table: 'UserT', key: ['a', 'b'] },
    { table: 'UserT', key: 'alice', features: ['ccnt'] },
    { table: 'UserT', key: 'alice', features: ['zz'] },
    { key: 'alice' },
    'not an object',
    { table: 'UserT', key: 'ghost' },
    { table: 'CardUser', key: 'c2|bob' },
    { table: 'NumT', key: 'abc' },
  ];
  const r = await batch({ requests });
  assert.equal(r.status, 200, r.text);
  const res = r.json.results;
  assert.equal(res.length, requests.length);
  assert.deepEqual(res[0], { cnt: 2 });
  const expectErr = (i: number, code: string, path?: string): void => {
    assert.equal(res[i].error?.code, code, `entry ${i}: ${JSON.stringify(res[i])}`);
    assert.equal(typeof res[i].error.message, 'string');
    if (path !== undefined) assert.equal(res[i].error.path, path, `entry ${i}`);
  };
  expectErr(1, 'unknown_table', 'requests[1].table');
  expectErr(2, 'key_parse_failure', 'requests[2].key');
  expectErr(3, 'key_shape_mismatch', 'requests[3].key');
  expectErr(4, 'feature_not_in_table', 'requests[4].features');
  expectErr(5, 'feature_not_found', 'requests[5].features');
  expectErr(6, 'unsupported_request_shape', 'requests[6]');
  expectErr(7, 'unsupported_request_shape', 'requests[7]');
  assert.deepEqual(res[8], {});
  assert.deepEqual(res[9], { ccnt: 1 });
  expectErr(10, 'key_parse_failure', 'requests[10].key');
  // A bare array body is not the spec's shape: a coded 400, never rows (docs/wire.md).
  const bare = await batch(requests);
  assert.equal(bare.status, 400, bare.text);
  assert.equal(bare.json.error.code, 'unsupported_request_shape');
  // Empty batch.
  const empty = await batch({ requests: [] });
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.json, { results: [] });
});

test('get and batch_get errors over TCP: op 0xFFFF with the HTTP envelope; success is op 0x0023', async () => {
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (const body of [{ table: 'Nope', key: 'x' }, { table: 'NumT', key: 'abc' }, { table: 'UserT', key: null }, { table: 'UserT', key: 'a', features: ['ccnt'] }, { table: 'UserT', key: 'a', features: ['zz'] }, { key: 1 }]) {
      const h = await get(body);
      const t = await tcp.request(OP_GET, body);
      assert.equal(t.op, OP_ERROR_RESPONSE);
      assert.equal(t.text, h.text);
    }
    const b = await tcp.request(OP_BATCH_GET, { requests: {} });
    assert.equal(b.op, OP_ERROR_RESPONSE);
    assert.equal(b.json.error.code, 'unsupported_request_shape');
    const ok = await tcp.request(OP_BATCH_GET, { requests: [{ table: 'Nope', key: 1 }] });
    assert.equal(ok.op, OP_GET_RESPONSE);
    assert.equal(ok.json.results[0].error.code, 'unknown_table');
  } finally {
    tcp.close();
  }
});

test('batch_too_large: the default limit is 10000 entries (10000 pass, 10001 fail)', async () => {
  const entries = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ table: 'UserT', key: `k${i}`, features: ['cnt'] }));
  const okr = await batch({ requests: entries(10_000) });
  assert.equal(okr.status, 200);
  assert.equal(okr.json.results.length, 10_000);
  const r = await batch({ requests: entries(10_001) });
  assertGetError(r, 400, 'batch_too_large', 'requests');
});

test('batch_too_large: SERVICE_MAX_BATCH_GET=5 allows 5 entries and rejects 6 on both transports', async () => {
  const small = await startServer({ memoryOnly: true, env: { SERVICE_MAX_BATCH_GET: '5' } });
  const tcp = await TcpClient.connect(small.tcpPort);
  try {
    await post(small.base, '/register', { nodes: NODES.slice(0, 2) });
    const five = Array.from({ length: 5 }, (_, i) => ({ table: 'UserT', key: `k${i}` }));
    const r5 = await post(small.base, '/batch_get', { requests: five });
    assert.equal(r5.status, 200, r5.text);
    assert.equal(r5.json.results.length, 5);
    const six = [...five, { table: 'UserT', key: 'k5' }];
    const r6 = await post(small.base, '/batch_get', { requests: six });
    assertGetError(r6, 400, 'batch_too_large', 'requests');
    assert.match(r6.json.error.message, /5/);
    const t6 = await tcp.request(OP_BATCH_GET, { requests: six });
    assert.equal(t6.op, OP_ERROR_RESPONSE);
    assert.equal(t6.text, r6.text);
  } finally {
    tcp.close();
    await small.stop();
    small.cleanup();
  }
});

// ---------------------------------------------------------------- server bugs (see the report / docs/errors.md)

test('a key part nested within the depth limit is key_parse_failure with its path, not internal_error', async () => {
  const deep = '['.repeat(40) + ']'.repeat(40);
  const r = await post(srv.base, '/get', `{"table":"CardUser","key":["c1",${deep}]}`);
  assertGetError(r, 400, 'key_parse_failure', 'key[1]');
  const b = await post(srv.base, '/batch_get', `{"requests":[{"table":"CardUser","key":["c1",${deep}]}]}`);
  assert.equal(b.json.results[0].error.code, 'key_parse_failure');
});

test('get and batch_get bodies nested 1M deep are unsupported_request_shape before they are parsed (HTTP and TCP); /ping stays fast', async () => {
  const DEEP = 1_000_000;
  const deep = `${'['.repeat(DEEP)}${']'.repeat(DEEP)}`;
  const bodies: Array<[string, number, string]> = [
    ['/get', OP_GET, `{"table":"CardUser","key":["c1",${deep}]}`],
    ['/get', OP_GET, `{"table":"UserT","key":"alice","junk":${deep}}`],
    ['/batch_get', OP_BATCH_GET, `{"requests":[{"table":"UserT","key":"alice"},{"table":"CardUser","key":["c1",${deep}]}]}`],
  ];
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (const [path, op, body] of bodies) {
      const cpu0 = frontCpuMs(srv);
      const answers = await responsiveDuring(srv, () => post(srv.base, path, body));
      // Front-thread CPU per request (not wall time): parsing it cost ~330 ms; the text scan a few ms.
      const cpuEach = (frontCpuMs(srv) - cpu0) / answers.length;
      for (const r of answers) {
        assertGetError(r, 400, 'unsupported_request_shape', '');
        assert.match(r.json.error.message, /nested deeper than 64/);
      }
      assert.ok(cpuEach < 150, `${path}: front-thread CPU per refused body ${cpuEach.toFixed(0)} ms`);
      const t = await tcp.request(op, body);
      assert.equal(t.op, OP_ERROR_RESPONSE, t.text);
      assert.equal(t.json.error.code, 'unsupported_request_shape', t.text);
    }
    // The connection and the data are fine afterwards.
    const g = await tcp.request(OP_GET, JSON.stringify({ table: 'UserT', key: 'alice' }));
    assert.equal(g.op, OP_GET_RESPONSE, g.text);
    assert.equal(g.json.cnt, 2);
  } finally {
    tcp.close();
  }
});

test('a feature named __proto__ (an Object.prototype member) is a reserved name: schema_invalid', async () => {
  const r = await post(srv.base, '/register', '{"nodes":[{"kind":"table","name":"ProtoT","upstreams":["Txn"],"key":["user"],"agg":{"__proto__":{"op":"count"},"c":{"op":"count"}}}]}');
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.error.code, 'schema_invalid', r.text);
  assert.equal(r.json.error.path, 'nodes[0].agg.__proto__');
});

test('invalid_json_body on /get omits registry_version like every other get error (docs/wire.md)', async () => {
  for (const path of ['/get', '/batch_get']) {
    const r = await post(srv.base, path, '{"table":');
    assertGetError(r, 400, 'invalid_json_body');
  }
});
