/**
 * Forgetting an entity (docs/wire.md "Forgetting an entity"), black-box over real
 * sockets:
 * - HTTP POST /forget and TCP op 0x0041: one table, a list, every table ("*"),
 *   composite keys; the rows removed per table; other entities untouched; pushed
 *   again the entity counts from zero; /metrics counts forgets;
 * - bad forgets get their codes (spec 2.7 envelope, registry_version) and change
 *   nothing, on both transports;
 * - kill -9 right after a forget (WAL replay), a shutdown snapshot and a periodic
 *   snapshot after one: still gone after each restart, and once the snapshot after
 *   the forget is written no file of the data dir holds the key;
 * - a frozen (cold) entity is erased without a thaw, its cold record overwritten;
 *   pushed again it counts from zero, also after kill -9;
 * - with --auth-token-file both transports need the token; the CLI and the client
 *   (both transports, typed table builders) forget; memory-only mode forgets too;
 * - `streamfeat export` of the data dir's history never serves a forgotten entity;
 * - cluster mode answers forget_unavailable_in_cluster_mode.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, get, post, startServer, tempDataDir, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { filesHolding, until } from '../harness/files';
import { startNats } from '../harness/nats';
import { parsePrometheus, sampleValue } from '../harness/prom';
import { OP_AUTH, OP_ERROR_RESPONSE, OP_FORGET, OP_GET_RESPONSE } from '../../src/protocol/frame';
import { shardOf } from '../../src/registry/key';
import { Client, EVERY_TABLE, agg, event, f64, i64, str, table } from '../../src/client';

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', card: 'str', merchant: 'str', amount: 'f64', n: 'i64' }, optional_fields: [] } };
const USER_SPEND = { kind: 'table', name: 'UserSpend', upstreams: ['Txn'], key: ['user'], agg: { n: { op: 'count', params: {} }, total: { op: 'sum', params: { field: 'amount', window: '1h' } } } };
const CARD_VEL = { kind: 'table', name: 'CardVel', upstreams: ['Txn'], key: ['card'], agg: { n: { op: 'count', params: {} } } };
const USER_MERCHANT = { kind: 'table', name: 'UserMerchant', upstreams: ['Txn'], key: ['user', 'merchant'], agg: { n: { op: 'count', params: {} } } };
const BY_N = { kind: 'table', name: 'ByN', upstreams: ['Txn'], key: ['n'], agg: { n: { op: 'count', params: {} } } };
const NODES = [TXN, USER_SPEND, CARD_VEL, USER_MERCHANT, BY_N];

/** Six users, each with its card c<i>, two merchants, and n = i. */
function txns(users = 6): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (let i = 1; i <= users; i++) {
    for (const merchant of ['m1', 'm2']) out.push({ user: `u${i}`, card: `c${i}`, merchant, amount: i * 10, n: i });
  }
  return out;
}

async function setUp(srv: TestServer, nodes: unknown[] = NODES, events = txns()): Promise<void> {
  const r = await post(srv.base, '/register', { nodes });
  assert.equal(r.status, 200, r.text);
  for (const data of events) {
    const p = await post(srv.base, '/push', { event: (nodes[0] as { name: string }).name, data });
    assert.equal(p.status, 200, p.text);
  }
}

/** Every row the registry above can hold for the six users, in one batch_get. */
async function allRows(srv: TestServer): Promise<unknown[]> {
  const requests: Array<{ table: string; key: unknown }> = [];
  for (let i = 1; i <= 6; i++) {
    requests.push({ table: 'UserSpend', key: `u${i}` }, { table: 'CardVel', key: `c${i}` }, { table: 'ByN', key: i });
    for (const m of ['m1', 'm2']) requests.push({ table: 'UserMerchant', key: [`u${i}`, m] });
  }
  const r = await post(srv.base, '/batch_get', { requests });
  assert.equal(r.status, 200, r.text);
  return r.json.results;
}

async function row(srv: TestServer, table: string, key: unknown): Promise<Record<string, unknown>> {
  const r = await post(srv.base, '/get', { table, key });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function forget(srv: TestServer, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string }> {
  return post(srv.base, '/forget', body, headers);
}

async function tcpForget(c: TcpClient, body: unknown): Promise<{ op: number; json: any }> {
  const r = await c.request(OP_FORGET, body);
  return { op: r.op, json: r.json };
}

test('forget over HTTP and TCP: one table, a list, every table, composite keys; rows removed per table; pushed again it counts from zero', async () => {
  const srv = await startServer({ shards: 2, admin: true, args: ['--snapshot-interval', '0'] });
  try {
    await setUp(srv);
    const r1 = await forget(srv, { table: 'UserSpend', key: 'u1' });
    assert.equal(r1.status, 200, r1.text);
    assert.deepEqual({ ...r1.json, ack_lsn: 0 }, { removed: 1, tables: { UserSpend: 1 }, ack_lsn: 0, registry_version: 1 });
    assert.ok(r1.json.ack_lsn > 12, 'the forget has its place in the log after the pushes');
    assert.deepEqual(await row(srv, 'UserSpend', 'u1'), {});
    assert.deepEqual(await row(srv, 'UserSpend', 'u2'), { n: 2, total: 40 }, 'another entity of the table stays');
    assert.deepEqual(await row(srv, 'UserMerchant', ['u1', 'm1']), { n: 1 }, 'the same user in another table stays');
    assert.deepEqual((await forget(srv, { table: 'UserSpend', key: 'u1' })).json.tables, { UserSpend: 0 }, 'again: nothing left to remove, still 200');
    // A list, named twice: once; a table without that key answers 0.
    const list = (await forget(srv, { tables: ['UserSpend', 'CardVel', 'UserSpend'], key: 'u2' })).json;
    assert.deepEqual({ removed: list.removed, tables: list.tables }, { removed: 1, tables: { UserSpend: 1, CardVel: 0 } });
    // Every table: the tables whose key a string can be read as (not the i64 table, not the composite one).
    assert.deepEqual((await forget(srv, { tables: '*', key: 'c3' })).json.tables, { UserSpend: 0, CardVel: 1 });
    assert.deepEqual(await row(srv, 'CardVel', 'c3'), {});
    // A number: the string tables and the i64 table; an array: the composite table only.
    assert.deepEqual((await forget(srv, { tables: '*', key: 4 })).json.tables, { UserSpend: 0, CardVel: 0, ByN: 1 });
    assert.deepEqual((await forget(srv, { tables: '*', key: ['u4', 'm2'] })).json.tables, { UserMerchant: 1 });
    assert.deepEqual(await row(srv, 'UserMerchant', ['u4', 'm2']), {});
    assert.deepEqual(await row(srv, 'UserMerchant', ['u4', 'm1']), { n: 1 });
    // A composite key as "a|b" (the /get convenience) when the table is named.
    assert.deepEqual((await forget(srv, { table: 'UserMerchant', key: 'u5|m1' })).json.tables, { UserMerchant: 1 });
    // One forget over two shards: a datetime key's canonical form (epoch ms) is not the string's.
    const seen = { kind: 'event', name: 'Seen', schema: { fields: { tag: 'str', at: 'datetime' }, optional_fields: [] } };
    const byTag = { kind: 'table', name: 'ByTag', upstreams: ['Seen'], key: ['tag'], agg: { n: { op: 'count', params: {} } } };
    const byAt = { kind: 'table', name: 'ByAt', upstreams: ['Seen'], key: ['at'], agg: { n: { op: 'count', params: {} } } };
    assert.equal((await post(srv.base, '/register', { nodes: [seen, byTag, byAt] })).status, 200);
    const day = Array.from({ length: 28 }, (_, d) => `2020-02-${String(d + 1).padStart(2, '0')}T00:00:00Z`)
      .find((iso) => shardOf(iso, 2) !== shardOf(String(Date.parse(iso)), 2))!;
    assert.equal((await post(srv.base, '/push', { event: 'Seen', data: { tag: day, at: day } })).status, 200);
    const two = await forget(srv, { tables: '*', key: day });
    assert.deepEqual(two.json.tables, { UserSpend: 0, CardVel: 0, ByTag: 1, ByAt: 1 }, two.text);
    assert.equal(two.json.removed, 2);
    assert.deepEqual(await row(srv, 'ByAt', day), {});
    assert.deepEqual(await row(srv, 'ByTag', day), {});
    // TCP: answered with the generic JSON success frame.
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      const t = await tcpForget(c, { table: 'UserSpend', key: 'u3' });
      assert.equal(t.op, OP_GET_RESPONSE);
      assert.deepEqual({ removed: t.json.removed, tables: t.json.tables }, { removed: 1, tables: { UserSpend: 1 } });
      const e = await tcpForget(c, { table: 'Nope', key: 'u3' });
      assert.equal(e.op, OP_ERROR_RESPONSE);
      assert.equal(e.json.error.code, 'unknown_table');
    } finally {
      c.close();
    }
    assert.deepEqual(await row(srv, 'UserSpend', 'u3'), {});
    // Pushed again: from zero.
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', card: 'c1', merchant: 'm1', amount: 7, n: 1 } })).status, 200);
    assert.deepEqual(await row(srv, 'UserSpend', 'u1'), { n: 1, total: 7 });
    const m = parsePrometheus((await get(srv.adminBase!, '/metrics')).text);
    assert.equal(sampleValue(m, 'streamfeat_forget_total', {}), 9, 'answered forgets (the refused one is an error)');
    assert.equal(sampleValue(m, 'streamfeat_forget_rows_total', {}), 9);
  } finally {
    await srv.stop();
    srv.cleanup();
  }
});

test('bad forgets get their codes and change nothing, on both transports', async () => {
  const srv = await startServer({ shards: 2, args: ['--snapshot-interval', '0'] });
  try {
    await setUp(srv);
    const before = await allRows(srv);
    const cases: Array<[unknown, number, string, string]> = [
      [{ table: 'UserSpnd', key: 'u1' }, 404, 'unknown_table', 'table'],
      // A list with an unknown table: refused whole, the known table's entity stays.
      [{ tables: ['UserSpend', 'Nope'], key: 'u1' }, 404, 'unknown_table', 'tables[1]'],
      [{ table: 'UserSpend', key: ['u1'] }, 400, 'key_shape_mismatch', 'key'],
      [{ table: 'UserSpend', key: { id: 'u1' } }, 400, 'key_shape_mismatch', 'key'],
      [{ table: 'UserSpend', key: null }, 400, 'key_shape_mismatch', 'key'],
      [{ table: 'UserMerchant', key: 'u1' }, 400, 'key_shape_mismatch', 'key'],
      [{ table: 'UserMerchant', key: ['u1', 'm1', 'x'] }, 400, 'key_parse_failure', 'key'],
      [{ table: 'ByN', key: 'abc' }, 400, 'key_parse_failure', 'key'],
      [{ table: 'UserSpend', key: 'x'.repeat(70_000) }, 400, 'key_parse_failure', 'key'],
      [{ tables: ['ByN', 'UserSpend'], key: 'u1' }, 400, 'key_parse_failure', 'key'],
      [{ tables: '*', key: { id: 1 } }, 400, 'key_shape_mismatch', 'key'],
      [{ tables: '*', key: [1, 2, 3] }, 400, 'key_shape_mismatch', 'key'],
      [{ tables: [], key: 'u1' }, 400, 'unsupported_request_shape', 'tables'],
      [{ tables: 'UserSpend', key: 'u1' }, 400, 'unsupported_request_shape', 'tables'],
      [{ table: 'UserSpend', tables: '*', key: 'u1' }, 400, 'unsupported_request_shape', 'table'],
      [{ table: 'UserSpend' }, 400, 'unsupported_request_shape', 'key'],
      [{ table: 'UserSpend', key: 'u1', features: ['n'] }, 400, 'unsupported_request_shape', 'features'],
      [{ table: 7, key: 'u1' }, 400, 'unsupported_request_shape', 'table'],
      [['UserSpend', 'u1'], 400, 'unsupported_request_shape', ''],
      ['{"table":"UserSpend",', 400, 'invalid_json_body', ''],
      [`${'['.repeat(100)}${']'.repeat(100)}`, 400, 'unsupported_request_shape', ''],
    ];
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      for (const [body, status, code, path] of cases) {
        const what = typeof body === 'string' ? body.slice(0, 40) : JSON.stringify(body).slice(0, 80);
        const h = await forget(srv, body);
        assert.equal(h.status, status, `${what}: ${h.text.slice(0, 300)}`);
        assert.equal(h.json.error.code, code, what);
        assert.equal(h.json.error.path ?? '', path, `${what}: ${h.text.slice(0, 300)}`);
        assert.equal(h.json.registry_version, 1, 'forget errors carry registry_version');
        const t = await c.request(OP_FORGET, typeof body === 'string' ? body : JSON.stringify(body));
        assert.equal(t.op, OP_ERROR_RESPONSE, what);
        assert.equal(t.json.error.code, code, `TCP ${what}`);
      }
      assert.match((await forget(srv, { table: 'UserSpnd', key: 'u1' })).json.error.message, /did you mean "UserSpend"/);
    } finally {
      c.close();
    }
    assert.deepEqual(await allRows(srv, ), before, 'nothing was removed');
  } finally {
    await srv.stop();
    srv.cleanup();
  }
});

test('forget survives kill -9 (WAL replay), a shutdown snapshot and a periodic one; then no file of the data dir holds the key', async () => {
  const dataDir = tempDataDir();
  const start = (interval: string): Promise<TestServer> => startServer({ dataDir, shards: 2, args: ['--snapshot-interval', interval] });
  try {
    let srv = await start('0');
    await setUp(srv);
    const events = [{ user: 'gone-by-wal', card: 'cw', merchant: 'm1', amount: 1, n: 100 }, { user: 'gone-by-snapshot', card: 'cs', merchant: 'm1', amount: 2, n: 101 }];
    for (const data of events) assert.equal((await post(srv.base, '/push', { event: 'Txn', data })).status, 200);
    assert.ok(filesHolding(dataDir, 'gone-by-wal').length > 0, 'the pushes are in the WAL');
    assert.equal((await forget(srv, { tables: '*', key: 'gone-by-wal' })).json.removed, 1);
    assert.equal((await forget(srv, { table: 'UserMerchant', key: ['gone-by-wal', 'm1'] })).json.removed, 1);
    const kept = await allRows(srv);
    await srv.kill9();

    srv = await start('0');
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-by-wal'), {}, 'replayed from the WAL: still gone');
    assert.deepEqual(await row(srv, 'UserMerchant', ['gone-by-wal', 'm1']), {});
    assert.deepEqual(await allRows(srv), kept, 'every other row as before');
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-by-snapshot'), { n: 1, total: 2 });
    assert.equal((await forget(srv, { tables: '*', key: 'gone-by-snapshot' })).json.removed, 1);
    assert.equal((await forget(srv, { tables: '*', key: ['gone-by-snapshot', 'm1'] })).json.removed, 1);
    assert.equal(await srv.stop(), 0);
    // The shutdown snapshot came after the forgets: it replaced the older ones and the WAL before it.
    assert.deepEqual(filesHolding(dataDir, 'gone-by-wal'), []);
    assert.deepEqual(filesHolding(dataDir, 'gone-by-snapshot'), []);

    srv = await start('1s');
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-by-wal'), {});
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-by-snapshot'), {}, 'restored from the snapshot: still gone');
    assert.deepEqual(await allRows(srv), kept);
    // Periodic snapshots: the one after a forget removes the files that held the entity, while the server runs.
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'gone-live', card: 'cl', merchant: 'm1', amount: 3, n: 102 } })).status, 200);
    await until('a periodic snapshot holding the entity', () => (srv.logs.some((l) => l.kind === 'shard.snapshot' && l.forget_scrub_lsn === undefined) ? true : undefined));
    const f = await forget(srv, { tables: '*', key: 'gone-live' });
    assert.equal(f.json.removed, 1);
    await forget(srv, { table: 'UserMerchant', key: ['gone-live', 'm1'] });
    await until('the snapshot after the forget', () => (srv.logs.some((l) => l.kind === 'shard.snapshot' && Number(l.forget_scrub_lsn) >= f.json.ack_lsn) ? true : undefined));
    await until('no file holds the key', () => (filesHolding(dataDir, 'gone-live').length === 0 ? true : undefined));
    await srv.kill9();
    srv = await start('0');
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-live'), {});
    assert.deepEqual(await allRows(srv), kept);
    // Pushed again after all that: from zero.
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: events[0] })).status, 200);
    assert.deepEqual(await row(srv, 'UserSpend', 'gone-by-wal'), { n: 1, total: 1 });
    await srv.stop();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a frozen entity is forgotten without a thaw and its cold record overwritten; pushed again it counts from zero, also after kill -9', async () => {
  const hit = { kind: 'event', name: 'Hit', schema: { fields: { sid: 'str', x: 'i64' }, optional_fields: [] }, cold_after: '1s' };
  const totals = { kind: 'table', name: 'Totals', upstreams: ['Hit'], key: ['sid'], agg: { n: { op: 'count', params: {} }, sum: { op: 'sum', params: { field: 'x', window: '1h' } } } };
  const keys = Array.from({ length: 50 }, (_, i) => `cold-${i}#`);
  const dataDir = tempDataDir();
  const start = (): Promise<TestServer> => startServer({ dataDir, admin: true, args: ['--snapshot-interval', '0'] });
  try {
    let srv = await start();
    await setUp(srv, [hit, totals], keys.map((sid, i) => ({ sid, x: i })));
    const cold = join(dataDir, 'shard-0', 'cold');
    const metric = async (name: string): Promise<number> => sampleValue(parsePrometheus((await get(srv.adminBase!, '/metrics')).text), name, { shard: '0' }) ?? 0;
    await until('every entity frozen', async () => ((await metric('streamfeat_cold_frozen_total')) >= keys.length && filesHolding(cold, 'cold-7#').length > 0 ? true : undefined));
    const f = await forget(srv, { table: 'Totals', key: 'cold-7#' });
    assert.deepEqual({ removed: f.json.removed, tables: f.json.tables }, { removed: 1, tables: { Totals: 1 } });
    assert.equal(await metric('streamfeat_cold_thawed_total'), 0, 'not thawed to be removed');
    assert.deepEqual(filesHolding(cold, 'cold-7#'), [], 'its cold record was overwritten before the answer');
    assert.deepEqual(await row(srv, 'Totals', 'cold-7#'), {});
    assert.deepEqual(await row(srv, 'Totals', 'cold-8#'), { n: 1, sum: 8 }, 'a neighbour thaws exactly');
    assert.equal((await post(srv.base, '/push', { event: 'Hit', data: { sid: 'cold-7#', x: 1000 } })).status, 200);
    assert.deepEqual(await row(srv, 'Totals', 'cold-7#'), { n: 1, sum: 1000 }, 'pushed again: from zero, nothing thawed back');
    await srv.kill9();
    srv = await start();
    assert.deepEqual(await row(srv, 'Totals', 'cold-7#'), { n: 1, sum: 1000 });
    for (const [i, k] of keys.entries()) if (i !== 7) assert.deepEqual(await row(srv, 'Totals', k), { n: 1, sum: i }, k);
    await srv.stop();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('streamfeat export never serves a forgotten entity: rows before the forget read as a key never pushed', async () => {
  const srv = await startServer({ shards: 2, args: ['--snapshot-interval', '0'] });
  try {
    await setUp(srv);
    await new Promise((r) => setTimeout(r, 20));
    const before = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    // Pushes between the spine time and the forget, on the shards of the forgotten keys: the
    // export answers the rows at `before` there, ahead of the forget.
    const onShardOf = (key: string, make: (i: number) => string): string => make(Array.from({ length: 64 }, (_, i) => i).find((i) => shardOf(make(i), 2) === shardOf(key, 2))!);
    const x = onShardOf('u1', (i) => `x${i}`);
    const y = JSON.parse(onShardOf(JSON.stringify(['u2', 'm1']), (i) => JSON.stringify([`y${i}`, 'm1'])))[0] as string;
    for (const user of [x, y]) assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user, card: 'c9', merchant: 'm1', amount: 1, n: 9 } })).status, 200);
    assert.equal((await forget(srv, { table: 'UserSpend', key: 'u1' })).json.removed, 1);
    assert.equal((await forget(srv, { tables: '*', key: ['u2', 'm1'] })).json.removed, 1);
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'u1', card: 'c1', merchant: 'm1', amount: 7, n: 1 } })).status, 200);
    await new Promise((r) => setTimeout(r, 20));
    const after = Date.now();
    // kill -9: the WAL keeps the whole history (a shutdown snapshot would replace it, and with it every row before the forget).
    await srv.kill9();
    const spineFile = join(srv.dataDir, '..', `forget-spine-${process.pid}.ndjson`);
    const lines = [
      { table: 'UserSpend', key: 'u1', time_ms: before }, { table: 'UserSpend', key: 'u3', time_ms: before }, { table: 'UserSpend', key: 'u1', time_ms: after },
      { table: 'UserMerchant', key: ['u2', 'm1'], time_ms: before }, { table: 'UserMerchant', key: ['u2', 'm2'], time_ms: before },
    ];
    const rows: unknown[] = [];
    for (const table of ['UserSpend', 'UserMerchant']) {
      writeFileSync(spineFile, lines.filter((l) => l.table === table).map((l) => JSON.stringify(l)).join('\n') + '\n');
      const r = await runCli(['export', '--data-dir', srv.dataDir, '--spine', spineFile, '--table', table]);
      assert.equal(r.code, 0, r.err);
      rows.push(...r.out.trim().split('\n').map((l) => JSON.parse(l).row));
    }
    rmSync(spineFile, { force: true });
    assert.deepEqual(rows, [{}, { n: 2, total: 60 }, { n: 1, total: 7 }, {}, { n: 1 }], 'the forgotten entities read {} before their forget; the others as served');
  } finally {
    await srv.stop();
    srv.cleanup();
  }
});

/** Runs the CLI; resolves with its exit code and output. */
function runCli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => resolve({ code, out, err }));
  });
}

test('auth on: both transports need the token; the CLI and the client (both transports, typed tables) forget; memory-only mode', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sf-forget-auth-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 's3cret-forget-token-1234\n');
  const srv = await startServer({ memoryOnly: true, shards: 2, args: ['--auth-token-file', tokenFile] });
  const auth = { authorization: 'Bearer s3cret-forget-token-1234' };
  try {
    assert.equal((await post(srv.base, '/register', { nodes: NODES }, auth)).status, 200);
    for (const data of txns()) assert.equal((await post(srv.base, '/push', { event: 'Txn', data }, auth)).status, 200);
    const no = await forget(srv, { table: 'UserSpend', key: 'u1' });
    assert.equal(no.status, 401);
    assert.equal(no.json.error.code, 'unauthorized');
    assert.equal((await forget(srv, { table: 'UserSpend', key: 'u1' }, { authorization: 'Bearer wrong' })).status, 401);
    assert.deepEqual((await forget(srv, { table: 'UserSpend', key: 'u1' }, auth)).json.tables, { UserSpend: 1 });
    const bare = await TcpClient.connect(srv.tcpPort);
    const refused = await tcpForget(bare, { table: 'UserSpend', key: 'u2' });
    assert.equal(refused.json.error.code, 'unauthorized');
    await bare.closed;
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      assert.deepEqual((await c.request(OP_AUTH, { token: 's3cret-forget-token-1234' })).json, { ok: true });
      assert.deepEqual((await tcpForget(c, { table: 'UserSpend', key: 'u2' })).json.tables, { UserSpend: 1 });
    } finally {
      c.close();
    }
    // The CLI: exit 0 (also when nothing is held), 1 on a server error, 2 on a bad command line.
    const url = ['--url', srv.base, '--token', 's3cret-forget-token-1234'];
    const one = await runCli(['forget', 'UserSpend', 'u3', ...url]);
    assert.equal(one.code, 0, one.err);
    assert.match(one.out, /^forgot u3: 1 row\(s\) removed, ack_lsn=\d+ registry_version=1\n {2}UserSpend {2}removed\n$/);
    const every = await runCli(['forget', '--all-tables', '["u3","m1"]', ...url, '--json']);
    assert.equal(every.code, 0, every.err);
    assert.deepEqual(JSON.parse(every.out).tables, { UserMerchant: 1 });
    const tcp = await runCli(['forget', 'CardVel', 'c3', '--url', `tcp://127.0.0.1:${srv.tcpPort}`, '--token', 's3cret-forget-token-1234']);
    assert.equal(tcp.code, 0, tcp.err);
    assert.match(tcp.out, /1 row\(s\) removed/);
    const again = await runCli(['forget', 'UserSpend', 'u3', ...url]);
    assert.equal(again.code, 0);
    assert.match(again.out, /0 row\(s\) removed[\s\S]*not held/);
    const unauthorized = await runCli(['forget', 'UserSpend', 'u4', '--url', srv.base]);
    assert.equal(unauthorized.code, 1);
    assert.match(unauthorized.err, /unauthorized/);
    const unknown = await runCli(['forget', 'Nope', 'u4', ...url]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.err, /unknown_table/);
    for (const bad of [['forget', 'UserSpend'], ['forget', '--all-tables', 'UserSpend', 'u4'], ['forget']]) {
      const r = await runCli([...bad, ...url]);
      assert.equal(r.code, 2, `${bad.join(' ')}: ${r.err}`);
    }
    const help = await runCli(['forget', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.out, /--all-tables/);
    assert.match(help.out, /exit codes: 0 ok/);
    // The client, typed from its builders, on both transports.
    const Txn = event('Txn', { user: str, card: str, merchant: str, amount: f64, n: i64 });
    const UserSpend = table('UserSpend', { from: Txn, key: 'user', features: { n: agg.count(), total: agg.sum('amount', { window: '1h' }) } });
    const UserMerchant = table('UserMerchant', { from: Txn, key: ['user', 'merchant'], features: { n: agg.count() } });
    for (const url of [srv.base, `tcp://127.0.0.1:${srv.tcpPort}`]) {
      const sf = new Client(url, { token: 's3cret-forget-token-1234' });
      try {
        await sf.push(Txn, { user: 'cl', card: 'ccl', merchant: 'm9', amount: 1, n: 9 });
        assert.deepEqual(await sf.get(UserSpend, 'cl'), { n: 1, total: 1 });
        assert.deepEqual((await sf.forget(UserSpend, 'cl')).tables, { UserSpend: 1 });
        assert.deepEqual(await sf.get(UserSpend, 'cl'), {});
        assert.deepEqual((await sf.forget(UserMerchant, ['cl', 'm9'])).removed, 1);
        assert.deepEqual((await sf.forget(EVERY_TABLE, 'ccl')).tables, { UserSpend: 0, CardVel: 1 });
        assert.deepEqual((await sf.forget(['ByN', UserSpend], 9)).tables, { ByN: 1, UserSpend: 0 });
        await assert.rejects(sf.forget('Nope', 'x'), (e: Error & { code?: string }) => e.code === 'unknown_table');
      } finally {
        await sf.close();
      }
    }
  } finally {
    await srv.stop();
    srv.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cluster mode answers forget_unavailable_in_cluster_mode', async () => {
  const nats = await startNats();
  let srv: TestServer | null = null;
  try {
    srv = await startServer({ memoryOnly: true, shards: 1, extraBound: 1, args: ['--cluster-url', nats.url, '--node-id', 'solo', '--partitions', '4'] });
    const h = await forget(srv, { table: 'UserSpend', key: 'u1' });
    assert.equal(h.status, 501, h.text);
    assert.equal(h.json.error.code, 'forget_unavailable_in_cluster_mode');
    assert.match(h.json.error.message, /cluster mode/);
    const c = await TcpClient.connect(srv.tcpPort);
    try {
      const t = await tcpForget(c, { tables: '*', key: 'u1' });
      assert.equal(t.op, OP_ERROR_RESPONSE);
      assert.equal(t.json.error.code, 'forget_unavailable_in_cluster_mode');
    } finally {
      c.close();
    }
  } finally {
    await srv?.stop();
    srv?.cleanup();
    await nats.stop();
    nats.cleanup();
  }
});
