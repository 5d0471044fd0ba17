import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamfeatError, agg, event, table } from '../../../src/client';
import { TcpTransport } from '../../../src/client/tcp_transport';
import { CT_JSON, OP_BATCH_GET, OP_ERROR_RESPONSE, OP_GET, OP_GET_RESPONSE, OP_PING, OP_PUSH, OP_REGISTER, OP_RESET } from '../../../src/protocol/frame';
import { closedPort, prng, startFakeHttp, startFakeTcp } from './fake_servers';
import type { TcpAnswer, TcpFrameSeen } from './fake_servers';

const FAST_RETRY = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 4 };
const Txn = event('Txn', { txn_id: String, card_id: String }, { dedupe_key: 'txn_id', dedupe_window: '1h' });
const Stats = table('CardStats', { from: Txn, key: 'card_id', features: { n: agg.count() } });
const ACK = { ack_lsn: 7, registry_version: 1, idempotent_replay: false };

async function rejects(p: Promise<unknown>): Promise<StreamfeatError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof StreamfeatError, `expected StreamfeatError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}

function byOp(f: TcpFrameSeen): TcpAnswer {
  switch (f.op) {
    case OP_PING:
      return { body: { pong: true, registry_version: 1 } };
    case OP_REGISTER:
      return { body: { status: 'ok', registry_version: 1, added: ['Txn', 'CardStats'], unchanged: [], changed: [], diff: { additive: [], destructive: [] } } };
    case OP_PUSH:
      return { body: ACK };
    // Like the server: get, batch_get and reset are answered with 0x0023.
    case OP_GET:
      return { op: OP_GET_RESPONSE, body: { n: 4 }, chunkBytes: 3 };
    case OP_BATCH_GET:
      return { op: OP_GET_RESPONSE, body: { results: [{ n: 4 }, { error: { code: 'key_shape_mismatch', message: 'bad key' } }] } };
    case OP_RESET:
      return { op: OP_GET_RESPONSE, body: { status: 'ok', reset: true, registry_version: 2 } };
    default:
      return { op: OP_ERROR_RESPONSE, body: { error: { code: 'unknown_op' } } };
  }
}

test('every method over TCP: opcodes, JSON payloads, replies split across chunks', async () => {
  const srv = await startFakeTcp(byOp);
  const c = new Client(srv.url);
  try {
    assert.deepEqual(await c.ping(), { pong: true, registry_version: 1 });
    assert.equal((await c.register(Stats, { force: true })).registry_version, 1);
    assert.deepEqual(await c.push(Txn, { txn_id: 'a', card_id: 'c' }), ACK);
    assert.deepEqual(await c.get(Stats, 'c', ['n']), { n: 4 });
    const b = await c.batchGet([{ table: 'CardStats', key: 'c' }, { table: 'CardStats', key: ['c', 'd'] }]);
    assert.deepEqual(b[0], { n: 4 });
    assert.ok(b[1] instanceof StreamfeatError);
    assert.equal(b[1].code, 'key_shape_mismatch');
    assert.equal(b[1].status, 400, 'TCP entries get the status hint of the code table');
    assert.equal((await c.reset()).registry_version, 2);
    assert.deepEqual(
      srv.frames.map((f) => [f.op, f.contentType, f.json]),
      [
        [OP_PING, CT_JSON, {}],
        [OP_REGISTER, CT_JSON, { nodes: [Txn.toNode(), Stats.toNode()], force: true }],
        [OP_PUSH, CT_JSON, { event: 'Txn', data: { txn_id: 'a', card_id: 'c' } }],
        [OP_GET, CT_JSON, { table: 'CardStats', key: 'c', features: ['n'] }],
        [OP_BATCH_GET, CT_JSON, { requests: [{ table: 'CardStats', key: 'c' }, { table: 'CardStats', key: ['c', 'd'] }] }],
        [OP_RESET, CT_JSON, {}],
      ],
    );
    assert.equal(srv.connections, 1, 'sequential calls reuse one connection');
    // registry has no opcode.
    const e = await rejects(c.registry());
    assert.equal(e.code, 'op_not_implemented');
    assert.equal(srv.frames.length, 6);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('error frames (0xFFFF) carry the envelope; status comes from the code table', async () => {
  const srv = await startFakeTcp((f) => {
    if (f.op === OP_PUSH) return { op: OP_ERROR_RESPONSE, body: { error: { code: 'event_not_found', message: 'no such event' }, registry_version: 5 } };
    if (f.op === OP_REGISTER) {
      return { op: OP_ERROR_RESPONSE, body: { error: { code: 'force_required', reason: 'r', diff: { additive: [], destructive: [{ kind: 'rename', from: 'a', to: 'b' }] } }, registry_version: 5 } };
    }
    if (f.op === OP_GET) return { op: OP_ERROR_RESPONSE, body: 'not json at all' };
    return { op: OP_ERROR_RESPONSE, body: { error: { code: 'brand_new_code', message: 'future' } } };
  });
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    const p = await rejects(c.push('Ghost', { a: 1 }));
    assert.equal(p.code, 'event_not_found');
    assert.equal(p.status, 404);
    assert.equal(p.registryVersion, 5);
    const r = await rejects(c.register(Txn));
    assert.equal(r.code, 'force_required');
    assert.equal(r.status, 409);
    assert.deepEqual(r.diff?.destructive, [{ kind: 'rename', from: 'a', to: 'b' }]);
    const g = await rejects(c.get('T', 'k'));
    assert.equal(g.code, 'unparseable_error');
    const f = await rejects(c.ping());
    assert.equal(f.code, 'brand_new_code');
    assert.equal(f.status, 0);
    assert.equal(srv.frames.length, 4, 'nothing was retried');
    assert.equal(srv.connections, 1, 'error frames keep the connection');
  } finally {
    await c.close();
    await srv.close();
  }
});

test('pool: at most poolSize connections, one request in flight on each, FIFO hand-over', async () => {
  const srv = await startFakeTcp((f) => ({ body: { n: (f.json as { key: number }).key }, delayMs: 5 }));
  const c = new Client(srv.url, { poolSize: 3 });
  try {
    const keys = Array.from({ length: 40 }, (_, i) => i);
    const rows = await Promise.all(keys.map((k) => c.get('T', k)));
    assert.deepEqual(rows.map((r) => r.n), keys, 'each caller got its own reply');
    assert.equal(srv.connections, 3);
    assert.equal(srv.maxInFlightPerConn, 1);
    assert.equal(srv.maxInFlightTotal, 3);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('timeout destroys the connection (its late reply must not answer the next call)', async () => {
  let n = 0;
  const srv = await startFakeTcp((f) => {
    n++;
    if (n === 1) return { body: { n: 'late' }, delayMs: 150 };
    return { body: { n: (f.json as { key: string }).key } };
  });
  const c = new Client(srv.url, { poolSize: 1, timeoutMs: 50, retry: false });
  try {
    const e = await rejects(c.get('T', 'first'));
    assert.equal(e.code, 'ETIMEDOUT');
    assert.deepEqual(await c.get('T', 'second', undefined, { timeoutMs: 1000 }), { n: 'second' });
    assert.equal(srv.connections, 2);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('a queued request times out while waiting for a connection', async () => {
  const srv = await startFakeTcp(() => ({ hang: true }));
  // 400 ms: the first request must reach the fake server before it times out, even on a loaded box.
  const c = new Client(srv.url, { poolSize: 1, timeoutMs: 400, retry: false });
  try {
    const [a, b] = await Promise.allSettled([c.get('T', 1), c.get('T', 2)]);
    assert.equal(a.status, 'rejected');
    assert.equal(b.status, 'rejected');
    assert.equal(((a as PromiseRejectedResult).reason as StreamfeatError).code, 'ETIMEDOUT');
    assert.equal(((b as PromiseRejectedResult).reason as StreamfeatError).code, 'ETIMEDOUT');
    assert.equal(srv.frames.length, 1, 'the queued request was never sent');
  } finally {
    await c.close();
    await srv.close();
  }
});

test('retries over TCP: internal_error then success; lost connection retried for reads only', async () => {
  let pings = 0;
  let gets = 0;
  const srv = await startFakeTcp((f) => {
    if (f.op === OP_PING) {
      pings++;
      return pings === 1 ? { op: OP_ERROR_RESPONSE, body: { error: { code: 'internal_error', reason: 'x' } } } : { body: { pong: true, registry_version: 0 } };
    }
    if (f.op === OP_GET) {
      gets++;
      return gets === 1 ? { close: true } : { body: { n: 1 } };
    }
    return { close: true };
  });
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    assert.equal((await c.ping()).pong, true);
    assert.equal(pings, 2);
    assert.deepEqual(await c.get('T', 'k'), { n: 1 });
    assert.equal(gets, 2);
    const e = await rejects(c.push('Plain', { a: 1 }));
    assert.equal(e.code, 'ECONNRESET');
    assert.equal(srv.frames.filter((f) => f.op === OP_PUSH).length, 1);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('bad reply frames: wrong opcode, wrong content type, oversize length', async () => {
  const bad = Buffer.from([0, 0, 0, 3, 0x00, 0x10, 0x02]);
  const answers: TcpAnswer[] = [
    { op: 0x0042, body: {} },
    { raw: bad },
    { raw: Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 1]) },
    { raw: Buffer.from([0, 0, 0, 1]) },
  ];
  let i = 0;
  const srv = await startFakeTcp(() => answers[i++]);
  const c = new Client(srv.url, { retry: false });
  try {
    for (let k = 0; k < answers.length; k++) {
      const e = await rejects(c.ping());
      assert.equal(e.code, 'unparseable_error', `answer ${k}`);
    }
    assert.equal(srv.connections, 4, 'a connection that sent a bad frame is dropped');
  } finally {
    await c.close();
    await srv.close();
  }
});

test('registry over tcp:// uses httpUrl; refused TCP connections', async () => {
  const http = await startFakeHttp(() => ({ body: { registry_version: 3, nodes: [Txn.toNode()] } }));
  const tcp = await startFakeTcp(byOp);
  const c = new Client(tcp.url, { httpUrl: http.url });
  try {
    assert.equal((await c.registry()).registry_version, 3);
    assert.equal(http.requests[0].url, '/registry');
    assert.equal(c.retriesPushesOf('Txn'), true);
  } finally {
    await c.close();
    await http.close();
    await tcp.close();
  }
  const port = await closedPort();
  const r = new Client(`tcp://127.0.0.1:${port}`, { retry: FAST_RETRY });
  try {
    assert.equal((await rejects(r.ping())).code, 'ECONNREFUSED');
  } finally {
    await r.close();
  }
  const t = new TcpTransport(new URL('tcp://localhost'));
  assert.equal(t.endpoint, 'tcp://localhost:8081');
  await t.close();
});

test('close() fails queued and in-flight requests', async () => {
  const srv = await startFakeTcp(() => ({ hang: true }));
  const c = new Client(srv.url, { poolSize: 1, retry: FAST_RETRY });
  const a = c.get('T', 1);
  const b = c.get('T', 2);
  await new Promise((r) => setTimeout(r, 20));
  await c.close();
  assert.equal((await rejects(a)).code, 'ECONNABORTED');
  assert.equal((await rejects(b)).code, 'ECONNABORTED');
  await srv.close();
});

test('property: under random delays, chunking and error replies, every caller gets its own answer', async () => {
  const seed = Number(process.env.SEED ?? 7);
  const r = prng(seed);
  for (let round = 0; round < 4; round++) {
    const poolSize = 1 + Math.floor(r() * 4);
    const plan = new Map<number, { delayMs: number; chunkBytes: number; fail: boolean }>();
    const srv = await startFakeTcp((f) => {
      const key = (f.json as { key: number }).key;
      const p = plan.get(key)!;
      if (p.fail) return { op: OP_ERROR_RESPONSE, body: { error: { code: 'key_parse_failure', message: `bad ${key}` } }, delayMs: p.delayMs };
      return { body: { echo: key }, delayMs: p.delayMs, chunkBytes: p.chunkBytes };
    });
    const c = new Client(srv.url, { poolSize, retry: false });
    try {
      const keys = Array.from({ length: 50 }, (_, i) => i + round * 1000);
      for (const k of keys) plan.set(k, { delayMs: Math.floor(r() * 4), chunkBytes: 1 + Math.floor(r() * 20), fail: r() < 0.2 });
      const settled = await Promise.allSettled(keys.map((k) => c.get('T', k)));
      settled.forEach((s, i) => {
        const k = keys[i];
        const why = `seed ${seed} round ${round} key ${k}`;
        if (plan.get(k)!.fail) {
          assert.equal(s.status, 'rejected', why);
          assert.equal(((s as PromiseRejectedResult).reason as StreamfeatError).message, `bad ${k}`, why);
        } else {
          assert.equal(s.status, 'fulfilled', why);
          assert.deepEqual((s as PromiseFulfilledResult<unknown>).value, { echo: k }, why);
        }
      });
      assert.ok(srv.connections <= poolSize, `seed ${seed}: ${srv.connections} connections > pool ${poolSize}`);
      assert.equal(srv.maxInFlightPerConn, 1, `seed ${seed}`);
    } finally {
      await c.close();
      await srv.close();
    }
  }
});
