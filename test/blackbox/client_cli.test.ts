/**
 * The client subcommands of the real `streamfeat` binary against a real server,
 * over HTTP and TCP: output, --json, exit codes and error lines.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { CLI, startServer } from '../harness/server';
import type { TestServer } from '../harness/server';
import { agg, buildNodes, col, event, table } from '../../src/client';
import { runClientCommand } from '../../src/client/cli_commands';

const SKIP = existsSync(CLI) ? false : `server not built (${CLI} missing)`;
let srv: TestServer | null = null;
let dir = '';

const Txn = event('Txn', { id: String, card: String, amount: Number }, { dedupe_key: 'id', dedupe_window: '1h' });
const Stats = table('CardStats', { from: Txn, key: 'card', features: { n: agg.count({ window: '1h' }), spend: agg.sum('amount', { window: '1h' }) } });
const Big = table('BigStats', { from: Txn.filter(col('amount').gt(100)), key: 'card', features: { big: agg.count() } });
const Changed = table('CardStats', { from: Txn, key: 'card', features: { n: agg.count({ window: '2h' }), spend: agg.sum('amount', { window: '1h' }) } });

before(async () => {
  if (SKIP !== false) return;
  srv = await startServer({ memoryOnly: true, testMode: true });
  dir = mkdtempSync(join(tmpdir(), 'streamfeat-cli-'));
  writeFileSync(join(dir, 'nodes.json'), JSON.stringify({ nodes: buildNodes([Stats, Big]) }, null, 2));
  writeFileSync(join(dir, 'changed.json'), JSON.stringify(buildNodes([Changed])));
  writeFileSync(join(dir, 'batch.json'), JSON.stringify({ requests: [{ table: 'CardStats', key: 'c1' }, { table: 'Nope', key: 'c1' }, { table: 'BigStats', key: 'c1', features: ['big'] }] }));
  writeFileSync(join(dir, 'batch_ok.json'), JSON.stringify([{ table: 'CardStats', key: 'c1', features: ['n'] }]));
});

after(async () => {
  await srv?.stop();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real binary: proves src/cli.ts dispatches here and exit codes / streams reach the shell. */
function binary(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The same command in-process (same code path after dispatch). Each spawn of the
 * binary loads the whole server (~0.4 s), so most commands run this way.
 */
async function inProcess(args: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runClientCommand(args, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    readFile: (f) => readFileSync(f, 'utf8'),
  });
  const text = (lines: string[]): string => lines.map((l) => `${l}\n`).join('');
  return { code, stdout: text(out), stderr: text(err) };
}

for (const transport of ['http', 'tcp'] as const) {
  test(`streamfeat CLI over ${transport}`, { skip: SKIP }, async () => {
    const url = transport === 'http' ? srv!.base : `tcp://127.0.0.1:${srv!.tcpPort}`;
    const common = ['--url', url, '--http-url', srv!.base];
    // Over HTTP a few commands go through the real binary; everything else in-process.
    const cli = inProcess;
    const viaBinary = transport === 'http' ? binary : inProcess;
    // reset is not dispatched by src/cli.ts (yet): run it in-process to start clean.
    const quiet = { out: (): void => undefined, err: (): void => undefined, readFile: (): string => '' };
    assert.equal(await runClientCommand(['reset', '--url', url], quiet), 0);

    let r = await cli(['ping', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^pong registry_version=\d+ /);

    r = await cli(['register', join(dir, 'nodes.json'), '--dry-run', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^dry run: would_apply=yes/);
    assert.match(r.stdout, /\+ new event Txn/);
    r = await viaBinary(['register', join(dir, 'nodes.json'), ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^registered: registry_version=\d+\nadded: Txn, CardStats, BigStats\n/);

    r = await cli(['push', 'Txn', '{"id":"a","card":"c1","amount":150}', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ok ack_lsn=\d+ registry_version=\d+\n$/);
    r = await cli(['push', 'Txn', '{"id":"a","card":"c1","amount":150}', ...common, '--json']);
    assert.equal(JSON.parse(r.stdout).idempotent_replay, true);
    r = await cli(['push', 'Txn', '{"id":"b","card":"c1","amount":20}', ...common]);
    assert.equal(r.code, 0, r.stderr);

    r = await viaBinary(['get', 'CardStats', 'c1', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'n      2\nspend  170\n');
    r = await cli(['get', 'CardStats', 'c1', '--features', 'spend', '--json', ...common]);
    assert.deepEqual(JSON.parse(r.stdout), { spend: 170 });
    r = await cli(['get', 'CardStats', 'nobody', ...common]);
    assert.match(r.stdout, /no features for key nobody/);

    r = await viaBinary(['batch-get', join(dir, 'batch.json'), ...common]);
    assert.equal(r.code, 1, 'one entry failed');
    assert.equal(r.stdout, '[0] CardStats "c1": {"n":2,"spend":170}\n[1] Nope "c1": error: unknown_table (404): table "Nope" is not registered (registered tables: BigStats, CardStats) at requests[1].table\n[2] BigStats "c1": {"big":1}\n');
    assert.equal(r.stderr, 'error: 1 of 3 entries failed\n');
    r = await cli(['batch-get', join(dir, 'batch_ok.json'), ...common, '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { results: [{ n: 2 }] });

    r = await cli(['registry', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /nodes=3\n/);
    assert.match(r.stdout, /event Txn {2}fields: id:str, card:str, amount:f64 {2}dedupe_key=id \(1h\)/);
    assert.match(r.stdout, /table CardStats <- Txn {2}key: \[card\] {2}features: n=count\(window=1h\), spend=sum\(amount, window=1h\)/);

    r = await viaBinary(['register', join(dir, 'changed.json'), ...common]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: force_required \(409\): /);
    assert.match(r.stderr, /\n {2}- window change CardStats\.n: 1h -> 2h\n/);
    assert.match(r.stderr, /hint: re-run with --force/);
    r = await cli(['register', join(dir, 'changed.json'), '--force', ...common]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /changed: CardStats/);

    r = await cli(['get', 'Nope', 'k', ...common]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'error: unknown_table (404): table "Nope" is not registered (registered tables: BigStats, CardStats) at table\n');
    r = await viaBinary(['push', 'Txn', '{"id":"c"}', ...common, '--json']);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, 'invalid_event');
    r = await viaBinary(['push', 'Txn', 'not-json', ...common]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /push data is not valid JSON/);
  });
}

test('register --dry-run gates CI: exit 0 when the change applies, 3 when it needs --force; batch-get and register take inline JSON and say what they tried', { skip: SKIP }, async () => {
  const common = ['--url', srv!.base];
  const quiet = { out: (): void => undefined, err: (): void => undefined, readFile: (): string => '' };
  assert.equal(await runClientCommand(['reset', ...common], quiet), 0);
  let r = await binary(['register', JSON.stringify({ nodes: buildNodes([Stats]) }), ...common]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^registered: /);

  r = await binary(['register', join(dir, 'changed.json'), '--dry-run', ...common]);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stdout, /^dry run: would_apply=no /);
  assert.match(r.stdout, /\n {2}- window change CardStats\.n: 1h -> 2h\n/);
  assert.equal(r.stderr, 'refused without --force: the change is destructive (exit 3); re-run with --force to apply it\n');
  r = await binary(['register', join(dir, 'changed.json'), '--dry-run', '--json', ...common]);
  assert.equal(r.code, 3);
  assert.equal(JSON.parse(r.stdout).would_apply, false);
  assert.equal(r.stderr, '', '--json prints the reply only');
  r = await binary(['register', join(dir, 'changed.json'), '--dry-run', '--force', ...common]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^dry run: would_apply=yes /);
  r = await binary(['register', join(dir, 'nodes.json'), '--dry-run', ...common]);
  assert.equal(r.code, 0, 'additive changes apply without --force');
  r = await binary(['register', '{"nodes":[{"kind":"table","name":"T","upstreams":["Missing"],"key":["k"],"agg":{}}]}', '--dry-run', ...common]);
  assert.equal(r.code, 1, 'an invalid change is a server error, not a --force gate');
  const help = await binary(['register', '--help']);
  assert.match(help.stdout, /3 with --dry-run: the change is destructive and would be refused without --force/);

  r = await binary(['batch-get', '[{"table":"CardStats","key":"c1"}]', ...common]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '[0] CardStats "c1": (no events for this key)\n');
  r = await binary(['batch-get', '{"requests":[{"table":"CardStats","key":"c1","features":["n"]}]}', '--json', ...common]);
  assert.deepEqual(JSON.parse(r.stdout), { results: [{}] }, 'a key without events reads as {}');
  r = await binary(['batch-get', '[{"table":"CardStats",', ...common]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: inline JSON is not valid: .* \(no file has that name either\)/);
  r = await binary(['batch-get', join(dir, 'no-such.json'), ...common]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`^error: cannot read file ${join(dir, 'no-such.json').replace(/[.]/g, '\\.')}: ENOENT.*\\(an argument that starts with \\[ or \\{ is read as inline JSON\\)`));
  writeFileSync(join(dir, 'bad.json'), '[oops');
  r = await binary(['batch-get', join(dir, 'bad.json'), ...common]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: file .*bad\.json is not valid JSON: /);
  r = await binary(['batch-get', '{"nope":1}', ...common]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: inline JSON: expected an array of \{table, key, features\?\} or \{"requests": \[\.\.\.\]\}/);
});
