/**
 * Cold entities leave memory, black-box over real sockets:
 * - idle entities past cold_after go to the on-disk cold store (<data>/shard-N/cold/)
 *   and read back exactly; entities whose features are all empty are dropped and
 *   read `{}` like a key never pushed; /metrics shows it;
 * - kill -9 with cold entities (with and without a snapshot taken while they were
 *   cold): after the restart the exact values are back;
 * - --memory-limit evicts the least recently pushed entities to disk, values exact;
 * - --memory-only with --memory-limit refuses NEW entities with memory_limit_exceeded
 *   while existing ones keep updating.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { get, post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { parsePrometheus, sampleValue } from '../harness/prom';
import { encodeFrame, OP_PUSH } from '../../src/protocol/frame';

const EVENT = { kind: 'event', name: 'Hit', schema: { fields: { sid: 'str', x: 'i64', note: 'str' }, optional_fields: ['note'] }, cold_after: '1s' };
/** Every feature windowed: empty 1 s after the last hit, i.e. by the time the entity is cold. */
const SESSIONS = { kind: 'table', name: 'Sessions', upstreams: ['Hit'], key: ['sid'], agg: { n: { op: 'count', params: { window: '1s' } }, top: { op: 'max', params: { field: 'x', window: '1s' } } } };
/** Lifetime and long-window features: never empty when cold. */
const TOTALS = {
  kind: 'table', name: 'Totals', upstreams: ['Hit'], key: ['sid'],
  agg: { n: { op: 'count', params: {} }, sum: { op: 'sum', params: { field: 'x', window: '1h' } }, last: { op: 'last_n', params: { field: 'x', n: 2 } } },
};
const NODES = [EVENT, SESSIONS, TOTALS];

/** Pushes pipelined over one TCP connection; returns the replies' error codes (null = acked). */
async function pushAll(srv: TestServer, events: Array<Record<string, unknown>>): Promise<Array<string | null>> {
  const c = await TcpClient.connect(srv.tcpPort);
  const codes: Array<string | null> = [];
  try {
    for (let i = 0; i < events.length; i += 500) {
      const part = events.slice(i, i + 500);
      const replies = part.map(() => c.next());
      for (const data of part) c.writeRaw(encodeFrame(OP_PUSH, JSON.stringify({ event: 'Hit', data })));
      for (const r of await Promise.all(replies)) codes.push(r.json?.error?.code ?? (r.json?.ack_lsn !== undefined ? null : `no ack: ${r.text}`));
    }
  } finally {
    c.close();
  }
  return codes;
}

async function rows(srv: TestServer, table: string, keys: string[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const r = await post(srv.base, '/batch_get', { requests: keys.slice(i, i + 1000).map((key) => ({ table, key })) });
    assert.equal(r.status, 200, r.text);
    out.push(...r.json.results);
  }
  return out;
}

async function metrics(srv: TestServer): Promise<ReturnType<typeof parsePrometheus>> {
  return parsePrometheus((await get(srv.adminBase!, '/metrics')).text);
}

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function logSum(srv: TestServer, field: string): number {
  return srv.logs.filter((l) => l.kind === 'shard.cold_evicted').reduce((n, l) => n + Number(l[field] ?? 0), 0);
}

function coldFileBytes(dataDir: string, shard = 0): number {
  const dir = join(dataDir, `shard-${shard}`, 'cold');
  return readdirSync(dir).filter((f) => f.endsWith('.seg')).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

const KEYS = Array.from({ length: 600 }, (_, i) => `sess-${i}`);
/** Three hits per key; expected Totals rows computed from the pushes. */
function hits(): { events: Array<Record<string, unknown>>; totals: unknown[] } {
  const events: Array<Record<string, unknown>> = [];
  const acc = KEYS.map(() => ({ n: 0, sum: 0, last: [] as number[] }));
  for (let round = 0; round < 3; round++) {
    KEYS.forEach((sid, i) => {
      const x = i * 10 + round;
      events.push({ sid, x });
      const a = acc[i];
      a.n++;
      a.sum += x;
      a.last = [...a.last, x].slice(-2);
    });
  }
  return { events, totals: acc.map((a) => ({ n: a.n, sum: a.sum, last: a.last })) };
}

test('idle entities go to the on-disk cold store and read back exactly; empty ones are dropped and read {}', async () => {
  const srv = await startServer({ admin: true, args: ['--snapshot-interval', '0'] });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    const { events, totals } = hits();
    assert.ok((await pushAll(srv, events)).every((c) => c === null));
    assert.deepEqual(await rows(srv, 'Totals', KEYS), totals);
    await until('every entity swept', () => (logSum(srv, 'frozen') >= KEYS.length && logSum(srv, 'dropped') >= KEYS.length ? true : undefined));
    assert.equal(logSum(srv, 'frozen'), KEYS.length, 'the Totals rows were frozen');
    assert.equal(logSum(srv, 'dropped'), KEYS.length, 'the Sessions rows (every window empty) were dropped, not stored');
    assert.ok(coldFileBytes(srv.dataDir) > KEYS.length * 20, 'the frozen entities are in the data dir');
    const m = await until('cold figures in /metrics', async () => {
      const x = await metrics(srv);
      return sampleValue(x, 'streamfeat_cold_entities', { shard: '0', table: 'Totals' }) === KEYS.length ? x : undefined;
    });
    assert.equal(sampleValue(m, 'streamfeat_entities', { shard: '0', table: 'Sessions' }), 0, 'dropped entities are not held anywhere');
    assert.equal(sampleValue(m, 'streamfeat_cold_dropped_total', { shard: '0' }), KEYS.length);
    assert.equal(sampleValue(m, 'streamfeat_cold_frozen_total', { shard: '0' }), KEYS.length);
    assert.ok(sampleValue(m, 'streamfeat_cold_store_bytes', { shard: '0' })! > 0);
    assert.ok(sampleValue(m, 'streamfeat_cold_store_live_bytes', { shard: '0' })! > 0);
    // Back from disk, exactly; a dropped key answers {} as a key never pushed does.
    assert.deepEqual(await rows(srv, 'Totals', KEYS), totals);
    const sessions = await rows(srv, 'Sessions', KEYS);
    assert.ok(sessions.every((r) => JSON.stringify(r) === '{}'), `dropped rows read {} (${JSON.stringify(sessions[0])})`);
    assert.deepEqual((await post(srv.base, '/get', { table: 'Sessions', key: 'never-pushed' })).json, {});
    // A push after the drop starts the windows fresh, the lifetime count goes on.
    assert.equal((await pushAll(srv, [{ sid: 'sess-3', x: 7 }]))[0], null);
    assert.deepEqual((await post(srv.base, '/get', { table: 'Sessions', key: 'sess-3' })).json, { n: 1, top: 7 });
    assert.deepEqual((await post(srv.base, '/get', { table: 'Totals', key: 'sess-3' })).json, { n: 4, sum: 30 + 31 + 32 + 7, last: [32, 7] });
    // The reads thawed them (a later sweep freezes them again: their last push is old).
    await until('thaws counted', async () => ((sampleValue(await metrics(srv), 'streamfeat_cold_thawed_total', { shard: '0' }) ?? 0) >= KEYS.length ? true : undefined));
  } finally {
    await srv.kill9();
    srv.cleanup();
  }
});

test('kill -9 with cold entities on disk (the WAL alone, then a snapshot taken while they were cold): exact values after restart', async () => {
  const dataDir = tempDataDir();
  let srv = await startServer({ dataDir, admin: true, args: ['--snapshot-interval', '0'] });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    const { events, totals } = hits();
    assert.ok((await pushAll(srv, events)).every((c) => c === null));
    await until('every entity frozen', () => (logSum(srv, 'frozen') >= KEYS.length ? true : undefined));
    assert.ok(coldFileBytes(dataDir) > 0);
    await srv.kill9();
    // No snapshot: the WAL rebuilds them (the cold directory is a cache, emptied at boot).
    srv = await startServer({ dataDir, admin: true, args: ['--snapshot-interval', '1s'] });
    assert.deepEqual(await rows(srv, 'Totals', KEYS), totals, 'after kill -9: WAL replay');
    await until('every entity frozen again', () => (logSum(srv, 'frozen') >= KEYS.length ? true : undefined));
    // A snapshot that holds them as cold entities (read back from the disk store); it needs something new to cover.
    assert.equal((await pushAll(srv, [{ sid: 'other', x: 1 }]))[0], null);
    await until('a snapshot with the cold entities', () => (srv.logs.some((l) => l.kind === 'shard.snapshot' && Number(l.cold) >= KEYS.length) ? true : undefined));
    // More hits after that snapshot (WAL only), some to cold entities.
    const tail = KEYS.slice(0, 50).map((sid, i) => ({ sid, x: 1000 + i }));
    assert.ok((await pushAll(srv, tail)).every((c) => c === null));
    const expected = (totals as Array<{ n: number; sum: number; last: number[] }>).map((t, i) => (i < 50 ? { n: t.n + 1, sum: t.sum + 1000 + i, last: [t.last[1], 1000 + i] } : t));
    await srv.kill9();
    srv = await startServer({ dataDir, admin: true, args: ['--snapshot-interval', '0'] });
    // Restored from the snapshot straight into the cold store: cold before any read.
    const m = await until('figures after restart', async () => {
      const x = await metrics(srv);
      return sampleValue(x, 'streamfeat_cold_entities', { shard: '0', table: 'Totals' }) !== undefined ? x : undefined;
    });
    assert.ok(sampleValue(m, 'streamfeat_cold_entities', { shard: '0', table: 'Totals' })! >= KEYS.length - 50, 'snapshot entities restore cold');
    assert.deepEqual(await rows(srv, 'Totals', KEYS), expected, 'after kill -9: snapshot (cold entities) + WAL tail');
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('cold store write failures (ENOSPC injected): the entities stay in memory with exact values and go to disk once writes work again', async () => {
  const dataDir = tempDataDir();
  const faultFile = join(dataDir, 'fault');
  const srv = await startServer({ dataDir, admin: true, args: ['--snapshot-interval', '0'], env: { SERVICE_FAULT_WAL_FILE: faultFile } });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES })).status, 200);
    const { events, totals } = hits();
    assert.ok((await pushAll(srv, events)).every((c) => c === null));
    writeFileSync(faultFile, 'ENOSPC');
    const cold = (x: ReturnType<typeof parsePrometheus>): number => sampleValue(x, 'streamfeat_cold_entities', { shard: '0', table: 'Totals' }) ?? 0;
    const during = await until('failed cold writes', async () => {
      const x = await metrics(srv);
      return (sampleValue(x, 'streamfeat_cold_store_write_errors_total', { shard: '0' }) ?? 0) > 0 && cold(x) === KEYS.length ? x : undefined;
    });
    assert.equal(sampleValue(during, 'streamfeat_cold_store_live_bytes', { shard: '0' }), 0, 'nothing reached the disk');
    const inMemory = sampleValue(during, 'streamfeat_cold_memory_bytes', { shard: '0' })!;
    assert.ok(srv.logs.some((l) => l.kind === 'shard.cold_store_write_failed'));
    assert.deepEqual(await rows(srv, 'Totals', KEYS), totals, 'kept in memory: exact values');
    unlinkSync(faultFile);
    // Read back (thawed) above, frozen again by the next sweeps, now written.
    const m = await until('the entities on disk', async () => {
      const x = await metrics(srv);
      return cold(x) === KEYS.length && (sampleValue(x, 'streamfeat_cold_store_live_bytes', { shard: '0' }) ?? 0) > KEYS.length * 20 ? x : undefined;
    });
    // Two tables' minimal indexes (1,024 slots x 20 B each) instead of the frozen buffers.
    assert.equal(sampleValue(m, 'streamfeat_cold_memory_bytes', { shard: '0' }), 2 * 1024 * 20, `only the index stays in memory (was ${inMemory} B)`);
    assert.ok(inMemory > 2 * 1024 * 20 + KEYS.length * 20);
    assert.deepEqual(await rows(srv, 'Totals', KEYS), totals);
  } finally {
    await srv.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** A table without cold_after whose entities hold ~2 KB each (one string kept). */
const BIG_NODES = [
  { kind: 'event', name: 'Hit', schema: { fields: { sid: 'str', x: 'i64', note: 'str' }, optional_fields: [] } },
  { kind: 'table', name: 'Notes', upstreams: ['Hit'], key: ['sid'], agg: { n: { op: 'count', params: {} }, note: { op: 'last_n', params: { field: 'note', n: 1 } } } },
];
const note = (i: number): string => `${String(i).padStart(6, '0')}${'abcdefghij'.repeat(200)}`;

test('--memory-limit: past it the least recently pushed entities go to disk; every value reads back exactly', async () => {
  const srv = await startServer({ admin: true, args: ['--snapshot-interval', '0', '--memory-limit', '40MB'] });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: BIG_NODES })).status, 200);
    const keys = Array.from({ length: 30_000 }, (_, i) => `big-${i}`);
    const codes = await pushAll(srv, keys.map((sid, i) => ({ sid, x: i, note: note(i) })));
    assert.ok(codes.every((c) => c === null), 'disk mode never refuses');
    await until('memory-limit evictions', () => (logSum(srv, 'evicted') > 0 ? true : undefined), 30_000);
    // Shard figures reach /metrics once a second.
    const m = await until('evictions in /metrics', async () => {
      const x = await metrics(srv);
      return (sampleValue(x, 'streamfeat_cold_evicted_total', { shard: '0' }) ?? 0) > 0 ? x : undefined;
    });
    assert.equal(sampleValue(m, 'streamfeat_memory_limit_bytes', { shard: '0' }), 40 * 1024 * 1024);
    assert.ok(sampleValue(m, 'streamfeat_cold_entities', { shard: '0', table: 'Notes' })! > 0);
    const got = await rows(srv, 'Notes', keys);
    got.forEach((r, i) => assert.deepEqual(r, { n: 1, note: [note(i)] }, keys[i]));
  } finally {
    await srv.kill9();
    srv.cleanup();
  }
});

test('--memory-only with --memory-limit: new entities are refused with memory_limit_exceeded; existing ones keep updating', async () => {
  const srv = await startServer({ admin: true, memoryOnly: true, args: ['--memory-limit', '24MB'] });
  try {
    assert.equal((await post(srv.base, '/register', { nodes: BIG_NODES })).status, 200);
    let refused = -1;
    let n = 0;
    while (refused < 0 && n < 60_000) {
      const batch = Array.from({ length: 2000 }, (_, i) => ({ sid: `m-${n + i}`, x: n + i, note: note(n + i) }));
      const codes = await pushAll(srv, batch);
      for (const c of codes) assert.ok(c === null || c === 'memory_limit_exceeded', String(c));
      const at = codes.indexOf('memory_limit_exceeded');
      if (at >= 0) refused = n + at;
      n += batch.length;
      if (refused < 0) await new Promise((r) => setTimeout(r, 1100)); // the limit is checked once a second
    }
    assert.ok(refused > 0, 'new entities are refused once the shard is over the limit');
    // Over HTTP too: the coded error, 503.
    const r = await post(srv.base, '/push', { event: 'Hit', data: { sid: 'brand-new', x: 1, note: 'x' } });
    assert.equal(r.status, 503);
    assert.equal(r.json.error.code, 'memory_limit_exceeded');
    assert.deepEqual((await post(srv.base, '/get', { table: 'Notes', key: 'brand-new' })).json, {}, 'a refused push changes nothing');
    // An entity that exists keeps updating.
    const ok = await post(srv.base, '/push', { event: 'Hit', data: { sid: 'm-0', x: 1, note: 'again' } });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual((await post(srv.base, '/get', { table: 'Notes', key: 'm-0' })).json, { n: 2, note: ['again'] });
    await until('refusals in /metrics', async () => ((sampleValue(await metrics(srv), 'streamfeat_memory_refused_total', { shard: '0' }) ?? 0) >= 1 ? true : undefined));
  } finally {
    await srv.kill9();
    srv.cleanup();
  }
});
