/**
 * Socket faults replayed black-box over real sockets, each ending with the exact
 * count of acknowledged pushes: idle sockets without the auth token against the TCP
 * cap, the descriptor limit (the server started under `ulimit -n 256` and flooded
 * with more keep-alive connections than it has descriptors, on both HTTP engines),
 * a SIGSTOP of the server longer than its idle, frame and auth timeouts with requests
 * waiting unread, and bodies that are not UTF-8 over TCP.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { RawHttp, rawRequest } from '../harness/http_raw';
import { encodeFrame, FrameDecoder, OP_AUTH, OP_ERROR_RESPONSE, OP_GET, OP_PING, OP_PUSH, type Frame } from '../../src/protocol/frame';
import { TCP_UNAUTHENTICATED_SHARE } from '../../src/limits';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', note: 'str' }, optional_fields: ['note'] } },
  { kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: { cnt: { op: 'count' } } },
];

const pushBody = (user: string): string => JSON.stringify({ event: 'Txn', data: { user } });

/** A raw TCP socket that records every frame it receives and when it closed (performance.now()). */
class Probe {
  readonly frames: Frame[] = [];
  closedAt = -1;
  readonly #decoder = new FrameDecoder(1 << 20);
  readonly openedAt = performance.now();
  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.#decoder.push(d);
      for (let r = this.#decoder.next(); r.kind === 'frame'; r = this.#decoder.next()) this.frames.push(r.frame);
    });
    socket.on('error', () => {});
    socket.on('close', () => { this.closedAt = performance.now(); });
  }

  static connect(port: number): Promise<Probe> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => resolve(new Probe(s)));
      s.once('error', reject);
    });
  }

  json(i: number): any {
    return JSON.parse(this.frames[i].payload.toString('utf8'));
  }
}

/** `p`, or a failure naming `what` after `ms`. */
async function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => { t = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms); })]);
  } finally {
    clearTimeout(t);
  }
}

async function until(what: string, ms: number, ok: () => boolean): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

/**
 * Keeps the server's front thread busy (two connections pipelining bursts of 2,000 pings)
 * while `fn` runs: a SIGSTOP then lands while it runs JavaScript rather than while it waits
 * in epoll, which is when, on SIGCONT, the timers run before the bytes that arrived during
 * the pause are read (the order that used to close busy connections as idle).
 */
async function busyWhile<T>(port: number, token: string | null, fn: () => Promise<T>): Promise<T> {
  const PINGS = 2000;
  const burst = Buffer.concat(Array.from({ length: PINGS }, () => encodeFrame(OP_PING, '')));
  let busy = true;
  const hammer = async (): Promise<void> => {
    const p = await Probe.connect(port);
    if (token !== null) {
      p.socket.write(encodeFrame(OP_AUTH, JSON.stringify({ token })));
      await until('AUTH answered', 3000, () => p.frames.length === 1);
    }
    // The next burst goes out as soon as the last one is answered (from the data event, not a poll).
    let wanted = p.frames.length + PINGS;
    const done = new Promise<void>((resolve) => {
      p.socket.on('data', () => {
        if (p.frames.length < wanted) return;
        if (!busy) { resolve(); return; }
        p.frames.length = 0;
        wanted = PINGS;
        p.socket.write(burst);
      });
      p.socket.on('close', () => resolve());
    });
    p.socket.write(burst);
    await done;
    p.socket.destroy();
  };
  const hammers = [hammer(), hammer()];
  try {
    await sleep(100);
    return await fn();
  } finally {
    busy = false;
    await Promise.all(hammers);
  }
}

function assertAck(r: { op: number; text: string; json: any }): void {
  assert.equal(r.op, OP_PUSH, r.text);
  assert.equal(typeof r.json.ack_lsn, 'number', r.text);
}

describe('TCP with auth: idle sockets without the token', () => {
  const CAP = 40;
  const SHARE = Math.max(1, Math.floor(CAP * TCP_UNAUTHENTICATED_SHARE));
  const AUTH_TIMEOUT_MS = 1000;
  const TOKEN = 'f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0';
  const AUTH = { authorization: `Bearer ${TOKEN}` };
  let dir: string;
  let srv: TestServer;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'streamfeat-token-'));
    writeFileSync(join(dir, 'token'), TOKEN);
    srv = await startServer({ memoryOnly: true, args: ['--auth-token-file', join(dir, 'token'), '--tcp-connections-max', String(CAP), '--tcp-auth-timeout', `${AUTH_TIMEOUT_MS}ms`] });
    assert.equal((await post(srv.base, '/register', { nodes: NODES }, AUTH)).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); rmSync(dir, { recursive: true, force: true }); });

  async function count(user: string): Promise<unknown> {
    return (await post(srv.base, '/get', { table: 'UserT', key: user }, AUTH)).json;
  }

  test('they hold at most their share of the cap (newer ones displace the oldest) and only until the auth deadline; a client with the token gets in', async () => {
    const idle: Probe[] = [];
    for (let i = 0; i < CAP; i++) idle.push(await Probe.connect(srv.tcpPort));
    await until('the displaced ones closed', 3000, () => idle.filter((p) => p.closedAt >= 0).length === CAP - SHARE);
    const held = idle.filter((p) => p.closedAt < 0);
    const displaced = idle.filter((p) => p.closedAt >= 0);
    // The oldest went first: the held ones are the last SHARE to connect.
    assert.deepEqual(held, idle.slice(CAP - SHARE));
    for (const p of displaced) {
      assert.equal(p.frames.length, 1);
      assert.equal(p.frames[0].op, OP_ERROR_RESPONSE);
      assert.equal(p.json(0).error.code, 'too_many_connections');
      assert.equal(p.json(0).error.unauthenticated_max, SHARE);
    }
    // A client with the token gets in (displacing the oldest held socket): AUTH, then 5 pushes, all acked.
    const c = await TcpClient.connect(srv.tcpPort);
    assert.deepEqual((await c.request(OP_AUTH, { token: TOKEN })).json, { ok: true });
    for (let i = 0; i < 5; i++) assertAck(await c.request(OP_PUSH, pushBody('authed')));
    await until('the oldest held socket displaced', 3000, () => held[0].closedAt >= 0);
    const waiting = held.slice(1);
    assert.ok(waiting.every((p) => p.closedAt < 0 && p.frames.length === 0));
    // Each waiting socket is answered unauthorized at its deadline, then closed.
    await until('waiting sockets closed', AUTH_TIMEOUT_MS + 3000, () => waiting.every((p) => p.closedAt >= 0));
    for (const p of waiting) {
      assert.equal(p.frames.length, 1);
      assert.equal(p.json(0).error.code, 'unauthorized');
      assert.match(p.json(0).error.message, /SERVICE_TCP_AUTH_TIMEOUT/);
      assert.ok(p.closedAt - p.openedAt >= AUTH_TIMEOUT_MS - 50, `closed after ${p.closedAt - p.openedAt} ms`);
    }
    // Authenticated connections may fill the whole cap; one more is then refused (nothing to displace).
    const authed: TcpClient[] = [c];
    for (let i = 1; i < CAP; i++) {
      const a = await TcpClient.connect(srv.tcpPort);
      assert.deepEqual((await a.request(OP_AUTH, { token: TOKEN })).json, { ok: true });
      authed.push(a);
    }
    const over = await Probe.connect(srv.tcpPort);
    await until('refused', 3000, () => over.closedAt >= 0);
    assert.equal(over.json(0).error.code, 'too_many_connections');
    assert.equal(over.json(0).error.limit, CAP);
    // The first authenticated connection is still served, past its deadline.
    assertAck(await c.request(OP_PUSH, pushBody('authed')));
    for (const a of authed) a.close();
    assert.deepEqual(await count('authed'), { cnt: 6 });
  });

  test('an AUTH frame that waited unread through a server pause longer than the deadline is honoured', async () => {
    const p = await Probe.connect(srv.tcpPort);
    await busyWhile(srv.tcpPort, TOKEN, async () => {
      srv.proc.kill('SIGSTOP');
      try {
        p.socket.write(Buffer.concat([encodeFrame(OP_AUTH, JSON.stringify({ token: TOKEN })), encodeFrame(OP_PUSH, pushBody('paused'))]));
        await sleep(AUTH_TIMEOUT_MS + 500);
      } finally {
        srv.proc.kill('SIGCONT');
      }
    });
    await until('two replies', 3000, () => p.frames.length >= 2);
    assert.deepEqual(p.json(0), { ok: true });
    assert.equal(p.frames[1].op, OP_PUSH, p.frames[1].payload.toString());
    p.socket.destroy();
    assert.deepEqual(await count('paused'), { cnt: 1 });
  });
});

describe('TCP timeouts across a server pause (SIGSTOP)', () => {
  let srv: TestServer;
  const IDLE_MS = 1000;
  before(async () => {
    srv = await startServer({ memoryOnly: true, args: ['--tcp-idle-timeout', `${IDLE_MS}ms`, '--tcp-frame-timeout', `${IDLE_MS}ms`] });
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  test('requests that arrived during the pause are answered, not closed as idle or as slow frames; idle connections still close after', async () => {
    const N = 8;
    const clients: TcpClient[] = [];
    for (let i = 0; i < N; i++) {
      const c = await TcpClient.connect(srv.tcpPort);
      assertAck(await c.request(OP_PUSH, pushBody('p')));
      clients.push(c);
    }
    // One more connection is inside a frame when the server stops.
    const half = await TcpClient.connect(srv.tcpPort);
    const frame = encodeFrame(OP_PUSH, pushBody('p'));
    half.writeRaw(frame.subarray(0, 10));
    const closed = [...clients, half].map((c) => c.closed.then(() => performance.now()));
    let resumedAt = 0;
    await busyWhile(srv.tcpPort, null, async () => {
      srv.proc.kill('SIGSTOP');
      try {
        for (const c of clients) c.writeRaw(encodeFrame(OP_PUSH, pushBody('p')));
        half.writeRaw(frame.subarray(10));
        await sleep(2 * IDLE_MS); // past the idle and the frame timeout
      } finally {
        srv.proc.kill('SIGCONT');
        resumedAt = performance.now();
      }
    });
    const replies = await within('a reply on every connection (a request left unanswered)', 5000, Promise.all([...clients, half].map((c) => c.next())));
    for (const r of replies) assertAck(r);
    // Idle again: each connection closes about IDLE_MS after its reply.
    const at = await Promise.all(closed);
    for (const t of at) assert.ok(t - resumedAt >= IDLE_MS - 50 && t - resumedAt < IDLE_MS + 3000, `closed ${t - resumedAt} ms after the pause`);
    assert.deepEqual((await post(srv.base, '/get', { table: 'UserT', key: 'p' })).json, { cnt: 2 * N + 1 });
  });
});

describe('descriptor exhaustion: the server under ulimit -n 256', () => {
  const NOFILE = 256;
  for (const engine of ['uws', 'net'] as const) {
    test(`${engine}: more keep-alive connections than descriptors; pushes are still acked, WAL segments roll, snapshots are written`, async () => {
      const dataDir = tempDataDir();
      const srv = await startServer({ dataDir, nofile: NOFILE, args: ['--http-engine', engine, '--wal-segment-bytes', '512', '--snapshot-interval', '200ms'] });
      const conns: Array<{ destroy(): void }> = [];
      try {
        const budget = srv.logs.find((l) => l.kind === 'server.fd_budget') as Record<string, number>;
        assert.ok(budget !== undefined, 'server.fd_budget is logged at start');
        assert.equal(budget.nofile_limit, NOFILE);
        const httpMax = budget.http_connections_max;
        const tcpMax = budget.tcp_connections_max;
        assert.ok(httpMax >= 8 && tcpMax >= 8 && budget.fds_in_use + budget.fds_reserved + httpMax + tcpMax <= NOFILE, JSON.stringify(budget));
        // The client connection is the first HTTP one: register on it, push on it later.
        const client = await RawHttp.connect(srv.httpPort);
        conns.push({ destroy: () => client.close() });
        await client.write(rawRequest('/register', { nodes: NODES }));
        assert.equal((await client.next())!.status, 200);
        const tcp = await TcpClient.connect(srv.tcpPort);
        conns.push({ destroy: () => tcp.close() });
        // Flood: more HTTP and TCP connections than the process has descriptors.
        const httpExtra = NOFILE;
        const tcpExtra = 64;
        const http: RawHttp[] = [];
        for (let i = 0; i < httpMax - 1 + httpExtra; i++) {
          const h = await RawHttp.connect(srv.httpPort);
          http.push(h);
          conns.push({ destroy: () => h.close() });
        }
        const probes: Probe[] = [];
        for (let i = 0; i < tcpMax - 1 + tcpExtra; i++) {
          const p = await Probe.connect(srv.tcpPort);
          probes.push(p);
          conns.push({ destroy: () => p.socket.destroy() });
        }
        await sleep(300);
        const answered = await Promise.all(http.map((h) => Promise.race([h.next(), sleep(50).then(() => undefined)])));
        const refusedHttp = answered.filter((r) => r !== undefined);
        assert.equal(refusedHttp.length, httpExtra, 'connections past the HTTP cap are refused, the rest held');
        for (const r of refusedHttp) {
          assert.equal(r!.status, 503);
          assert.equal(r!.json.error.code, 'too_many_connections');
          assert.equal(r!.json.error.limit, httpMax);
        }
        const refusedTcp = probes.filter((p) => p.frames.length > 0);
        assert.equal(refusedTcp.length, tcpExtra);
        for (const p of refusedTcp) assert.equal(p.json(0).error.code, 'too_many_connections');
        // Every slot is taken: pushes on the held connections are acked, WAL segments keep rolling.
        const first = readdirSync(join(dataDir, 'shard-0', 'wal')).filter((n) => n.endsWith('.log')).sort().at(-1);
        let lastLsn = 0;
        for (let i = 0; i < 40; i++) {
          await client.write(rawRequest('/push', pushBody('flood')));
          const r = (await client.next())!;
          assert.equal(r.status, 200, r.body);
          const t = await tcp.request(OP_PUSH, pushBody('flood'));
          assertAck(t);
          lastLsn = Math.max(r.json.ack_lsn, t.json.ack_lsn);
        }
        const segments = readdirSync(join(dataDir, 'shard-0', 'wal')).filter((n) => n.endsWith('.log')).sort();
        assert.ok(segments.at(-1)! > first!, `a new segment after the flood (${first} -> ${segments.at(-1)})`);
        await until('a snapshot covering the pushes', 5000, () => srv.logs.some((l) => l.kind === 'shard.snapshot' && (l.lsn as number) >= lastLsn));
        for (const bad of ['wal.write_failed', 'wal.snapshot_failed', 'server.accept_failed']) assert.equal(srv.logs.filter((l) => l.kind === bad).length, 0, bad);
        // Reads still work on a held connection.
        await client.write(rawRequest('/get', { table: 'UserT', key: 'flood' }));
        assert.deepEqual((await client.next())!.json, { cnt: 80 });
      } finally {
        for (const c of conns) c.destroy();
        await srv.kill9();
      }
      // Every acked push survives kill -9.
      const again = await startServer({ dataDir });
      try {
        assert.deepEqual((await post(again.base, '/get', { table: 'UserT', key: 'flood' })).json, { cnt: 80 });
      } finally {
        await again.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});

describe('TCP bodies that are not UTF-8', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({ memoryOnly: true });
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
  });
  after(async () => { await srv.stop(); srv.cleanup(); });

  /** A push (or get) payload with raw bytes `bad` spliced into the key string. */
  function withKeyBytes(prefix: string, bad: number[], suffix: string): Buffer {
    return Buffer.concat([Buffer.from(prefix), Buffer.from(bad), Buffer.from(suffix)]);
  }

  test('invalid UTF-8 in a key or a string value is invalid_json_body with the offset; nothing is stored; valid multi-byte keys are distinct entities', async () => {
    const c = await TcpClient.connect(srv.tcpPort);
    const prefix = '{"event":"Txn","data":{"user":"';
    const cases: number[][] = [[0xff], [0xfe], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe4, 0xb8], [0x80]];
    for (const bad of cases) {
      const r = await c.request(OP_PUSH, withKeyBytes(prefix, bad, '"}}'));
      assert.equal(r.op, OP_ERROR_RESPONSE, r.text);
      assert.equal(r.json.error.code, 'invalid_json_body', r.text);
      assert.equal(r.json.error.offset, prefix.length, r.text);
      assert.equal(typeof r.json.registry_version, 'number');
    }
    const value = await c.request(OP_PUSH, withKeyBytes('{"event":"Txn","data":{"user":"ok","note":"a', [0xff], '"}}'));
    assert.equal(value.json.error.code, 'invalid_json_body', value.text);
    const g = await c.request(OP_GET, withKeyBytes('{"table":"UserT","key":"', [0xff], '"}'));
    assert.equal(g.json.error.code, 'invalid_json_body', g.text);
    assert.equal(g.json.registry_version, undefined, 'get errors carry no registry_version');
    // Nothing was stored under the replacement character, nor under "ok".
    for (const key of ['\ufffd', 'ok']) assert.deepEqual((await c.request(OP_GET, { table: 'UserT', key })).json, {});
    // Valid UTF-8: two- to four-byte characters, a combining sequence and its precomposed form, each its own entity.
    const keys = ['\u00e9', 'e\u0301', '\u4e2d', '\u{1f600}', '\u00ff', '\u00fe'];
    for (const key of keys) assertAck(await c.request(OP_PUSH, pushBody(key)));
    assertAck(await c.request(OP_PUSH, pushBody('\u{1f600}')));
    for (const key of keys) assert.deepEqual((await c.request(OP_GET, { table: 'UserT', key })).json, { cnt: key === '\u{1f600}' ? 2 : 1 }, key);
    c.close();
    assert.deepEqual((await get(srv.base, '/registry')).json.registry_version, 1);
  });
});
