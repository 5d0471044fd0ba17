/**
 * The string value cap (--max-string-bytes / SERVICE_MAX_STRING_BYTES,
 * docs/limits.md) over real sockets:
 * - at the default (1 MiB) a value of exactly 1 MiB, ASCII or multi-byte, str or
 *   bytes, is accepted over HTTP and TCP and read back whole, also after a kill -9
 *   and a restart from a snapshot plus the WAL; one byte more is invalid_event
 *   (path fields.<f>, naming the setting) and changes nothing;
 * - a small setting moves the edge with it on both transports, a derived
 *   concatenation past it is null, and a bad setting stops the start (exit 2).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { CLI, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_PUSH } from '../../src/protocol/frame';
import { shardOf } from '../../src/registry/key';
import { STRING_VALUE_BYTES_MAX_DEFAULT, STRING_VALUE_BYTES_MAX_LIMIT } from '../../src/limits';

const MIB = 1024 * 1024;

const NODES = [
  { kind: 'event', name: 'Doc', schema: { fields: { user: 'str', s: 'str', b: 'bytes' }, optional_fields: ['b'] } },
  { kind: 'derivation', name: 'Twice', output_kind: 'event', upstreams: ['Doc'], ops: [{ op: 'with_columns', exprs: { ss: 's + s' } }] },
  {
    kind: 'table', name: 'DocT', upstreams: ['Doc'], key: ['user'],
    agg: { n: { op: 'count' }, last_s: { op: 'last', params: { field: 's' } }, first_s: { op: 'first', params: { field: 's' } }, recent: { op: 'last_n', params: { field: 's', n: 2 } } },
  },
  { kind: 'table', name: 'TwiceT', upstreams: ['Twice'], key: ['user'], agg: { last_ss: { op: 'last', params: { field: 'ss' } } } },
];

async function register(srv: TestServer): Promise<void> {
  const r = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(r.status, 200, r.text);
}

function assertRefused(status: number, json: any, field: string, cap: number): void {
  assert.equal(status, 400, JSON.stringify(json));
  assert.equal(json.error.code, 'invalid_event');
  assert.equal(json.error.path, `fields.${field}`);
  assert.match(json.error.message, new RegExp(`at most ${cap} bytes \\(--max-string-bytes\\)`));
}

describe('the default cap: 1 MiB', () => {
  let srv: TestServer;
  const big = 'a'.repeat(MIB);
  const wide = 'é'.repeat(MIB / 2); // 2 UTF-8 bytes each: exactly 1 MiB
  before(async () => {
    srv = await startServer({ shards: 2, args: ['--snapshot-interval', '1s'] });
    await register(srv);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('a 1 MiB str (ASCII and multi-byte) and a 1 MiB bytes value are accepted over HTTP and TCP and read back whole', async () => {
    assert.equal(STRING_VALUE_BYTES_MAX_DEFAULT, MIB);
    const h = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u1', s: big, b: 'QUJD'.repeat(MIB / 4) } });
    assert.equal(h.status, 200, h.text.slice(0, 300));
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      const t = await c.request(OP_PUSH, { event: 'Doc', data: { user: 'u1', s: wide } });
      assert.equal(t.json?.error, undefined, t.text.slice(0, 300));
      const g = await c.request(OP_GET, { table: 'DocT', key: 'u1' });
      assert.equal(g.json.n, 2);
      assert.equal(g.json.first_s, big);
      assert.equal(g.json.last_s, wide);
      assert.deepEqual(g.json.recent, [big, wide]);
    } finally {
      c.close();
    }
    // s + s is over the cap: null, and the push is still accepted.
    const d = await post(srv.base, '/get', { table: 'TwiceT', key: 'u1' });
    assert.deepEqual(d.json, { last_ss: null });
  });

  test('one byte over 1 MiB is invalid_event on both transports and changes nothing', async () => {
    const before = (await post(srv.base, '/get', { table: 'DocT', key: 'u2' })).json;
    const h = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u2', s: `${big}a` } });
    assertRefused(h.status, h.json, 's', MIB);
    const w = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u2', s: `${wide}é` } });
    assertRefused(w.status, w.json, 's', MIB);
    const b = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u2', s: 'x', b: 'QUJD'.repeat(MIB / 4 + 1) } });
    assertRefused(b.status, b.json, 'b', MIB);
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      const t = await c.request(OP_PUSH, { event: 'Doc', data: { user: 'u2', s: `${big}a` } });
      assertRefused(400, t.json, 's', MIB);
    } finally {
      c.close();
    }
    assert.deepEqual((await post(srv.base, '/get', { table: 'DocT', key: 'u2' })).json, before);
  });

  test('a push whose WAL record would pass 16 MiB (one 1 MiB value read by many tables) is invalid_event, changes nothing, and the next push is served', async () => {
    // Fan: 21 tables read `s` (the text path takes the body), Fan0 keyed by `other`, whose key is on
    // shard 0, the rest by `user`, on shard 1: shard 0's record is written, then shard 1's is 20 MiB,
    // and both are dropped. Copies: one table reads 20 derived copies of `s` (the JSON.parse path).
    const onShard = (s: number): string => { for (let i = 0; ; i++) if (shardOf(`k${i}`, 2) === s) return `k${i}`; };
    const [other, user] = [onShard(0), onShard(1)];
    const fan = Array.from({ length: 21 }, (_, i) => ({ kind: 'table', name: `Fan${i}`, upstreams: ['Wide'], key: i === 0 ? ['other'] : ['user'], agg: { v: { op: 'last', params: { field: 's' } } } }));
    const exprs = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, 's']));
    const r = await post(srv.base, '/register', { nodes: [
      { kind: 'event', name: 'Wide', schema: { fields: { user: 'str', other: 'str', s: 'str' } } },
      { kind: 'event', name: 'Dup', schema: { fields: { user: 'str', s: 'str', id: 'str' } }, dedupe_key: 'id', dedupe_window: '1h' },
      { kind: 'derivation', name: 'Copies', output_kind: 'event', upstreams: ['Dup'], ops: [{ op: 'with_columns', exprs }] },
      { kind: 'table', name: 'CopiesT', upstreams: ['Copies'], key: ['user'], agg: { n: { op: 'count' }, ...Object.fromEntries(Object.keys(exprs).map((c) => [c, { op: 'last', params: { field: c } }])) } },
      ...fan,
    ] });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const tooBig = (status: number, json: any): void => {
      assert.equal(status, 400, JSON.stringify(json).slice(0, 300));
      assert.equal(json.error.code, 'invalid_event');
      assert.equal(json.error.path, 'data');
      assert.match(json.error.message, /WAL_RECORD_BYTES_MAX/);
    };
    const wide = { event: 'Wide', data: { user, other, s: big } };
    const dup = { event: 'Dup', data: { user: 'd1', s: big, id: 'once' } };
    const h = await post(srv.base, '/push', wide);
    tooBig(h.status, h.json);
    const hd = await post(srv.base, '/push', dup);
    tooBig(hd.status, hd.json);
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      tooBig(400, (await c.request(OP_PUSH, wide)).json);
      tooBig(400, (await c.request(OP_PUSH, dup)).json);
      // Nothing was recorded: the same dedupe id is a new push, and every shard keeps serving.
      const ok = await c.request(OP_PUSH, { event: 'Dup', data: { user: 'd1', s: 'small', id: 'once' } });
      assert.equal(ok.json.idempotent_replay, false, ok.text);
    } finally {
      c.close();
    }
    const small = await post(srv.base, '/push', { event: 'Wide', data: { user, other, s: 'small' } });
    assert.equal(small.status, 200, small.text);
    for (let i = 0; i < 21; i++) assert.deepEqual((await post(srv.base, '/get', { table: `Fan${i}`, key: i === 0 ? other : user })).json, { v: 'small' });
    const copies = (await post(srv.base, '/get', { table: 'CopiesT', key: 'd1', features: ['n', 'c0', 'c19'] })).json;
    assert.deepEqual(copies, { n: 1, c0: 'small', c19: 'small' });
  });

  test('the 1 MiB values survive kill -9: restored from a snapshot and the WAL', async () => {
    const snapshots = srv.logs.filter((l) => l.kind === 'shard.snapshot').length;
    const p = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u3', s: big } });
    assert.equal(p.status, 200, p.text.slice(0, 300));
    const deadline = Date.now() + 20_000;
    while (srv.logs.filter((l) => l.kind === 'shard.snapshot').length < snapshots + 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // After the snapshot: this one is replayed from the WAL.
    const q = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u3', s: wide } });
    assert.equal(q.status, 200, q.text.slice(0, 300));
    await srv.kill9();
    const again = await startServer({ shards: 2, dataDir: srv.dataDir });
    try {
      const g = await post(again.base, '/get', { table: 'DocT', key: 'u1' });
      assert.equal(g.json.n, 2);
      assert.deepEqual(g.json.recent, [big, wide]);
      const g3 = await post(again.base, '/get', { table: 'DocT', key: 'u3' });
      assert.deepEqual(g3.json, { n: 2, last_s: wide, first_s: big, recent: [big, wide] });
    } finally {
      await again.stop();
    }
  });
});

describe('a small cap: SERVICE_MAX_STRING_BYTES=16', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({ memoryOnly: true, env: { SERVICE_MAX_STRING_BYTES: '16' } });
    await register(srv);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('16 bytes pass, 17 are invalid_event over HTTP and TCP; a concatenation past 16 is null', async () => {
    assert.equal((await post(srv.base, '/push', { event: 'Doc', data: { user: 'u', s: 'x'.repeat(8) } })).status, 200);
    assert.deepEqual((await post(srv.base, '/get', { table: 'TwiceT', key: 'u' })).json, { last_ss: 'x'.repeat(16) });
    assert.equal((await post(srv.base, '/push', { event: 'Doc', data: { user: 'u', s: 'y'.repeat(16) } })).status, 200);
    // 32 bytes: null, which `last` skips (u keeps its 16 x's; v never had a value).
    assert.deepEqual((await post(srv.base, '/get', { table: 'TwiceT', key: 'u' })).json, { last_ss: 'x'.repeat(16) });
    assert.equal((await post(srv.base, '/push', { event: 'Doc', data: { user: 'v', s: 'y'.repeat(9) } })).status, 200);
    assert.deepEqual((await post(srv.base, '/get', { table: 'TwiceT', key: 'v' })).json, { last_ss: null });
    const h = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u', s: 'z'.repeat(17) } });
    assertRefused(h.status, h.json, 's', 16);
    const w = await post(srv.base, '/push', { event: 'Doc', data: { user: 'u', s: 'é'.repeat(9) } });
    assertRefused(w.status, w.json, 's', 16);
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      assertRefused(400, (await c.request(OP_PUSH, { event: 'Doc', data: { user: 'u', s: 'z'.repeat(17) } })).json, 's', 16);
      assertRefused(400, (await c.request(OP_PUSH, { event: 'Doc', data: { user: 'u', s: 'ok', b: 'QUJD'.repeat(5) } })).json, 'b', 16);
    } finally {
      c.close();
    }
    assert.deepEqual((await post(srv.base, '/get', { table: 'DocT', key: 'u' })).json, { n: 2, last_s: 'y'.repeat(16), first_s: 'x'.repeat(8), recent: ['x'.repeat(8), 'y'.repeat(16)] });
  });

  test('the flag takes a unit and wins over the environment', async () => {
    const kib = await startServer({ memoryOnly: true, args: ['--max-string-bytes', '1KiB'], env: { SERVICE_MAX_STRING_BYTES: '16' } });
    try {
      await register(kib);
      assert.equal((await post(kib.base, '/push', { event: 'Doc', data: { user: 'u', s: 'x'.repeat(1024) } })).status, 200);
      const r = await post(kib.base, '/push', { event: 'Doc', data: { user: 'u', s: 'x'.repeat(1025) } });
      assertRefused(r.status, r.json, 's', 1024);
    } finally {
      await kib.stop();
      kib.cleanup();
    }
  });

  test('a value out of range stops the start (exit 2, naming the setting); serve --help lists it', () => {
    const serve = (args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [CLI, 'serve', '--memory-only', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0', ...args], {
      encoding: 'utf8', timeout: 20_000, env: { ...process.env, SERVICE_MAX_STRING_BYTES: '16' },
    });
    for (const bad of ['0', '-1', 'lots', `${STRING_VALUE_BYTES_MAX_LIMIT + 1}`, '16MiB']) {
      const r = serve(['--max-string-bytes', bad]);
      assert.equal(r.status, 2, `${bad}: ${String(r.stderr)}`);
      assert.match(String(r.stderr), /--max-string-bytes/);
    }
    const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8', timeout: 20_000 });
    assert.match(help.stdout, /--max-string-bytes BYTES[^\n]*SERVICE_MAX_STRING_BYTES/);
  });
});
