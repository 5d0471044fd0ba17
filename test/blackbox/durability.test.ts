/**
 * Nothing acknowledged is lost (spec 1.3, 2.6, 4.1): pushes from several HTTP and
 * TCP connections, kill -9 mid-stream, restart on the same data dir, and every
 * acknowledged push is reflected in /get — with 1 and 4 shards, with and without
 * snapshots in between. Then the failure cases: torn tail, flipped byte, corrupt
 * newest snapshot, injected ENOSPC, dedupe across restarts, reset truncation and
 * sync timeouts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { CLI, post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_PUSH } from '../../src/protocol/frame';

const NODES = [
  { kind: 'event', name: 'Hit', schema: { fields: { user: 'str', v: 'i64' }, optional_fields: [] } },
  { kind: 'table', name: 'Hits', upstreams: ['Hit'], key: ['user'], agg: { n: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'v', window: 'forever' } } } },
  { kind: 'event', name: 'Pay', schema: { fields: { id: 'str', user: 'str' }, optional_fields: [] }, dedupe_key: 'id', dedupe_window: '1h' },
  { kind: 'table', name: 'Pays', upstreams: ['Pay'], key: ['user'], agg: { n: { op: 'count', params: {} } } },
];

const USERS = Array.from({ length: 40 }, (_, i) => `user${i}`);

interface Tally { acked: Map<string, number>; inflight: Map<string, number>; maxLsn: number }

function sum(m: Map<string, number>): number {
  let n = 0;
  for (const v of m.values()) n += v;
  return n;
}

function bump(m: Map<string, number>, k: string, d: number): void {
  m.set(k, (m.get(k) ?? 0) + d);
}

/** Pushes until `stop` is set; counts acks and pushes whose answer never came. */
async function httpWorker(srv: TestServer, tally: Tally, stop: { v: boolean }, seed: number): Promise<void> {
  let i = seed;
  while (!stop.v) {
    const user = USERS[(i++ * 7) % USERS.length];
    bump(tally.inflight, user, 1);
    try {
      const r = await post(srv.base, '/push', { event: 'Hit', data: { user, v: 1 } });
      if (r.status !== 200) throw new Error(r.text);
      bump(tally.inflight, user, -1);
      bump(tally.acked, user, 1);
      tally.maxLsn = Math.max(tally.maxLsn, r.json.ack_lsn);
    } catch {
      return; // the server died: this push stays in flight (unknown outcome)
    }
  }
}

async function tcpWorker(srv: TestServer, tally: Tally, stop: { v: boolean }, seed: number): Promise<void> {
  const c = await TcpClient.connect(srv.tcpPort);
  let i = seed;
  try {
    while (!stop.v) {
      // Pipeline 4 at a time: more than one push in flight on the wire.
      const users = [0, 1, 2, 3].map(() => USERS[(i++ * 11) % USERS.length]);
      for (const u of users) bump(tally.inflight, u, 1);
      const replies = await Promise.race([
        Promise.all(users.map((u) => c.request(OP_PUSH, { event: 'Hit', data: { user: u, v: 1 } }))),
        c.closed.then(() => null),
      ]);
      if (replies === null) return;
      replies.forEach((r, k) => {
        assert.equal(r.op, OP_PUSH, r.text);
        bump(tally.inflight, users[k], -1);
        bump(tally.acked, users[k], 1);
        tally.maxLsn = Math.max(tally.maxLsn, r.json.ack_lsn);
      });
    }
  } finally {
    c.close();
  }
}

async function counts(srv: TestServer): Promise<Map<string, number>> {
  const r = await post(srv.base, '/batch_get', { requests: USERS.map((u) => ({ table: 'Hits', key: u, features: ['n'] })) });
  assert.equal(r.status, 200, r.text);
  return new Map(USERS.map((u, i) => [u, r.json.results[i].n ?? 0]));
}

for (const shards of [1, 4]) {
  for (const snapshots of [false, true]) {
    test(`kill -9 mid-stream loses no acknowledged push (${shards} shard(s), snapshots ${snapshots ? 'on' : 'off'})`, async () => {
      const dataDir = tempDataDir();
      const args = ['--snapshot-interval', snapshots ? '150ms' : '0'];
      let srv = await startServer({ shards, dataDir, args, env: { SERVICE_WAL_SEGMENT_BYTES: '65536' } });
      try {
        assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
        const tally: Tally = { acked: new Map(), inflight: new Map(), maxLsn: 0 };
        const stop = { v: false };
        const workers = [0, 1, 2].map((s) => httpWorker(srv, tally, stop, s)).concat([5, 9].map((s) => tcpWorker(srv, tally, stop, s)));
        // Crash once enough pushes are acknowledged (bounded in time: the machine may be busy).
        const deadline = Date.now() + 20_000;
        while (sum(tally.acked) < 400 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await srv.kill9();
        stop.v = true;
        await Promise.all(workers);
        assert.ok(sum(tally.acked) >= 400, `enough load before the crash (${sum(tally.acked)})`);
        srv = await startServer({ shards, dataDir, args, env: { SERVICE_WAL_SEGMENT_BYTES: '65536' } });
        const got = await counts(srv);
        for (const u of USERS) {
          const acked = tally.acked.get(u) ?? 0;
          const maybe = tally.inflight.get(u) ?? 0;
          const n = got.get(u)!;
          assert.ok(n >= acked, `${u}: ${n} recovered < ${acked} acknowledged`);
          assert.ok(n <= acked + maybe, `${u}: ${n} recovered > ${acked} acked + ${maybe} in flight`);
        }
        const after = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
        assert.ok(after.json.ack_lsn > tally.maxLsn, 'ack_lsn never goes backwards across a restart');
        assert.equal(after.json.registry_version, 1, 'the registry came back');
      } finally {
        await srv.kill9();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
}

/** Starts, registers, pushes `n` Hit events for user0, and crashes. */
async function preparedDir(n: number, args: string[] = ['--snapshot-interval', '0']): Promise<string> {
  const dataDir = tempDataDir();
  const srv = await startServer({ dataDir, args });
  await post(srv.base, '/register', { nodes: NODES });
  for (let i = 0; i < n; i++) assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: i } })).status, 200);
  await srv.kill9();
  return dataDir;
}

function lastSegment(dataDir: string): string {
  const dir = join(dataDir, 'shard-0', 'wal');
  const files = readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
  return join(dir, files[files.length - 1]);
}

async function userCount(dataDir: string): Promise<{ n: number; srv: TestServer }> {
  const srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
  const r = await post(srv.base, '/get', { table: 'Hits', key: 'user0', features: ['n'] });
  return { n: r.json.n ?? 0, srv };
}

test('a torn tail is truncated and logged; the server comes up', async () => {
  const dataDir = await preparedDir(10);
  try {
    const seg = lastSegment(dataDir);
    truncateSync(seg, statSync(seg).size - 3);
    const check = (): number | null => spawnSync(process.execPath, [CLI, 'wal-check', '--data-dir', dataDir], { encoding: 'utf8' }).status;
    assert.equal(check(), 1, 'wal-check reports the torn tail without touching it');
    const { n, srv } = await userCount(dataDir);
    assert.equal(n, 9, 'the torn last record is dropped, every earlier one replays');
    assert.ok(srv.logs.some((l) => String(l.kind).startsWith('wal.') && l.kind !== 'wal.snapshot_skipped'), 'the truncation is logged');
    await srv.kill9();
    assert.equal(check(), 0, 'after recovery truncated the tail, wal-check is clean');
    // Garbage appended after valid records: dropped, valid ones kept.
    appendFileSync(seg, Buffer.from('garbage-garbage-garbage'));
    const again = await userCount(dataDir);
    assert.equal(again.n, 9);
    await again.srv.kill9();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a flipped byte in the last record drops that record only', async () => {
  const dataDir = await preparedDir(10);
  try {
    const seg = lastSegment(dataDir);
    const buf = readFileSync(seg);
    buf[buf.length - 2] ^= 0xff;
    writeFileSync(seg, buf);
    const { n, srv } = await userCount(dataDir);
    assert.equal(n, 9);
    await srv.kill9();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a corrupt newest snapshot falls back to the previous one plus the WAL', async () => {
  const dataDir = tempDataDir();
  const args = ['--snapshot-interval', '0'];
  const env = { SERVICE_WAL_SEGMENT_BYTES: '512' };
  try {
    let srv = await startServer({ dataDir, args, env });
    await post(srv.base, '/register', { nodes: NODES });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 20; i++) await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
      assert.equal(await srv.stop(), 0, 'clean shutdown writes a snapshot');
      srv = await startServer({ dataDir, args, env });
    }
    const snapDir = join(dataDir, 'shard-0', 'snapshots');
    const snaps = readdirSync(snapDir).filter((f) => f.endsWith('.snap')).sort();
    assert.equal(snaps.length, 2, `the newest two snapshots are kept (${snaps.join(',')})`);
    await srv.kill9();
    const newest = join(snapDir, snaps[1]);
    const buf = readFileSync(newest);
    buf[buf.length - 10] ^= 0x55;
    writeFileSync(newest, buf);
    const { n, srv: s2 } = await userCount(dataDir);
    assert.equal(n, 60, 'every push survives through the older snapshot and the WAL after it');
    assert.ok(s2.logs.some((l) => l.kind === 'wal.snapshot_skipped'), 'the corrupt snapshot is reported');
    await s2.kill9();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('an injected ENOSPC gives wal_unavailable, reads keep working, writes recover', async () => {
  const dataDir = tempDataDir();
  const fault = join(dataDir, 'fault');
  const srv = await startServer({ dataDir, env: { SERVICE_FAULT_WAL_FILE: fault }, args: ['--snapshot-interval', '0'] });
  try {
    await post(srv.base, '/register', { nodes: NODES });
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } })).status, 200);
    writeFileSync(fault, 'ENOSPC');
    await new Promise((r) => setTimeout(r, 100));
    const failed = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
    assert.equal(failed.status, 503, failed.text);
    assert.equal(failed.json.error.code, 'wal_unavailable');
    const read = await post(srv.base, '/get', { table: 'Hits', key: 'user0', features: ['n'] });
    assert.deepEqual(read.json, { n: 1 }, 'the failed push changed nothing and reads still work');
    unlinkSync(fault);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } })).status, 200);
    await srv.kill9();
    const { n, srv: s2 } = await userCount(dataDir);
    assert.equal(n, 2, 'no partial batch survives the failed write');
    await s2.kill9();
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('dedupe replays survive a crash and a snapshot, byte for byte', async () => {
  const dataDir = tempDataDir();
  try {
    let srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    await post(srv.base, '/register', { nodes: NODES });
    const first = await post(srv.base, '/push', { event: 'Pay', data: { id: 'p1', user: 'u' } });
    const replay = await post(srv.base, '/push', { event: 'Pay', data: { id: 'p1', user: 'u' } });
    assert.equal(replay.json.idempotent_replay, true);
    assert.equal(replay.json.ack_lsn, first.json.ack_lsn);
    assert.equal(replay.headers.get('x-service-idempotent-replay'), '1');
    await srv.kill9();
    srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    const afterCrash = await post(srv.base, '/push', { event: 'Pay', data: { id: 'p1', user: 'u' } });
    assert.equal(afterCrash.text, replay.text, 'same bytes after a crash (rebuilt from the WAL)');
    assert.equal(await srv.stop(), 0);
    srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    const afterSnap = await post(srv.base, '/push', { event: 'Pay', data: { id: 'p1', user: 'u' } });
    assert.equal(afterSnap.text, replay.text, 'same bytes after a snapshot');
    assert.equal(afterSnap.headers.get('x-service-idempotent-replay'), '1');
    const n = await post(srv.base, '/get', { table: 'Pays', key: 'u' });
    assert.deepEqual(n.json, { n: 1 }, 'replays never change state');
    await srv.kill9();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('reset truncates the WAL; a failed truncation is wal_truncate_failed', async () => {
  const dataDir = tempDataDir();
  const fault = join(dataDir, 'fault');
  let srv = await startServer({ dataDir, env: { SERVICE_FAULT_WAL_FILE: fault }, args: ['--snapshot-interval', '0'] });
  try {
    await post(srv.base, '/register', { nodes: NODES });
    const before = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
    const reset = await post(srv.base, '/reset', {});
    assert.equal(reset.status, 200, reset.text);
    await srv.kill9();
    srv = await startServer({ dataDir, env: { SERVICE_FAULT_WAL_FILE: fault }, args: ['--snapshot-interval', '0'] });
    const ping = await post(srv.base, '/ping', {});
    assert.equal(ping.json.registry_version, reset.json.registry_version, 'the reset registry survives restart');
    assert.equal((await post(srv.base, '/get', { table: 'Hits', key: 'user0' })).json.error.code, 'unknown_table');
    await post(srv.base, '/register', { nodes: NODES });
    const after = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
    assert.ok(after.json.ack_lsn > before.json.ack_lsn, 'ack_lsn keeps growing across reset and restart');
    assert.deepEqual((await post(srv.base, '/get', { table: 'Hits', key: 'user0', features: ['n'] })).json, { n: 1 });
    writeFileSync(fault, 'TRUNCATE');
    await new Promise((r) => setTimeout(r, 100));
    const failed = await post(srv.base, '/reset', {});
    assert.equal(failed.status, 500, failed.text);
    assert.equal(failed.json.error.code, 'wal_truncate_failed');
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('--wal-sync=always: a sync past the timeout is wal_sync_timeout', async () => {
  // The timeout is generous so that a real fdatasync on a loaded CI box stays under it;
  // SLOW_SYNC makes the injected sync take twice the timeout.
  const dataDir = tempDataDir();
  const fault = join(dataDir, 'fault');
  const srv = await startServer({ dataDir, env: { SERVICE_FAULT_WAL_FILE: fault }, args: ['--wal-sync', 'always', '--wal-sync-timeout-ms', '250', '--snapshot-interval', '0'] });
  try {
    await post(srv.base, '/register', { nodes: NODES });
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } })).status, 200);
    writeFileSync(fault, 'SLOW_SYNC');
    await new Promise((r) => setTimeout(r, 100));
    const slow = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
    assert.equal(slow.status, 504, slow.text);
    assert.equal(slow.json.error.code, 'wal_sync_timeout');
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('cold_after: idle entities leave hot memory, read the same, thaw on push, and survive a restart', async () => {
  const dataDir = tempDataDir();
  const nodes = [
    { kind: 'event', name: 'Visit', schema: { fields: { user: 'str', ms: 'i64' }, optional_fields: [] }, cold_after: '1s' },
    { kind: 'table', name: 'Visits', upstreams: ['Visit'], key: ['user'], agg: { n: { op: 'count', params: {} }, total: { op: 'sum', params: { field: 'ms', window: '1h' } }, last: { op: 'last_n', params: { field: 'ms', n: 2 } } } },
  ];
  let srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
  try {
    assert.equal((await post(srv.base, '/register', { nodes })).status, 200);
    for (let i = 0; i < 30; i++) assert.equal((await post(srv.base, '/push', { event: 'Visit', data: { user: `v${i % 3}`, ms: i } })).status, 200);
    const before = await post(srv.base, '/batch_get', { requests: ['v0', 'v1', 'v2'].map((k) => ({ table: 'Visits', key: k })) });
    const deadline = Date.now() + 10_000;
    while (!srv.logs.some((l) => l.kind === 'shard.cold_evicted') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const evicted = srv.logs.find((l) => l.kind === 'shard.cold_evicted');
    assert.ok(evicted !== undefined && Number(evicted.frozen) === 3, `the three idle entities are frozen (${JSON.stringify(evicted)})`);
    const cold = await post(srv.base, '/batch_get', { requests: ['v0', 'v1', 'v2'].map((k) => ({ table: 'Visits', key: k })) });
    assert.equal(cold.text, before.text, 'frozen entities read exactly as before');
    assert.equal((await post(srv.base, '/push', { event: 'Visit', data: { user: 'v0', ms: 100 } })).status, 200);
    const v0 = await post(srv.base, '/get', { table: 'Visits', key: 'v0' });
    assert.deepEqual(v0.json, { n: 11, total: 0 + 3 + 6 + 9 + 12 + 15 + 18 + 21 + 24 + 27 + 100, last: [27, 100] }, 'the lifetime count and windows continue after a thaw');
    assert.equal(await srv.stop(), 0, 'clean shutdown snapshots frozen entities too');
    srv = await startServer({ dataDir, args: ['--snapshot-interval', '0'] });
    const after = await post(srv.base, '/batch_get', { requests: ['v0', 'v1', 'v2'].map((k) => ({ table: 'Visits', key: k })) });
    assert.equal(after.json.results[1].n, 10);
    assert.deepEqual(after.json.results[0], v0.json);
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a data dir written with N shards refuses to start with another count', async () => {
  const dataDir = tempDataDir();
  try {
    const srv = await startServer({ dataDir, shards: 2, args: ['--snapshot-interval', '0'] });
    await srv.stop();
    const out = spawnSync(process.execPath, [CLI, 'serve', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', '--data-dir', dataDir, '--shards', '3'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(out.status, 2);
    assert.match(out.stderr, /written with --shards 2; start with --shards 2/);
    const again = await startServer({ dataDir, shards: 2, args: ['--snapshot-interval', '0'] });
    await again.stop();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

for (const memoryOnly of [false, true]) {
  test(`a shard thread that dies is replaced and serves the current registry (${memoryOnly ? 'memory-only' : 'disk: recovers its WAL'})`, async () => {
    const dataDir = tempDataDir();
    const fault = join(dataDir, 'fault');
    const srv = await startServer({ dataDir, memoryOnly, env: { SERVICE_FAULT_WAL_FILE: fault }, args: ['--snapshot-interval', '0'] });
    try {
      // Version 1, then version 2 adds a table: the replacement thread must know both.
      await post(srv.base, '/register', { nodes: NODES.slice(0, 2) });
      for (let i = 0; i < 10; i++) await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
      await post(srv.base, '/register', { nodes: NODES.slice(2) });
      await post(srv.base, '/push', { event: 'Pay', data: { id: 'p1', user: 'u' } });
      writeFileSync(fault, 'CRASH');
      const died = await post(srv.base, '/push', { event: 'Hit', data: { user: 'user0', v: 1 } });
      assert.equal(died.status, 500, died.text);
      assert.equal(died.json.error.code, 'internal_error', 'the push in the dying batch may or may not be applied');
      unlinkSync(fault);
      let ok = await post(srv.base, '/push', { event: 'Pay', data: { id: 'p2', user: 'u' } });
      for (let i = 0; i < 50 && ok.status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        ok = await post(srv.base, '/push', { event: 'Pay', data: { id: `p2-${i}`, user: 'u' } });
      }
      assert.equal(ok.status, 200, ok.text);
      assert.ok(srv.logs.some((l) => l.kind === 'shard.task_failed'), 'the failure is logged');
      const pays = await post(srv.base, '/get', { table: 'Pays', key: 'u', features: ['n'] });
      const hits = await post(srv.base, '/get', { table: 'Hits', key: 'user0', features: ['n'] });
      if (memoryOnly) {
        assert.equal(pays.status, 200, 'the table of version 2 is served by the new thread');
      } else {
        assert.ok(pays.json.n >= 2, `Pays recovered from the WAL (${pays.text})`);
        assert.ok(hits.json.n >= 10 && hits.json.n <= 11, `every acknowledged Hit recovered (${hits.text})`);
      }
    } finally {
      await srv.kill9();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
