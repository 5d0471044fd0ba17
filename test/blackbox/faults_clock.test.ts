/**
 * Wall clock steps inside the server (SERVICE_FAULT_CLOCK_FILE shifts the wall
 * clock the server reads; docs/time.md), replayed black-box over real sockets:
 *
 *   step back 1 h            windows still expire, time_since advances, one
 *                            server.clock_jump line (backward)
 *   restart 1 h behind       server time resumes from the data dir's newest time:
 *                            time_since small, decayed_sum as if no time passed,
 *                            a new key's 1-minute count = its pushes; the gap on
 *                            /metrics (streamfeat_clock_*)
 *   step forward 1 h         a dedupe value is still replayed (count 1) while the
 *                            windows see the hour pass
 *   step back 1 h mid-head   the slow-head and partial-frame cut-offs still fire on time
 *   step forward 1 h mid-head  the head is not cut early and is answered
 *
 * Server times are bounded by this process's own monotonic readings around each
 * request; the cut-offs by their timeouts plus one sweep interval.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { scrape, sampleValue } from '../harness/prom';
import { HTTP_HEADER_TIMEOUT_MS, HTTP_TIMEOUT_SWEEP_MS } from '../../src/limits';

const H = 3_600_000;
const HALF_LIFE_MS = 60_000;
const NODES = [
  { kind: 'event', name: 'E', schema: { fields: { k: 'str', v: 'f64' }, optional_fields: [] } },
  { kind: 'event', name: 'P', schema: { fields: { id: 'str', k: 'str' }, optional_fields: [] }, dedupe_key: 'id', dedupe_window: '10m' },
  {
    kind: 'table', name: 'T', upstreams: ['E'], key: ['k'], agg: {
      n_2s: { op: 'count', params: { window: '2s' } }, n_1m: { op: 'count', params: { window: '1m' } },
      since: { op: 'time_since', params: {} }, dsum: { op: 'decayed_sum', params: { field: 'v', half_life: '1m' } },
    },
  },
  { kind: 'table', name: 'PT', upstreams: ['P'], key: ['k'], agg: { n: { op: 'count', params: {} } } },
];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Clocked { srv: TestServer; root: string; offsetFile: string }

/** A server on `<root>/data` whose wall clock is shifted by the ms in `<root>/clock` (offsetMs from its first reading). */
async function start(opts: { root?: string; offsetMs?: number; args?: string[]; admin?: boolean; register?: boolean } = {}): Promise<Clocked> {
  const root = opts.root ?? tempDataDir();
  const offsetFile = join(root, 'clock');
  writeFileSync(offsetFile, String(opts.offsetMs ?? 0));
  const srv = await startServer({ dataDir: join(root, 'data'), admin: opts.admin, args: opts.args, env: { SERVICE_FAULT_CLOCK_FILE: offsetFile } });
  if (opts.register ?? true) {
    const r = await post(srv.base, '/register', { nodes: NODES });
    assert.equal(r.status, 200, r.text);
  }
  return { srv, root, offsetFile };
}

/** Shifts the server's wall clock and waits for its server.clock_jump line (the next check, within a second). */
async function step(c: Clocked, offsetMs: number, jumps: number): Promise<Record<string, unknown>> {
  writeFileSync(c.offsetFile, String(offsetMs));
  const deadline = performance.now() + 5_000;
  for (;;) {
    const lines = c.srv.logs.filter((l) => l.kind === 'server.clock_jump');
    if (lines.length >= jumps) return lines[jumps - 1];
    assert.ok(performance.now() < deadline, 'no server.clock_jump line within 5 s of the step');
    await sleep(50);
  }
}

/** Pushes one E for `k`: [sent, acked], this process's monotonic readings around the server's stamp. */
async function push(srv: TestServer, k: string): Promise<[number, number]> {
  const sent = performance.now();
  const r = await post(srv.base, '/push', { event: 'E', data: { k, v: 1 } });
  assert.equal(r.status, 200, r.text);
  return [sent, performance.now()];
}

/** time_since read between `before` and `after` of a push stamped inside `pushed`. */
function sinceWithin(since: number, pushed: [number, number], before: number, after: number): void {
  assert.ok(since >= before - pushed[1] - 2 && since <= after - pushed[0] + 2, `time_since ${since} outside the client's [${Math.round(before - pushed[1])}, ${Math.round(after - pushed[0])}]`);
}

async function row(srv: TestServer, table: string, k: string): Promise<Record<string, number>> {
  const r = await post(srv.base, '/get', { table, key: k });
  assert.equal(r.status, 200, r.text);
  return r.json as Record<string, number>;
}

function near(actual: unknown, expected: number, tolerance: number, what: string): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tolerance, `${what}: ${String(actual)}, expected ${expected} ± ${tolerance}`);
}

async function stop(c: Clocked): Promise<void> {
  await c.srv.stop();
  rmSync(c.root, { recursive: true, force: true });
}

/** Resolves when the server closes `sock`, with the ms since `t0` and what it sent; ms Infinity when it is still open `waitMs` after t0. */
function closed(sock: net.Socket, t0: number, waitMs: number): Promise<{ ms: number; got: string }> {
  let got = '';
  sock.on('data', (d: Buffer) => { got += d.toString('latin1'); });
  sock.on('error', () => {});
  return new Promise((resolve) => {
    const timer = setTimeout(() => { sock.destroy(); resolve({ ms: Infinity, got }); }, waitMs - (performance.now() - t0));
    sock.once('close', () => { clearTimeout(timer); resolve({ ms: performance.now() - t0, got }); });
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ port, host: '127.0.0.1' }, () => resolve(s));
    s.once('error', reject);
  });
}

describe('wall clock steps inside the server', { concurrency: true, timeout: 60_000 }, () => {
  test('step back 1 h: windows still expire and time_since advances', async () => {
    const c = await start();
    try {
      const pushed = await push(c.srv, 'a');
      const line = await step(c, -H, 1);
      assert.equal(line.direction, 'backward');
      assert.equal(line.at, 'running');
      near(line.jump_ms, -H, 2, 'jump_ms');
      assert.equal(line.step_ms, 0, 'server time did not move');
      near(line.server_ahead_ms, H, 2, 'server_ahead_ms');
      const pushedAfter = await push(c.srv, 'b');
      await sleep(2_300);
      const before = performance.now();
      const a = await row(c.srv, 'T', 'a');
      const b = await row(c.srv, 'T', 'b');
      const after = performance.now();
      assert.equal(a.n_2s, 0, 'the 2 s window expired');
      assert.equal(a.n_1m, 1);
      assert.equal(b.n_2s, 0, 'a push after the step expires too');
      assert.equal(b.n_1m, 1);
      sinceWithin(a.since, pushed, before, after);
      sinceWithin(b.since, pushedAfter, before, after);
      near(a.dsum, 2 ** (-a.since / HALF_LIFE_MS), 1e-9, 'decayed_sum decays with time_since');
      assert.equal(c.srv.logs.filter((l) => l.kind === 'server.clock_jump').length, 1, 'one line for the step');
    } finally {
      await stop(c);
    }
  });

  test('restart with the clock 1 h behind: server time resumes from the data dir', async () => {
    let c = await start();
    const first = await push(c.srv, 'a');
    await push(c.srv, 'a');
    await c.srv.stop();
    c = await start({ root: c.root, offsetMs: -H, admin: true, register: false });
    try {
      const boot = c.srv.logs.find((l) => l.kind === 'server.clock_jump');
      assert.ok(boot !== undefined, 'one server.clock_jump line at boot');
      assert.equal(boot.at, 'boot');
      assert.equal(boot.direction, 'backward');
      assert.ok((boot.server_ahead_ms as number) > H - 60_000 && (boot.server_ahead_ms as number) <= H, `server_ahead_ms ${String(boot.server_ahead_ms)}`);
      await push(c.srv, 'a');
      const last = await push(c.srv, 'a');
      await push(c.srv, 'c');
      const lastC = await push(c.srv, 'c');
      const a = await row(c.srv, 'T', 'a');
      const cc = await row(c.srv, 'T', 'c');
      const read = performance.now();
      assert.equal(a.n_1m, 4, 'the two pushes before the restart and the two after');
      assert.ok(a.since >= 0 && a.since <= read - last[0] + 2, `time_since ${a.since} ms right after a push`);
      assert.ok(a.dsum <= 4 && a.dsum >= 4 * 2 ** (-(read - first[0]) / HALF_LIFE_MS), `decayed_sum ${a.dsum}: four pushes, decayed by at most the time since the first`);
      assert.equal(cc.n_1m, 2, "a new key's 1-minute count is its pushes");
      assert.equal(cc.n_2s, 2);
      assert.ok(cc.since >= 0 && cc.since <= read - lastC[0] + 2, `time_since ${cc.since}`);
      const m = await scrape(c.srv.adminBase!);
      assert.equal(sampleValue(m, 'streamfeat_clock_jumps_total', { direction: 'backward' }), 1);
      assert.equal(sampleValue(m, 'streamfeat_clock_jumps_total', { direction: 'forward' }), 0);
      const ahead = sampleValue(m, 'streamfeat_clock_ahead_seconds', {})!;
      assert.ok(ahead > 3540 && ahead <= 3600, `streamfeat_clock_ahead_seconds ${ahead}`);
    } finally {
      await stop(c);
    }
  });

  test('step forward 1 h: a dedupe value is still replayed (count 1); windows see the hour pass', async () => {
    const c = await start();
    try {
      await push(c.srv, 'a');
      const first = await post(c.srv.base, '/push', { event: 'P', data: { id: 'x', k: 'u' } });
      assert.equal(first.status, 200, first.text);
      const line = await step(c, H, 1);
      assert.equal(line.direction, 'forward');
      near(line.jump_ms, H, 2, 'jump_ms');
      near(line.step_ms, H, 2, 'server time followed the wall clock');
      const again = await post(c.srv.base, '/push', { event: 'P', data: { id: 'x', k: 'u' } });
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.json, { ...first.json, idempotent_replay: true }, 'the original ack, replayed');
      assert.deepEqual(await row(c.srv, 'PT', 'u'), { n: 1 });
      const a = await row(c.srv, 'T', 'a');
      assert.equal(a.n_1m, 0, 'the 1-minute window saw the hour pass');
      assert.ok(a.since >= H && a.since < H + 10_000, `time_since ${a.since}`);
    } finally {
      await stop(c);
    }
  });

  test('step back 1 h after a head and a frame started: both cut-offs still fire on time', async () => {
    const c = await start({ args: ['--http-engine', 'net', '--tcp-frame-timeout', '2s'], register: false });
    try {
      const h = await connect(c.srv.httpPort);
      const t = await connect(c.srv.tcpPort);
      const t0 = performance.now();
      h.write('POST /ping HTTP/1.1\r\nHost: x\r\n');
      t.write(Buffer.from([0, 0])); // two bytes of a frame's length
      const hClosed = closed(h, t0, HTTP_HEADER_TIMEOUT_MS + 5_000);
      const tClosed = closed(t, t0, 5_000);
      await step(c, -H, 1);
      const tr = await tClosed;
      assert.ok(tr.ms >= 2_000 && tr.ms < 3_000, `the partial frame was cut after ${Math.round(tr.ms)} ms (timeout 2 s)`);
      assert.match(tr.got, /"code":"frame_error"/);
      const hr = await hClosed;
      assert.ok(hr.ms >= HTTP_HEADER_TIMEOUT_MS && hr.ms < HTTP_HEADER_TIMEOUT_MS + HTTP_TIMEOUT_SWEEP_MS + 1_500, `the head was cut after ${Math.round(hr.ms)} ms (HTTP_HEADER_TIMEOUT_MS ${HTTP_HEADER_TIMEOUT_MS})`);
      assert.match(hr.got, /^HTTP\/1\.1 400 [^]*"code":"http_protocol_error"[^]*HTTP_HEADER_TIMEOUT_MS/);
    } finally {
      await stop(c);
    }
  });

  test('step forward 1 h during an HTTP head: not cut early, answered when complete', async () => {
    const c = await start({ args: ['--http-engine', 'net'], register: false });
    try {
      const h = await connect(c.srv.httpPort);
      let got = '';
      let isClosed = false;
      h.on('data', (d: Buffer) => { got += d.toString('latin1'); });
      h.on('close', () => { isClosed = true; });
      h.write('POST /ping HTTP/1.1\r\nHost: x\r\n');
      await step(c, H, 1);
      await sleep(2 * HTTP_TIMEOUT_SWEEP_MS + 500); // two more timeout sweeps after the server saw the step
      assert.equal(isClosed, false, `the head was cut: ${got}`);
      assert.equal(got, '');
      h.write('Content-Length: 0\r\n\r\n');
      const deadline = performance.now() + 5_000;
      while (!got.includes('\r\n\r\n') && performance.now() < deadline) await sleep(20);
      assert.match(got, /^HTTP\/1\.1 200 OK\r\n[^]*"pong":true/);
      h.destroy();
    } finally {
      await stop(c);
    }
  });
});
