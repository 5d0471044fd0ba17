/**
 * The framed TCP fast path (spec 4.8, docs/wire.md) over real sockets: every
 * supported opcode answers with its own opcode and the same body as HTTP, frames
 * may arrive split at any byte or many per write, replies keep strict FIFO order,
 * and OP_RESET works in test mode.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient, type TcpReply } from '../harness/tcp';
import { encodeFrame, OP_BATCH_GET, OP_GET, OP_GET_RESPONSE, OP_PING, OP_PUSH, OP_REGISTER, OP_RESET } from '../../src/protocol/frame';
import { PACKAGE_VERSION } from '../harness/package_version';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' }, total: { op: 'sum', params: { field: 'amount', window: 'forever' } } } },
];

let srv: TestServer;
let tcp: TcpClient;

before(async () => {
  srv = await startServer({ memoryOnly: true, shards: 2 });
  tcp = await TcpClient.connect(srv.tcpPort);
});

after(async () => {
  tcp.close();
  await srv.stop();
  srv.cleanup();
});

test('opcode values are those of docs/wire.md', () => {
  assert.deepEqual([OP_PING, OP_REGISTER, OP_PUSH, OP_GET, OP_BATCH_GET, OP_RESET], [0x0000, 0x0001, 0x0010, 0x0020, 0x0024, 0x0040]);
});

test('every supported opcode echoes its request opcode, content type 0x01, with the HTTP body', async () => {
  const ping = await tcp.request(OP_PING, '');
  assert.equal(ping.op, OP_PING);
  assert.equal(ping.contentType, 0x01);
  assert.deepEqual(ping.json, { pong: true, registry_version: 0, server_version: PACKAGE_VERSION });

  const reg = await tcp.request(OP_REGISTER, { nodes: NODES });
  assert.equal(reg.op, OP_REGISTER, reg.text);
  assert.equal(reg.json.status, 'ok');
  assert.equal(reg.json.registry_version, 1);
  assert.deepEqual(reg.json.added, ['Txn', 'UserT']);
  assert.deepEqual((await get(srv.base, '/registry')).json.nodes, NODES, 'a TCP register is visible over HTTP');

  const push = await tcp.request(OP_PUSH, { event: 'Txn', data: { user: 'a', amount: 2 } });
  assert.equal(push.op, OP_PUSH, push.text);
  assert.deepEqual(Object.keys(push.json), ['ack_lsn', 'registry_version', 'idempotent_replay']);
  assert.equal(push.json.registry_version, 1);

  const g = await tcp.request(OP_GET, { table: 'UserT', key: 'a' });
  assert.equal(g.op, OP_GET_RESPONSE, 'GET is answered with the generic success opcode 0x0023');
  assert.deepEqual(g.json, { cnt: 1, total: 2 });
  assert.equal(g.text, (await post(srv.base, '/get', { table: 'UserT', key: 'a' })).text);

  const b = await tcp.request(OP_BATCH_GET, { requests: [{ table: 'UserT', key: 'a', features: ['cnt'] }, { table: 'UserT', key: 'zz' }] });
  assert.equal(b.op, OP_GET_RESPONSE);
  assert.deepEqual(b.json, { results: [{ cnt: 1 }, {}] });

  const reset = await tcp.request(OP_RESET, '');
  assert.equal(reset.op, OP_GET_RESPONSE, reset.text);
  assert.deepEqual(reset.json, { status: 'ok', reset: true, registry_version: 2 });
  assert.deepEqual((await get(srv.base, '/registry')).json, { registry_version: 2, nodes: [] });
  const after = await tcp.request(OP_PUSH, { event: 'Txn', data: { user: 'a', amount: 2 } });
  assert.equal(after.json.error.code, 'event_not_found');
  const p2 = await tcp.request(OP_PING, 'anything at all');
  assert.deepEqual(p2.json, { pong: true, registry_version: 2, server_version: PACKAGE_VERSION });
});

test('frames split at every byte and many frames in one write decode the same', async () => {
  await tcp.request(OP_REGISTER, { nodes: NODES });
  const frames = Array.from({ length: 5 }, (_, i) => encodeFrame(OP_PUSH, JSON.stringify({ event: 'Txn', data: { user: 'split', amount: i } })));
  // One byte per write.
  const one = Buffer.concat(frames.slice(0, 2));
  const pending = [tcp.next(), tcp.next()];
  for (let i = 0; i < one.length; i++) {
    tcp.writeRaw(one.subarray(i, i + 1));
    if (i % 16 === 0) await new Promise((r) => setImmediate(r));
  }
  const first = await Promise.all(pending);
  for (const r of first) assert.equal(r.op, OP_PUSH, r.text);
  // Three frames in one write.
  tcp.writeRaw(Buffer.concat(frames.slice(2)));
  const rest = [await tcp.next(), await tcp.next(), await tcp.next()];
  const lsns = [...first, ...rest].map((r) => r.json.ack_lsn);
  assert.deepEqual([...lsns].sort((a, b) => a - b), lsns, 'acks in request order');
  assert.deepEqual((await tcp.request(OP_GET, { table: 'UserT', key: 'split' })).json, { cnt: 5, total: 10 });
});

test('strict FIFO under deep pipelining with mixed ops across shards', async () => {
  const c = await TcpClient.connect(srv.tcpPort);
  try {
    const expected: Array<{ op: number; check: (r: TcpReply) => void }> = [];
    const pending: Array<Promise<TcpReply>> = [];
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const user = `f${i % 13}`;
      if (i % 5 === 4) {
        const n = counts.get(user) ?? 0;
        pending.push(c.request(OP_GET, { table: 'UserT', key: user, features: ['cnt'] }));
        expected.push({ op: OP_GET_RESPONSE, check: (r) => assert.deepEqual(r.json, n === 0 ? {} : { cnt: n }) });
      } else if (i % 97 === 0) {
        pending.push(c.request(OP_PING, ''));
        expected.push({ op: OP_PING, check: (r) => assert.equal(r.json.pong, true) });
      } else {
        counts.set(user, (counts.get(user) ?? 0) + 1);
        pending.push(c.request(OP_PUSH, { event: 'Txn', data: { user, amount: 1 } }));
        expected.push({ op: OP_PUSH, check: (r) => assert.equal(r.json.idempotent_replay, false) });
      }
    }
    const replies = await Promise.all(pending);
    let last = -1;
    replies.forEach((r, i) => {
      assert.equal(r.op, expected[i].op, `reply ${i}: ${r.text}`);
      expected[i].check(r);
      if (r.op === OP_PUSH) {
        assert.ok(r.json.ack_lsn > last);
        last = r.json.ack_lsn;
      }
    });
  } finally {
    c.close();
  }
});

test('a large frame near the default 4 MiB limit is accepted', async () => {
  // The frame is read and answered; its 3 MiB key is over KEY_BYTES_MAX (docs/limits.md), a per-entry error.
  const pad = 'x'.repeat(3 * 1024 * 1024);
  const r = await tcp.request(OP_BATCH_GET, { requests: [{ table: 'UserT', key: pad }, { table: 'UserT', key: 'nobody' }] });
  assert.equal(r.op, OP_GET_RESPONSE, r.text.slice(0, 200));
  assert.equal(r.json.results[0].error.code, 'key_parse_failure');
  assert.deepEqual(r.json.results[1], {});
});
