/**
 * Pushes read straight from their text (front/push_text.ts) against the JSON.parse
 * path, over real sockets: two events with the same fields and tables, one the
 * reader takes ("Fast") and one it leaves to JSON.parse ("Slow": an optional
 * datetime field it never gets). The same bodies, pushed to each over HTTP and
 * TCP, get the same answers (error code, message and path included) and leave
 * the same rows.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_PUSH } from '../../src/protocol/frame';
import { STRING_VALUE_BYTES_MAX_DEFAULT } from '../../src/limits';

const FIELDS = { user: 'str', amount: 'f64', n: 'i64', flag: 'bool', merchant: 'str' };
const OPTIONAL = ['n', 'flag', 'merchant'];
const AGG = {
  cnt: { op: 'count' },
  spend: { op: 'sum', params: { field: 'amount', window: 'forever' } },
  top: { op: 'max', params: { field: 'amount', window: '1h' } },
  last_n: { op: 'last', params: { field: 'n' } },
  last_flag: { op: 'last', params: { field: 'flag' } },
  merchants: { op: 'n_unique', params: { field: 'merchant', window: '24h' } },
};
const NODES = [
  { kind: 'event', name: 'Fast', schema: { fields: FIELDS, optional_fields: OPTIONAL } },
  { kind: 'event', name: 'Slow', schema: { fields: { ...FIELDS, at: 'datetime' }, optional_fields: [...OPTIONAL, 'at'] } },
  { kind: 'table', name: 'FastT', upstreams: ['Fast'], key: ['user'], agg: AGG },
  { kind: 'table', name: 'SlowT', upstreams: ['Slow'], key: ['user'], agg: AGG },
];

/** Bodies with EVENT for the event's name: accepted ones in several spellings, then one per error. */
const BODIES = [
  '{"event":EVENT,"data":{"user":"a","amount":1.5}}',
  ' {\n "event" : EVENT ,\t"data" : { "amount" : 2 , "user" : "a" , "merchant" : "m1" } } ',
  '{"event":EVENT,"body":{"user":"a","amount":-0,"n":7,"flag":true,"merchant":"m2"}}',
  '{"event":EVENT,"data":{"user":"a","amount":1e2,"n":-3,"flag":false,"merchant":null}}',
  '{"event":EVENT,"data":{"user":"\\u0061","amount":0.30000000000000004,"merchant":"m\\"3"}}',
  '{"event":EVENT,"data":{"user":"b","amount":123456789012345678901234,"merchant":"é"}}',
  '{"event":EVENT,"data":{"user":"b","amount":2147483648,"n":9007199254740991}}',
  '{"event":EVENT,"data":{"user":"c","amount":1.5,"user":"b"}}',
  // Errors: each must read the same from both paths.
  '{"event":EVENT,"data":{"user":"a"}}',
  '{"event":EVENT,"data":{"user":null,"amount":1}}',
  '{"event":EVENT,"data":{"user":5,"amount":1}}',
  '{"event":EVENT,"data":{"user":"a","amount":"1"}}',
  '{"event":EVENT,"data":{"user":"a","amount":1,"n":1.5}}',
  '{"event":EVENT,"data":{"user":"a","amount":1,"n":9007199254740993}}',
  '{"event":EVENT,"data":{"user":"a","amount":1e400}}',
  '{"event":EVENT,"data":{"user":"a","amount":1,"flag":"true"}}',
  '{"event":EVENT,"data":{"user":"a","amount":1,"extra":1}}',
  '{"event":EVENT,"data":{"user":"a","amount":1,"event_time":1}}',
  '{"event":EVENT,"data":{"user":"a","amount":1},"event_time":1}',
  '{"event":EVENT,"data":{"user":"a","amount":1},"body":{}}',
  '{"event":EVENT}',
  '{"event":EVENT,"data":[]}',
  '{"event":EVENT,"data":{"user":"a","amount":01}}',
  '{"event":EVENT,"data":{"user":"a","amount":1}',
  '{"event":EVENT,"data":{"user":"a","amount":1}}x',
  `{"event":EVENT,"data":{"user":"${'k'.repeat(1025)}","amount":1}}`,
  // One byte over the string cap (--max-string-bytes at its default).
  `{"event":EVENT,"data":{"user":"a","amount":1,"merchant":"${'k'.repeat(STRING_VALUE_BYTES_MAX_DEFAULT + 1)}"}}`,
];

let srv: TestServer;
let tcp: TcpClient;

before(async () => {
  srv = await startServer({ memoryOnly: true, shards: 2 });
  const r = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(r.status, 200, r.text);
  tcp = await TcpClient.connect(srv.tcpPort);
});

after(async () => {
  tcp.socket.destroy();
  await srv.stop();
  srv.cleanup();
});

/** The answer without what differs between the two events by design: the LSN, and the table name in a message. */
function answer(status: number, json: any): string {
  const a = { status, ...json, ack_lsn: typeof json?.ack_lsn === 'number' ? 'n' : undefined };
  return JSON.stringify(a).replace(/(Fast|Slow)T/g, 'T');
}

test('the same bodies get the same answers and leave the same rows whichever path reads them, HTTP and TCP', async () => {
  for (const body of BODIES) {
    const [fast, slow] = await Promise.all(['Fast', 'Slow'].map((e) => post(srv.base, '/push', body.replace('EVENT', `"${e}"`))));
    assert.equal(answer(fast.status, fast.json), answer(slow.status, slow.json), body);
    const [tf, ts] = [await tcp.request(OP_PUSH, body.replace('EVENT', '"Fast"')), await tcp.request(OP_PUSH, body.replace('EVENT', '"Slow"'))];
    assert.equal(tf.op, ts.op, body);
    assert.equal(answer(0, tf.json), answer(0, ts.json), body);
  }
  for (const key of ['a', 'b', 'c']) {
    const f = await post(srv.base, '/get', { table: 'FastT', key });
    const s = await post(srv.base, '/get', { table: 'SlowT', key });
    assert.equal(f.status, 200, f.text);
    assert.deepEqual(f.json, s.json, key);
  }
  // The accepted bodies did count (not every push was refused by both paths alike).
  assert.equal((await post(srv.base, '/get', { table: 'FastT', key: 'a', features: ['cnt'] })).json.cnt, 10);
});
