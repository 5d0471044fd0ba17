/**
 * Training rows from the serving engine, end to end over real sockets: a live
 * server (2 shards, served-row log on) is pushed events and asked for rows (HTTP
 * and TCP, get and batch_get, a one-field and a composite key) at recorded
 * moments. Then, from those moments:
 *   - the served-row log holds exactly the answers the client received, byte for byte;
 *   - `streamfeat export` of the stopped server's data dir, with the served-row log
 *     as the spine (by time, and by lsn), writes the same row bytes;
 *   - `streamfeat replay` of the same events with their server times (read from the
 *     WAL by their ack_lsn) writes the same row bytes.
 * And malformed input files give line-numbered errors (or are skipped and counted).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_BATCH_GET, OP_GET } from '../../src/protocol/frame';
import { recoverWal } from '../../src/wal/recover';

const NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', card: 'str', merchant: 'str', amount: 'f64' }, optional_fields: [] } },
  {
    kind: 'table', name: 'UserT', upstreams: ['Txn'], key: ['user'], agg: {
      n_1h: { op: 'count', params: { window: '1h' } },
      spend_1h: { op: 'sum', params: { field: 'amount', window: '1h' } },
      // Decays move every millisecond: only the exact read time gives the same bytes.
      ewma_5s: { op: 'ewma', params: { field: 'amount', half_life: '5s' } },
      decayed: { op: 'decayed_sum', params: { field: 'amount', half_life: '2s' } },
      merchants: { op: 'n_unique', params: { field: 'merchant', window: '24h' } },
      p50: { op: 'quantile', params: { field: 'amount', window: '1h', q: 0.5 } },
      last_merchant: { op: 'last', params: { field: 'merchant' } },
      rate_1m: { op: 'rate', params: { window: '1m' } },
    },
  },
  { kind: 'table', name: 'CardT', upstreams: ['Txn'], key: ['user', 'card'], agg: { n: { op: 'count', params: { window: '1h' } }, max: { op: 'max', params: { field: 'amount', window: '1h' } } } },
];

const USERS = ['u0', 'u1', 'u2', 'u3'];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let srv: TestServer;
let work: string;
let servedDir: string;
/** Pushes in order: their envelope and ack_lsn. */
const pushes: Array<{ body: { event: string; data: Record<string, unknown> }; lsn: number }> = [];
/** What the client received: request id -> the answer's text (a row, or a batch_get answer). */
const received = new Map<string, string>();
let registryBody = '';

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The row bytes of a served-row log line (every line here has a request_id after the row). */
function rowOf(line: string): string {
  return line.slice(line.indexOf(',"row":') + 7, line.lastIndexOf(',"request_id":'));
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'streamfeat-training-'));
  servedDir = join(work, 'served');
  srv = await startServer({ shards: 2, args: ['--served-log-dir', servedDir, '--snapshot-interval', '0'] });
  const reg = await post(srv.base, '/register', { nodes: NODES });
  assert.equal(reg.status, 200, reg.text);
  const tcp = await TcpClient.connect(srv.tcpPort);
  let seq = 0;
  let id = 0;
  for (let i = 0; i < 32; i++) {
    const user = USERS[(i * 7) % USERS.length];
    const body = { event: 'Txn', data: { user, card: `c${i % 3}`, merchant: `m${(i * 5) % 6}`, amount: Math.round(((i * 37) % 200) * 100 + 1) / 100 } };
    // Half over HTTP, half over TCP.
    const ack = i % 2 === 0 ? (await post(srv.base, '/push', body)).json : (await tcp.request(0x0010, body)).json;
    assert.equal(typeof ack.ack_lsn, 'number', JSON.stringify(ack));
    pushes.push({ body, lsn: ack.ack_lsn });
    if (i % 4 !== 3) continue;
    // A recorded moment: no push shares a millisecond with the reads.
    await sleep(4);
    const rid = (): string => `r${id++}`;
    let r = rid();
    received.set(r, (await post(srv.base, '/get', { table: 'UserT', key: USERS[seq % 4], request_id: r })).text);
    r = rid();
    received.set(r, (await tcp.request(OP_GET, { table: 'UserT', key: USERS[(seq + 1) % 4], request_id: r })).text);
    r = rid();
    received.set(r, (await post(srv.base, '/batch_get', { request_id: r, requests: [...USERS.map((u) => ({ table: 'UserT', key: u })), { table: 'CardT', key: [user, `c${i % 3}`] }, { table: 'UserT', key: 'never-pushed' }] })).text);
    r = rid();
    received.set(r, (await tcp.request(OP_BATCH_GET, { request_id: r, requests: [{ table: 'CardT', key: [USERS[seq % 4], 'c1'] }, { table: 'UserT', key: USERS[seq % 4], features: ['ewma_5s', 'n_1h'] }] })).text);
    seq++;
    await sleep(4);
  }
  tcp.close();
  registryBody = (await get(srv.base, '/registry')).text;
  // A copy of the live data dir (lock file and all) while the server still runs.
  cpSync(srv.dataDir, join(work, 'live-copy'), { recursive: true });
  assert.equal(await srv.stop(), 0);
});

after(() => {
  srv?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

function servedLines(): string[] {
  const files = readdirSync(servedDir).filter((n) => n.endsWith('.ndjson')).sort();
  return files.flatMap((f) => readFileSync(join(servedDir, f), 'utf8').split('\n').filter((l) => l !== ''));
}

test('the served-row log holds exactly the answers the client received', () => {
  const lines = servedLines();
  const byId = new Map<string, string[]>();
  for (const line of lines) {
    const j = JSON.parse(line);
    assert.equal(typeof j.time_ms, 'number');
    assert.equal(typeof j.lsn, 'number');
    assert.equal(j.registry_version, 1);
    const list = byId.get(j.request_id) ?? [];
    list[j.batch_index ?? 0] = line;
    byId.set(j.request_id, list);
  }
  assert.equal(byId.size, received.size);
  let rows = 0;
  for (const [rid, text] of received) {
    const logged = byId.get(rid);
    assert.ok(logged !== undefined, `no log line for ${rid}`);
    rows += logged.length;
    if (text.startsWith('{"results":')) assert.equal(`{"results":[${logged.map(rowOf).join(',')}]}`, text, rid);
    else assert.equal(rowOf(logged[0]), text, rid);
  }
  assert.equal(lines.length, rows, 'one line per row answered, no more');
});

/** The spine of one table from the served-row log: its moments, and the output each tool must write for them. */
function spineOf(table: string, withLsn: boolean): { spine: string; expected: string } {
  let spine = '';
  let expected = '';
  for (const line of servedLines()) {
    const j = JSON.parse(line);
    if (j.table !== table) continue;
    const key = JSON.stringify(j.key);
    // The features a get named travel with its moment (the output does not repeat them).
    const features = j.features === undefined ? '' : `,"features":${JSON.stringify(j.features)}`;
    spine += `{"table":${JSON.stringify(table)},"key":${key},"time_ms":${j.time_ms}${withLsn ? `,"lsn":${j.lsn}` : ''}${features}}\n`;
    expected += `{"table":${JSON.stringify(table)},"key":${key},"time_ms":${j.time_ms}${withLsn ? `,"lsn":${j.lsn}` : ''},"row":${rowOf(line)}}\n`;
  }
  return { spine, expected };
}

test('export of a copy of the live data dir (taken while serving, its lock file in it) writes the same bytes', () => {
  const { spine, expected } = spineOf('UserT', true);
  const spineFile = join(work, 'spine-live.ndjson');
  writeFileSync(spineFile, spine);
  const r = cli(['export', '--data-dir', join(work, 'live-copy'), '--spine', spineFile, '--table', 'UserT']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, expected);
});

for (const table of ['UserT', 'CardT']) {
  test(`export of the data dir at the recorded moments writes the served bytes (${table}, by time and by lsn)`, () => {
    for (const byLsn of [false, true]) {
      const { spine, expected } = spineOf(table, byLsn);
      const spineFile = join(work, `spine-${table}-${byLsn}.ndjson`);
      writeFileSync(spineFile, spine);
      const r = cli(['export', '--data-dir', srv.dataDir, '--spine', spineFile, '--table', table, '--at', byLsn ? 'lsn' : 'time']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, expected);
      assert.match(r.stderr, /export: \d+ spine rows/);
    }
  });

  test(`replay of the same events at their server times writes the served bytes (${table})`, () => {
    const timeOf = new Map<number, number>();
    for (const s of readdirSync(srv.dataDir).filter((n) => n.startsWith('shard-'))) {
      recoverWal(join(srv.dataDir, s, 'wal'), -1, (rec) => { if ('timeMs' in rec) timeOf.set(rec.lsn, rec.timeMs); }, { repair: false });
    }
    const events = pushes.map((p) => JSON.stringify({ ...p.body, t: timeOf.get(p.lsn) })).join('\n');
    const eventsFile = join(work, 'events.ndjson');
    writeFileSync(eventsFile, `${events}\n`);
    const regFile = join(work, 'registry.json');
    writeFileSync(regFile, registryBody);
    const { spine, expected } = spineOf(table, false);
    const spineFile = join(work, `spine-${table}.ndjson`);
    writeFileSync(spineFile, spine);
    const r = cli(['replay', '--registry', regFile, '--events', eventsFile, '--time-field', 't', '--spine', spineFile, '--table', table]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, expected);
    assert.match(r.stderr, new RegExp(`replay: ${pushes.length} events applied`));
    // The time first: no line is taken from its bytes (the front's fast path), every one is parsed; the same rows.
    const parsedFile = join(work, 'events-time-first.ndjson');
    writeFileSync(parsedFile, `${pushes.map((p) => JSON.stringify({ t: timeOf.get(p.lsn), ...p.body })).join('\n')}\n`);
    const r2 = cli(['replay', '--registry', regFile, '--events', parsedFile, '--time-field', 't', '--spine', spineFile, '--table', table]);
    assert.equal(r2.status, 0, r2.stderr);
    assert.equal(r2.stdout, expected);
  });
}

test('malformed input files give line-numbered errors; --bad-lines skip reports and counts them', () => {
  const reg = join(work, 'reg-small.json');
  writeFileSync(reg, JSON.stringify({ nodes: NODES }));
  const bad = join(work, 'bad.ndjson');
  writeFileSync(bad, [
    '{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":1},"t":1000}',
    '',
    '{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":"x"},"t":1001}',
    'not json',
    '{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":2},"t":"yesterday"}',
    '{"event":"Nope","data":{},"t":1002}',
    '{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":3},"t":1003}',
  ].join('\n'));
  let r = cli(['replay', '--registry', reg, '--events', bad, '--time-field', 't']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad\.ndjson:3: invalid_event: .*amount/);
  r = cli(['replay', '--registry', reg, '--events', bad, '--time-field', 't', '--bad-lines', 'skip', '--table', 'UserT']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /bad\.ndjson:3: invalid_event/);
  assert.match(r.stderr, /bad\.ndjson:4: invalid_json/);
  assert.match(r.stderr, /bad\.ndjson:5: invalid_time/);
  assert.match(r.stderr, /bad\.ndjson:6: event_not_found/);
  assert.match(r.stderr, /2 events applied \(0 deduplicated, 4 bad lines skipped/);
  assert.equal(JSON.parse(r.stdout.trim()).row.n_1h, 2);

  const csv = join(work, 'bad.csv');
  writeFileSync(csv, 'user,card,merchant,amount,t\na,c,m,1,1000\na,"c,m,2,1001\na,c,m,abc,1002\na,c\n');
  r = cli(['replay', '--registry', reg, '--events', csv, '--event', 'Txn', '--time-field', 't', '--bad-lines', 'skip']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /bad\.csv:3: invalid_csv: a quoted field/);
  assert.match(r.stderr, /bad\.csv:4: invalid_event: amount: "abc" is not a number/);
  assert.match(r.stderr, /bad\.csv:5: invalid_csv: 2 fields; the header has 5/);

  const unsorted = join(work, 'unsorted.ndjson');
  writeFileSync(unsorted, ['{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":1},"t":2000}', '{"event":"Txn","data":{"user":"a","card":"c","merchant":"m","amount":5},"t":1000}'].join('\n'));
  r = cli(['replay', '--registry', reg, '--events', unsorted, '--time-field', 't']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unsorted\.ndjson:2: out_of_order: time 1000 is before line 1's 2000/);
  r = cli(['replay', '--registry', reg, '--events', unsorted, '--time-field', 't', '--sort', '--table', 'UserT', '--features', 'last_merchant,spend_1h']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '{"table":"UserT","key":"a","time_ms":2000,"row":{"last_merchant":"m","spend_1h":6}}\n');

  const spine = join(work, 'bad-spine.ndjson');
  writeFileSync(spine, '{"key":"a","time_ms":1500}\n{"key":"a","time_ms":"soon"}\n{"time_ms":1}\n');
  r = cli(['replay', '--registry', reg, '--events', unsorted, '--time-field', 't', '--sort', '--spine', spine, '--table', 'UserT']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /bad-spine\.ndjson:2: invalid_time/);
  r = cli(['export', '--data-dir', srv.dataDir, '--spine', spine, '--table', 'UserT', '--bad-lines', 'skip']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /bad-spine\.ndjson:3: invalid_spine: the line has no "key" column/);
  assert.match(r.stderr, /2 bad spine lines skipped/);
});

test('a Parquet events file replays to the same rows as the same events in NDJSON (row groups, a bad row numbered)', () => {
  // Written by hyparquet-writer 0.17 (an independent writer): 60 rows in 3 row groups of
  // user/card/merchant strings, amount DOUBLE (row 42 null), t INT64 epoch ms; the .ndjson beside it holds the same rows.
  const fixtures = join(__dirname, '..', '..', '..', 'test', 'fixtures', 'training');
  const reg = join(work, 'reg-small.json');
  writeFileSync(reg, JSON.stringify({ nodes: NODES }));
  const common = ['--registry', reg, '--event', 'Txn', '--time-field', 't', '--bad-lines', 'skip'];
  const pq = cli(['replay', ...common, '--events', join(fixtures, 'events.parquet')]);
  const nd = cli(['replay', ...common, '--events', join(fixtures, 'events.ndjson')]);
  assert.equal(pq.status, 0, pq.stderr);
  assert.equal(nd.status, 0, nd.stderr);
  assert.equal(pq.stdout, nd.stdout);
  assert.equal(pq.stdout.trim().split('\n').length, 5 + 15); // UserT's 5 users, CardT's 15 (user, card) pairs
  assert.match(pq.stderr, /events\.parquet:42: invalid_event: missing required field "amount"/);
  assert.match(pq.stderr, /59 events applied/);
});
