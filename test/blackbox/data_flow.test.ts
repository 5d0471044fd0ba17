/**
 * The data plane end to end over real sockets: register, push over HTTP and TCP,
 * read back over the other transport, with 1 and 4 shards. Checks that acks carry
 * one monotonic LSN sequence across transports and that reads see every acked push.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { post, startServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_GET_RESPONSE, OP_PUSH, OP_BATCH_GET } from '../../src/protocol/frame';
import { basicNodes } from './fixtures';

for (const shards of [1, 4]) {
  test(`push over HTTP and TCP, read over the other, ${shards} shard(s)`, async () => {
    const srv = await startServer({ shards, memoryOnly: shards === 4 });
    const tcp = await TcpClient.connect(srv.tcpPort);
    try {
      const reg = await post(srv.base, '/register', { nodes: basicNodes() });
      assert.equal(reg.status, 200, reg.text);
      assert.equal(reg.json.registry_version, 1);
      const users = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'gina', 'hank'];
      const expect = new Map<string, { cnt: number; total: number }>();
      let lastLsn = -1;
      for (let i = 0; i < 80; i++) {
        const user = users[i % users.length];
        const data = { user, card: `c${i % 3}`, amount: i, country: i % 2 === 0 ? 'US' : 'FR' };
        let ack;
        if (i % 2 === 0) {
          const r = await post(srv.base, '/push', { event: 'Txn', data });
          assert.equal(r.status, 200, r.text);
          ack = r.json;
        } else {
          const r = await tcp.request(OP_PUSH, { event: 'Txn', data });
          assert.equal(r.op, OP_PUSH, r.text);
          ack = r.json;
        }
        assert.ok(ack.ack_lsn > lastLsn, 'ack_lsn increases across transports');
        lastLsn = ack.ack_lsn;
        assert.equal(ack.registry_version, 1);
        assert.equal(ack.idempotent_replay, false);
        const e = expect.get(user) ?? { cnt: 0, total: 0 };
        e.cnt++;
        e.total += i;
        expect.set(user, e);
        // Read-your-write on the other transport, immediately.
        if (i % 2 === 0) {
          const g = await tcp.request(OP_GET, { table: 'UserStats', key: user });
          assert.equal(g.op, OP_GET_RESPONSE, g.text);
          assert.equal(g.json.cnt, e.cnt);
        } else {
          const g = await post(srv.base, '/get', { table: 'UserStats', key: user });
          assert.equal(g.json.cnt, e.cnt, g.text);
        }
      }
      for (const [user, e] of expect) {
        const g = await post(srv.base, '/get', { table: 'UserStats', key: user, features: ['cnt', 'total'] });
        assert.deepEqual(g.json, { cnt: e.cnt, total: e.total });
      }
      const big = await post(srv.base, '/get', { table: 'UserStats', key: 'alice', features: ['big'] });
      assert.deepEqual(big.json, { big: [0, 8, 16, 24, 32, 40, 48, 56, 64, 72].filter((a) => a > 100).length });
      // Composite key: array in declared order, and the "a|b" convenience.
      const ck = await post(srv.base, '/get', { table: 'CardUser', key: ['c0', 'alice'] });
      assert.equal(ck.status, 200, ck.text);
      // alice pushes at i = 0, 8, ..., 72 with card c(i % 3): c0 at i = 0, 24, 48, 72.
      assert.deepEqual(ck.json, { cnt: 4 });
      const ck2 = await post(srv.base, '/get', { table: 'CardUser', key: 'c0|alice' });
      assert.deepEqual(ck2.json, ck.json);
      // Cold key: {} with 200.
      const cold = await post(srv.base, '/get', { table: 'UserStats', key: 'nobody' });
      assert.equal(cold.status, 200);
      assert.deepEqual(cold.json, {});
      // batch_get over both transports, in request order, with a per-entry error.
      const reqs = { requests: [{ table: 'UserStats', key: 'bob', features: ['cnt'] }, { table: 'Nope', key: 'x' }, { table: 'UserStats', key: 'zed' }] };
      const bh = await post(srv.base, '/batch_get', reqs);
      assert.equal(bh.status, 200, bh.text);
      assert.equal(bh.json.results.length, 3);
      assert.deepEqual(bh.json.results[0], { cnt: expect.get('bob')!.cnt });
      assert.equal(bh.json.results[1].error.code, 'unknown_table');
      assert.deepEqual(bh.json.results[2], {});
      const bt = await tcp.request(OP_BATCH_GET, reqs);
      assert.equal(bt.op, OP_GET_RESPONSE);
      assert.deepEqual(bt.json, bh.json);
    } finally {
      tcp.close();
      await srv.stop();
      srv.cleanup();
    }
  });
}

test('pipelined TCP pushes and gets are answered in order', async () => {
  const srv = await startServer({ memoryOnly: true, shards: 2 });
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    await post(srv.base, '/register', { nodes: basicNodes() });
    const pending = [];
    for (let i = 0; i < 200; i++) {
      pending.push(tcp.request(OP_PUSH, { event: 'Txn', data: { user: `u${i % 7}`, card: 'c', amount: 1 } }));
      if (i % 10 === 9) pending.push(tcp.request(OP_GET, { table: 'UserStats', key: `u${i % 7}`, features: ['cnt'] }));
    }
    const replies = await Promise.all(pending);
    let last = -1;
    const seen = new Map<string, number>();
    let pi = 0;
    for (let i = 0; i < 200; i++) {
      const r = replies[pi++];
      assert.equal(r.op, OP_PUSH, r.text);
      assert.ok(r.json.ack_lsn > last);
      last = r.json.ack_lsn;
      const u = `u${i % 7}`;
      seen.set(u, (seen.get(u) ?? 0) + 1);
      if (i % 10 === 9) {
        const g = replies[pi++];
        assert.equal(g.op, OP_GET_RESPONSE);
        assert.equal(g.json.cnt, seen.get(u), 'a get pipelined after pushes sees them');
      }
    }
  } finally {
    tcp.close();
    await srv.stop();
    srv.cleanup();
  }
});
