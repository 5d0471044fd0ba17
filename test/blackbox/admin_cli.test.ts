/**
 * `streamfeat info` and `streamfeat inspect TABLE KEY`, the real binary against
 * a real disk-mode server with its admin address: the INFO-style sections and
 * their values, --json, the inspected row with each feature's op and window,
 * error lines and exit codes (1: server or connection error, 2: bad command line).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { CLI, post, startServer, type TestServer } from '../harness/server';

let srv: TestServer;
let admin: string;

interface Run { code: number | null; stdout: string; stderr: string }

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

before(async () => {
  srv = await startServer({ shards: 2, admin: true, args: ['--snapshot-interval', '1s'] });
  admin = srv.adminBase!;
  const reg = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', shop: 'str', amount: 'f64' }, optional_fields: [] } },
      { kind: 'table', name: 'UserSpend', upstreams: ['Txn'], key: ['user'], agg: { n: { op: 'count' }, spend_1h: { op: 'sum', params: { field: 'amount', window: '1h' } } } },
      { kind: 'table', name: 'UserShop', upstreams: ['Txn'], key: ['user', 'shop'], agg: { last_amount: { op: 'last', params: { field: 'amount' } } } },
    ],
  });
  assert.equal(reg.status, 200, reg.text);
  for (let i = 0; i < 12; i++) {
    assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: `u${i % 3}`, shop: `s${i % 2}`, amount: i } })).status, 200);
  }
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

test('info prints INFO-style sections with the live figures', async () => {
  // Shard figures refresh once a second: wait until both tables are counted.
  let r: Run;
  const deadline = Date.now() + 20_000;
  do {
    r = await cli(['info', '--admin', admin]);
    assert.equal(r.code, 0, r.stderr);
  } while (!(/^table_UserSpend:3 /m.test(r.stdout) && /^table_UserShop:6 /m.test(r.stdout)) && Date.now() < deadline && (await new Promise((ok) => setTimeout(ok, 300)), true));
  const out = r.stdout;
  for (const section of ['Server', 'Traffic', 'Memory', 'Entities', 'Shards', 'WAL', 'Snapshots']) assert.match(out, new RegExp(`^# ${section}$`, 'm'), section);
  assert.match(out, /^version:\d+\.\d+\.\d+/m);
  assert.match(out, /^uptime:\S+ \(\d+s\)$/m);
  assert.match(out, /^mode:disk$/m);
  assert.match(out, /^shards:2$/m);
  assert.match(out, /^registry_version:1$/m);
  assert.match(out, /^pushes:12 \(/m);
  assert.match(out, /^rss:\d/m);
  assert.match(out, /^heap_front:/m);
  assert.match(out, /^heap_coordinator:/m);
  assert.match(out, /^heap_shard-1:/m);
  assert.match(out, /^table_UserSpend:3 \(0 cold/m);
  assert.match(out, /^table_UserShop:6 \(0 cold/m);
  assert.match(out, /^shard_0:entities \d+/m);
  assert.match(out, /^writes:\d+ \(/m);
  assert.match(out, /^written:\d+$/m);
});

test('info --json is the /api/stats document; the admin URL also comes from STREAMFEAT_ADMIN_URL', async () => {
  const r = await cli(['info', '--json'], { STREAMFEAT_ADMIN_URL: admin });
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  assert.equal(j.counters.push_total, 12);
  assert.equal(j.shard_count, 2);
  assert.equal(j.registry_version, 1);
});

test('inspect prints the row with each feature\'s op and window', async () => {
  const r = await cli(['inspect', 'UserSpend', 'u1', '--admin', admin]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0], /^UserSpend u1 {2}shard [01], hot, last push \d{4}-\d\d-\d\dT.*Z \(lsn \d+\)$/);
  // u1 got i = 1, 4, 7, 10: count 4, sum 22.
  assert.deepEqual(lines.slice(2).map((l) => l.split(/\s+/)), [
    ['feature', 'op', 'window', 'value'],
    ['n', 'count', 'lifetime', '4'],
    ['spend_1h', 'sum', '1h', '22'],
  ]);
  const composite = await cli(['inspect', 'UserShop', '["u1","s0"]', '--admin', admin, '--json']);
  assert.equal(composite.code, 0, composite.stderr);
  const j = JSON.parse(composite.stdout);
  assert.equal(j.found, true);
  assert.deepEqual(j.features.map((f: { name: string; op: string; value: unknown }) => [f.name, f.op, f.value]), [['last_amount', 'last', 10]]);
  const missing = await cli(['inspect', 'UserSpend', 'nobody', '--admin', admin]);
  assert.equal(missing.code, 0);
  assert.match(missing.stdout, /no such entity/);
});

test('errors: unknown table and bad key exit 1 with the coded error; unreachable admin exits 1; bad command lines exit 2', async () => {
  const unknown = await cli(['inspect', 'Nope', 'x', '--admin', admin]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^error: unknown_table \(404\): table "Nope" is not registered \(registered tables: UserShop, UserSpend\)$/m);
  const badKey = await cli(['inspect', 'UserShop', 'just-one-part', '--admin', admin]);
  assert.equal(badKey.code, 1);
  assert.match(badKey.stderr, /^error: key_shape_mismatch \(400\)/m);
  const down = await cli(['info', '--admin', 'http://127.0.0.1:9']);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /cannot reach the admin address http:\/\/127\.0\.0\.1:9/);
  for (const args of [['inspect', 'UserSpend'], ['info', 'extra'], ['info', '--admin', 'ftp://x'], ['info', '--nope'], ['inspect', 'T', 'k', '--timeout-ms', 'soon']]) {
    const r = await cli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
  }
});

test('--help and help COMMAND describe both commands and their options', async () => {
  for (const args of [['info', '--help'], ['help', 'info'], ['inspect', '--help'], ['help', 'inspect']]) {
    const r = await cli(args);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`usage: streamfeat ${args[0] === 'help' ? args[1] : args[0]}`));
    assert.match(r.stdout, /--admin URL/);
    assert.match(r.stdout, /STREAMFEAT_ADMIN_URL/);
    assert.match(r.stdout, /--json/);
  }
  assert.match((await cli(['help'])).stdout, /^ {2}info +/m);
});
