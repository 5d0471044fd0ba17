/**
 * The shipped k6 scripts (bench/k6), without k6: their modules are loaded by
 * node with small stand-ins for `k6` and `k6/http`, so the test reads the real
 * options and request bodies they would send. Against a real server that runs
 * the README quick start: the k6 registration and pushes leave the README's
 * nodes alone, and the README's push still works after them. The push latency
 * threshold exists only in fixed-rate mode (RATE), never in the closed loop.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { post, startServer, type TestServer } from '../harness/server';

const ROOT = join(__dirname, '..', '..', '..');
const K6 = join(ROOT, 'bench', 'k6');

/** The JSON bodies of the README quick start's curl lines, in order. */
function readmeBodies(): Array<{ path: string; body: unknown }> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## Running'));
  return [...quick.matchAll(/curl -s localhost:8080(\/\w+)(?: -H '[^']*')? +-d '([^']*)'/g)].map((m) => ({ path: m[1], body: JSON.parse(m[2]) as unknown }));
}

let dir: string;
let srv: TestServer;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sf-k6-'));
  // The scripts as node modules: `k6` and `k6/http` point at stand-ins, lib.js at its copy.
  for (const f of readdirSync(K6).filter((n) => n.endsWith('.js'))) {
    const text = readFileSync(join(K6, f), 'utf8')
      .replace(/from 'k6\/http'/g, "from './k6_http.mjs'")
      .replace(/from 'k6'/g, "from './k6.mjs'")
      .replace(/from '\.\/lib\.js'/g, "from './lib.mjs'");
    writeFileSync(join(dir, f.replace(/\.js$/, '.mjs')), text);
  }
  writeFileSync(join(dir, 'k6_http.mjs'), 'export default { post: () => ({ status: 200, body: "{}" }), batch: (r) => r.map(() => ({ status: 200 })) };\n');
  writeFileSync(join(dir, 'k6.mjs'), 'export function check() { return true; }\n');
  // k6's globals: __ENV and open() (read relative to the script).
  writeFileSync(join(dir, 'globals.mjs'), `import { readFileSync } from 'node:fs';\nglobalThis.__ENV = JSON.parse(process.env.K6_ENV || '{}');\nglobalThis.open = (p) => readFileSync(new URL(p, ${JSON.stringify(`file://${K6}/`)}), 'utf8');\n`);
  srv = await startServer({ memoryOnly: true });
});
after(async () => {
  await srv.stop();
  srv.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `code` (an ES module body) next to the loaded scripts with __ENV = env; returns its JSON output. */
function k6Eval(code: string, env: Record<string, string> = {}): any {
  writeFileSync(join(dir, 'probe.mjs'), code);
  const r = spawnSync(process.execPath, ['--import', join(dir, 'globals.mjs'), join(dir, 'probe.mjs')], { encoding: 'utf8', env: { ...process.env, K6_ENV: JSON.stringify(env) } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('push.js and mixed.js: a latency threshold only with RATE (fixed arrival rate), none in the closed loop', () => {
  for (const script of ['push', 'mixed', 'get']) {
    const closed = k6Eval(`import { options } from './${script}.mjs'; console.log(JSON.stringify(options));`);
    assert.equal(closed.vus, 32, script);
    assert.deepEqual(Object.keys(closed.thresholds), ['http_req_failed'], `${script}: closed loop, no latency threshold`);
    const fixed = k6Eval(`import { options } from './${script}.mjs'; console.log(JSON.stringify(options));`, { RATE: '5000' });
    assert.equal(fixed.scenarios.fixed.executor, 'constant-arrival-rate');
    assert.equal(fixed.thresholds.http_req_failed[0], 'rate<0.001');
  }
  const fixedPush = k6Eval("import { options } from './push.mjs'; console.log(JSON.stringify(options));", { RATE: '5000' });
  assert.deepEqual(fixedPush.thresholds.http_req_duration, ['p(99)<2']);
  const fixedMixed = k6Eval("import { options } from './mixed.mjs'; console.log(JSON.stringify(options));", { RATE: '5000' });
  assert.deepEqual(fixedMixed.thresholds['http_req_duration{kind:push}'], ['p(99)<2']);
});

test('the k6 registration and its pushes leave the README quick start alone; the README push works after them', async () => {
  const [register, push, get] = readmeBodies();
  assert.deepEqual([register.path, push.path, get.path], ['/register', '/push', '/get'], 'the README quick start: register, push, get');
  assert.equal((await post(srv.base, register.path, register.body)).status, 200);
  assert.equal((await post(srv.base, push.path, push.body)).status, 200);

  const reg = await post(srv.base, '/register', JSON.parse(readFileSync(join(K6, 'fraud_register.json'), 'utf8')));
  assert.equal(reg.status, 200, reg.text);
  assert.deepEqual(reg.json.changed, [], 'no README node changed');
  const readmeNames = (register.body as { nodes: Array<{ name: string }> }).nodes.map((n) => n.name);
  for (const name of reg.json.added as string[]) assert.ok(!readmeNames.includes(name), `${name} is the k6 scripts' own`);

  const bodies = k6Eval(`import { setupFraud, pushBody, getBody } from './lib.mjs';
    const data = setupFraud(false);
    console.log(JSON.stringify({ push: [pushBody(data), pushBody(data), pushBody(data, 7)], get: getBody(data) }));`, { ENTITIES: '1000' });
  for (const b of bodies.push as string[]) {
    const r = await post(srv.base, '/push', b);
    assert.equal(r.status, 200, `${b}: ${r.text}`);
  }
  const k6Get = await post(srv.base, '/get', bodies.get);
  assert.equal(k6Get.status, 200, k6Get.text);

  assert.equal((await post(srv.base, push.path, push.body)).status, 200, 'the README push after the k6 scripts ran');
  const row = await post(srv.base, get.path, get.body);
  assert.equal(row.status, 200, row.text);
  assert.equal(row.json.n, 2);
});
