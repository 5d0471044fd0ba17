/**
 * The node:net HTTP engine (`--http-engine net`) pipelines; a reset or register
 * pipelined on one connection is a barrier for the requests behind it, as on TCP
 * (tcp_barrier.test.ts): they run only once it is answered, so they see its effects.
 * Without it, a push written right behind a reset was validated and acked under the
 * old registry and then wiped by the reset.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, type TestServer } from '../harness/server';
import { RawHttp, rawRequest, type RawResponse } from '../harness/http_raw';

const EVENT = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } };
const TABLE = { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } };

let srv: TestServer;

before(async () => { srv = await startServer({ memoryOnly: true, shards: 2, args: ['--http-engine', 'net'] }); });
after(async () => { await srv.stop(); srv.cleanup(); });

/** Writes every request in one write and returns the responses in order. */
async function pipeline(requests: string[]): Promise<RawResponse[]> {
  const c = await RawHttp.connect(srv.httpPort);
  try {
    await c.write(requests.join(''));
    const out: RawResponse[] = [];
    for (let i = 0; i < requests.length; i++) {
      const r = await c.next();
      assert.ok(r !== null, `response ${i} before the close`);
      out.push(r);
    }
    return out;
  } finally {
    c.close();
  }
}

const push = (user: string): string => rawRequest('/push', { event: 'Txn', data: { user, amount: 1 } });

test('reset + register + push + get pipelined in one write: the push is judged after both and survives', async () => {
  assert.equal((await post(srv.base, '/register', { nodes: [EVENT, TABLE] })).status, 200);
  for (let round = 0; round < 20; round++) {
    // Old data that the reset must wipe, so that a count of 1 can only be the pipelined push.
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', amount: 1 } })).status, 200);
    const [reset, reg, pushed, got] = await pipeline([
      rawRequest('/reset', {}), rawRequest('/register', { nodes: [EVENT, TABLE] }), push('u1'), rawRequest('/get', { table: 'UserT', key: 'u1' }),
    ]);
    assert.equal(reset.status, 200, reset.body);
    assert.equal(reset.json.reset, true, reset.body);
    assert.equal(reg.status, 200, reg.body);
    assert.equal(pushed.status, 200, pushed.body);
    assert.equal(pushed.json.registry_version, reg.json.registry_version, 'the push was validated under the registry the register installed');
    assert.equal(got.status, 200, got.body);
    assert.deepEqual(got.json, { cnt: 1 }, `round ${round}: the pipelined push survives the reset in front of it`);
  }
});

test('a push written right behind a reset is refused under the empty registry, never acked and then wiped', async () => {
  assert.equal((await post(srv.base, '/register', { nodes: [EVENT, TABLE] })).status, 200);
  for (let round = 0; round < 20; round++) {
    const [first, reset, second, ping] = await pipeline([push('u2'), rawRequest('/reset', {}), push('u2'), rawRequest('/ping', {})]);
    assert.equal(first.status, 200, first.body);
    assert.equal(reset.json.reset, true, reset.body);
    assert.equal(second.status, 404, second.body);
    assert.equal(second.json.error.code, 'event_not_found', second.body);
    assert.equal(ping.status, 200, ping.body);
    assert.equal((await post(srv.base, '/register', { nodes: [EVENT, TABLE] })).status, 200);
  }
});

test('a register refused at once (wrong content type) releases the requests behind it; two barriers in a row keep their order', async () => {
  await post(srv.base, '/reset', {});
  const badCt = rawRequest('/register', { nodes: [EVENT, TABLE] }).replace('Content-Type: application/json', 'Content-Type: text/plain');
  const [bad, reg1, reg2, pushed, got] = await pipeline([
    badCt, rawRequest('/register', { nodes: [EVENT] }), rawRequest('/register', { nodes: [EVENT, TABLE] }), push('u3'),
    rawRequest('/get', { table: 'UserT', key: 'u3' }),
  ]);
  assert.equal(bad.json.error.code, 'unsupported_media_type', bad.body);
  assert.equal(reg1.status, 200, reg1.body);
  assert.equal(reg2.status, 200, reg2.body);
  assert.ok(reg2.json.registry_version > reg1.json.registry_version, `${reg1.body} then ${reg2.body}`);
  assert.equal(pushed.json.registry_version, reg2.json.registry_version, pushed.body);
  assert.deepEqual(got.json, { cnt: 1 });
});
