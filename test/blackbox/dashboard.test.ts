/**
 * The live dashboard at / on the admin address, rendered by a real headless
 * Chromium (Debian's `chromium`, installed here when absent; never skipped):
 * the page is self-contained, the rendered DOM names the registered tables (in
 * the lineage graph and the tables card), shows the live push count, and the
 * entity inspector (opened by URL) shows the row with each feature's op and
 * window, with float noise rounded away. The first paint already shows every
 * table with its key and features. The screenshot is saved to <tmpdir>/streamfeat-dashboard.png
 * (docs/img/dashboard.png is a copy of one).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_PUSH } from '../../src/protocol/frame';

const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOT = join(tmpdir(), 'streamfeat-dashboard.png');
const PUSHES = 37;
/** Two more pushes for user f1, whose float sum is 0.30000000000000004. */
const FLOAT_PUSHES = [0.1, 0.2];

let srv: TestServer;
let admin: string;

function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  const r = spawnSync('sh', ['-c', 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium'], { stdio: 'inherit', timeout: 15 * 60_000 });
  assert.equal(r.status, 0, 'apt-get install -y chromium failed');
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing after install`);
}

/**
 * Runs headless Chromium on `url` with extra flags; resolves with stdout. A fresh profile each time.
 * `budgetMs`: virtual time the page gets before the dump (fetches finish within it whatever it is).
 */
function chromium(url: string, extra: string[], budgetMs = 8000): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'streamfeat-chromium-'));
  const args = [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    // Lets the page's fetches and first polls finish before the DOM is dumped or the shot taken.
    `--virtual-time-budget=${budgetMs}`, ...extra, url,
  ];
  return new Promise((resolve, reject) => {
    execFile(CHROMIUM, args, { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      rmSync(profile, { recursive: true, force: true });
      if (err) reject(new Error(`chromium failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

before(async () => {
  ensureChromium();
  srv = await startServer({ shards: 2, admin: true, args: ['--snapshot-interval', '1s'] });
  admin = srv.adminBase!;
  const reg = await post(srv.base, '/register', {
    nodes: [
      { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', merchant: 'str', amount: 'f64' }, optional_fields: [] } },
      { kind: 'derivation', output_kind: 'event', name: 'BigTxn', upstreams: ['Txn'], ops: [{ op: 'filter', expr: 'amount > 20' }] },
      { kind: 'table', name: 'UserSpend', upstreams: ['Txn'], key: ['user'], agg: { n: { op: 'count' }, spend_1h: { op: 'sum', params: { field: 'amount', window: '1h' } } } },
      { kind: 'table', name: 'MerchantBig', upstreams: ['BigTxn'], key: ['merchant'], agg: { big_10m: { op: 'count', params: { window: '10m' } } } },
    ],
  });
  assert.equal(reg.status, 200, reg.text);
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    for (let i = 0; i < PUSHES; i++) {
      const body = { event: 'Txn', data: { user: `u${i % 5}`, merchant: `m${i % 3}`, amount: i } };
      if (i % 2 === 0) assert.equal((await post(srv.base, '/push', body)).status, 200);
      else assert.equal((await tcp.request(OP_PUSH, body)).op, OP_PUSH);
    }
    for (const amount of FLOAT_PUSHES) assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'f1', merchant: 'm0', amount } })).status, 200);
  } finally {
    tcp.close();
  }
  assert.equal((await post(srv.base, '/get', { table: 'UserSpend', key: 'u1' })).status, 200);
});

after(async () => {
  await srv.stop();
  srv.cleanup();
});

test('the page is one self-contained HTML document (no external scripts, styles or fonts)', async () => {
  const r = await get(admin, '/');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(r.text, /<script>/);
  assert.doesNotMatch(r.text, /<script[^>]+src=|<link[^>]+href=|@import|url\(\s*['"]?https?:/i);
  assert.doesNotMatch(r.text, /(src|href)\s*=\s*["']?(https?:)?\/\//i);
});

test('headless Chromium renders the tables, the live push count and an inspected entity', async () => {
  const dom = await chromium(`${admin}/?inspect=UserSpend&key=u1`, ['--dump-dom']);
  assert.match(dom, /id="status">live</, 'the page reached /api/stats');
  assert.match(dom, new RegExp(`id="push-total">${PUSHES + FLOAT_PUSHES.length}<`), 'the live push count is shown');
  for (const name of ['Txn', 'BigTxn', 'UserSpend', 'MerchantBig']) assert.match(dom, new RegExp(`data-name="${name}"`), `lineage node ${name}`);
  assert.match(dom, /class="node node-derived" data-name="BigTxn"/);
  const tables = /<tbody id="tables">(.*?)<\/tbody>/s.exec(dom)?.[1] ?? '';
  assert.match(tables, />UserSpend</);
  assert.match(tables, />MerchantBig</);
  // The inspector: u1 got pushes i = 1, 6, ..., 36 -> count 8, spend 1+6+...+36 = 148.
  const inspected = /<div id="inspect-out">(.*?)<\/table>/s.exec(dom)?.[1] ?? '';
  assert.match(inspected, /UserSpend \/ u1/);
  assert.match(inspected, /<td class="code">n<\/td><td class="code">count<\/td><td>lifetime<\/td><td class="n code">8<\/td>/);
  assert.match(inspected, /<td class="code">spend_1h<\/td><td class="code">sum<\/td><td>1h<\/td><td class="n code">148<\/td>/);
});

test('first paint: the tables card shows every table with its key and feature count before the second poll', async () => {
  // 500 ms of virtual time: the first /api/stats and /api/registry answers arrive, the next poll
  // (1 s later) does not happen. The card used to show key and features only after that poll.
  const dom = await chromium(`${admin}/`, ['--dump-dom'], 500);
  assert.match(dom, /id="status">live</);
  const tables = /<tbody id="tables">(.*?)<\/tbody>/s.exec(dom)?.[1] ?? '';
  assert.match(tables, /<td class="code">UserSpend<\/td><td class="code">user<\/td><td class="n">2<\/td>/, tables);
  assert.match(tables, /<td class="code">MerchantBig<\/td><td class="code">merchant<\/td><td class="n">1<\/td>/, tables);
});

test('the inspector rounds float noise away (0.1 + 0.2 reads 0.3) and keeps the exact value as the tooltip', async () => {
  const dom = await chromium(`${admin}/?inspect=UserSpend&key=f1`, ['--dump-dom']);
  const inspected = /<div id="inspect-out">(.*?)<\/table>/s.exec(dom)?.[1] ?? '';
  assert.match(inspected, /<td class="code">spend_1h<\/td><td class="code">sum<\/td><td>1h<\/td><td class="n code" title="0.30000000000000004">0.3<\/td>/, inspected);
  assert.match(inspected, /<td class="code">n<\/td><td class="code">count<\/td><td>lifetime<\/td><td class="n code">2<\/td>/, 'integers have no tooltip');
  assert.doesNotMatch(dom, />0\.30000000000000004</);
});

test('headless Chromium takes a screenshot of the dashboard', async (t) => {
  rmSync(SCREENSHOT, { force: true });
  await chromium(`${admin}/?inspect=UserSpend&key=u1`, ['--window-size=1440,1650', `--screenshot=${SCREENSHOT}`]);
  assert.ok(existsSync(SCREENSHOT), 'screenshot written');
  const png = readFileSync(SCREENSHOT);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
  assert.ok(statSync(SCREENSHOT).size > 30_000, 'not a blank page');
  t.diagnostic(`dashboard screenshot: ${SCREENSHOT}`);
});
