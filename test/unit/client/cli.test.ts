import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runClientCommand, parseKey, EXIT_ERROR, EXIT_OK, EXIT_USAGE, EXIT_NEEDS_FORCE } from '../../../src/client/cli_commands';
import type { CliIo } from '../../../src/client/cli_commands';
import { formatDiffItem } from '../../../src/client/cli_format';
import { closedPort, startFakeHttp, startFakeTcp } from './fake_servers';
import type { HttpAnswer, HttpRequestSeen } from './fake_servers';

interface Captured extends CliIo {
  stdout: string[];
  stderr: string[];
}

function io(files: Record<string, string> = {}): Captured {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    readFile: (p) => {
      if (!(p in files)) throw Object.assign(new Error(`ENOENT: no such file '${p}'`), { code: 'ENOENT' });
      return files[p];
    },
  };
}

const DIFF = {
  additive: [
    { kind: 'new_descriptor', descriptor_kind: 'event', name: 'Txn' },
    { kind: 'new_agg', table: 'CardStats', agg: 'n', source: 'count' },
    { kind: 'new_field', event: 'Txn', field: 'country', type: 'str' },
  ],
  destructive: [{ kind: 'window_change', agg: 'CardStats.spend', from: '1h', to: '30m' }],
};

function server(req: HttpRequestSeen): HttpAnswer {
  const body = req.json as Record<string, unknown> | undefined;
  switch (req.url) {
    case '/ping':
      return { body: { pong: true, registry_version: 4 } };
    case '/push':
      if ((body as { event: string }).event === 'Ghost') return { status: 404, body: { error: { code: 'event_not_found', path: 'event', message: 'event "Ghost" is not registered' }, registry_version: 4 } };
      return { body: { ack_lsn: 12, registry_version: 4, idempotent_replay: false } };
    case '/get':
      if ((body as { table: string }).table === 'Nope') return { status: 404, body: { error: { code: 'unknown_table', message: 'table is not registered' } } };
      if ((body as { key: unknown }).key === 'cold') return { body: {} };
      return { body: { txn_count: 3, spend: 12.5, top: [{ value: 'a', count: 2 }] } };
    case '/batch_get':
      return { body: { results: [{ n: 1 }, { error: { code: 'unknown_table', message: 'table is not registered' } }] } };
    case '/register':
      if (body?.force !== true && body?.dry_run !== true) {
        return { status: 409, body: { error: { code: 'force_required', reason: '1 destructive change needs force', diff: DIFF }, registry_version: 4 } };
      }
      if (body?.dry_run === true) return { body: { status: 'ok', dry_run: true, would_apply: false, registry_version: 4, diff: DIFF } };
      return { body: { status: 'ok', registry_version: 5, added: ['Txn'], unchanged: [], changed: ['CardStats'], diff: DIFF } };
    case '/registry':
      return {
        body: {
          registry_version: 5,
          nodes: [
            { kind: 'event', name: 'Txn', schema: { fields: { card: 'str', amount: 'f64', country: 'str' }, optional_fields: ['country'] }, dedupe_key: 'id', dedupe_window: '1h' },
            { kind: 'derivation', name: 'Big', output_kind: 'event', upstreams: ['Txn'], ops: [{ op: 'filter', expr: '(amount > 1)' }] },
            { kind: 'table', name: 'CardStats', upstreams: ['Txn'], key: ['card'], agg: { n: { op: 'count', params: { window: '1h' } }, s: { op: 'sum', params: { field: 'amount', window: '1h' } } } },
          ],
        },
      };
    case '/reset':
      return { status: 403, body: { error: { code: 'reset_disabled_in_production', reason: 'start the server with --test-mode or SERVICE_TEST_MODE=1' } } };
    default:
      return { status: 404, body: { error: { code: 'not_found' } } };
  }
}

test('cli: every command, human output and --json, exit codes', async () => {
  const srv = await startFakeHttp(server);
  const u = ['--url', srv.url];
  try {
    let c = io();
    assert.equal(await runClientCommand(['ping', ...u], c), EXIT_OK);
    assert.deepEqual(c.stdout, [`pong registry_version=4 (${srv.url})`]);

    c = io();
    assert.equal(await runClientCommand(['push', 'Txn', '{"card":"c1","amount":5}', ...u], c), EXIT_OK);
    assert.deepEqual(c.stdout, ['ok ack_lsn=12 registry_version=4']);
    assert.deepEqual(srv.requests.at(-1)?.json, { event: 'Txn', data: { card: 'c1', amount: 5 } });
    c = io();
    assert.equal(await runClientCommand(['push', 'Txn', '{"card":"c1"}', `--url=${srv.url}`, '--json'], c), EXIT_OK);
    assert.deepEqual(JSON.parse(c.stdout[0]), { ack_lsn: 12, registry_version: 4, idempotent_replay: false });

    c = io();
    assert.equal(await runClientCommand(['push', 'Ghost', '{}', ...u], c), EXIT_ERROR);
    assert.deepEqual(c.stderr, ['error: event_not_found (404): event "Ghost" is not registered at event']);
    c = io();
    assert.equal(await runClientCommand(['push', 'Ghost', '{}', ...u, '--json'], c), EXIT_ERROR);
    const je = JSON.parse(c.stdout[0]);
    assert.equal(je.error.code, 'event_not_found');
    assert.equal(je.status, 404);
    assert.equal(je.registry_version, 4);

    c = io();
    assert.equal(await runClientCommand(['get', 'CardStats', 'c1', '--features', 'txn_count, spend', ...u], c), EXIT_OK);
    assert.deepEqual(c.stdout, ['txn_count  3', 'spend      12.5', 'top        [{"value":"a","count":2}]']);
    assert.deepEqual(srv.requests.at(-1)?.json, { table: 'CardStats', key: 'c1', features: ['txn_count', 'spend'] });
    c = io();
    assert.equal(await runClientCommand(['get', 'CardStats', 'cold', ...u], c), EXIT_OK);
    assert.match(c.stdout[0], /no features for key cold/);
    c = io();
    assert.equal(await runClientCommand(['get', 'CardStats', '["c1", 7]', ...u, '--json'], c), EXIT_OK);
    assert.deepEqual(srv.requests.at(-1)?.json, { table: 'CardStats', key: ['c1', 7] });
    assert.equal(JSON.parse(c.stdout[0]).txn_count, 3);
    c = io();
    assert.equal(await runClientCommand(['get', 'Nope', 'k', ...u], c), EXIT_ERROR);
    assert.deepEqual(c.stderr, ['error: unknown_table (404): table is not registered']);

    const files = {
      'b.json': JSON.stringify([{ table: 'CardStats', key: 'c1' }, { table: 'Nope', key: 'x', features: ['n'] }]),
      'wrapped.json': JSON.stringify({ requests: [{ table: 'CardStats', key: 'c1' }] }),
      'nodes.json': JSON.stringify({ nodes: [{ kind: 'event', name: 'Txn', schema: { fields: { card: 'str' }, optional_fields: [] } }] }),
      'list.json': JSON.stringify([{ kind: 'event', name: 'Txn', schema: { fields: { card: 'str' }, optional_fields: [] } }]),
      'bad.json': '{not json',
    };
    c = io(files);
    assert.equal(await runClientCommand(['batch-get', 'b.json', ...u], c), EXIT_ERROR, 'an entry failed');
    assert.deepEqual(c.stdout, ['[0] CardStats "c1": {"n":1}', '[1] Nope "x": error: unknown_table (404): table is not registered']);
    assert.deepEqual(c.stderr, ['error: 1 of 2 entries failed']);
    assert.equal(srv.requests.at(-1)?.body, JSON.stringify({ requests: [{ table: 'CardStats', key: 'c1' }, { table: 'Nope', key: 'x', features: ['n'] }] }));
    c = io(files);
    await runClientCommand(['batch-get', 'wrapped.json', ...u, '--json'], c);
    assert.equal(JSON.parse(c.stdout[0]).results[1].error.code, 'unknown_table');

    c = io(files);
    assert.equal(await runClientCommand(['register', 'nodes.json', ...u], c), EXIT_ERROR);
    assert.deepEqual(c.stderr, [
      'error: force_required (409): 1 destructive change needs force',
      'diff: 3 additive, 1 destructive',
      '  + new event Txn',
      '  + new feature CardStats.n (count)',
      '  + new field Txn.country: str',
      '  - window change CardStats.spend: 1h -> 30m',
      'hint: re-run with --force to apply the destructive changes',
    ]);
    c = io(files);
    assert.equal(await runClientCommand(['register', 'list.json', '--dry-run', ...u], c), EXIT_NEEDS_FORCE, 'would_apply false: the change needs --force');
    assert.equal(c.stdout[0], 'dry run: would_apply=no registry_version=4 (nothing changed)');
    assert.deepEqual(srv.requests.at(-1)?.json, { nodes: JSON.parse(files['list.json']), dry_run: true });
    c = io(files);
    assert.equal(await runClientCommand(['register', 'nodes.json', '--force', ...u], c), EXIT_OK);
    assert.deepEqual(c.stdout.slice(0, 4), ['registered: registry_version=5', 'added: Txn', 'changed: CardStats', 'diff: 3 additive, 1 destructive']);
    c = io(files);
    assert.equal(await runClientCommand(['register', 'nodes.json', '--force', '--json', ...u], c), EXIT_OK);
    assert.equal(JSON.parse(c.stdout[0]).registry_version, 5);

    c = io();
    assert.equal(await runClientCommand(['registry', ...u], c), EXIT_OK);
    assert.deepEqual(c.stdout, [
      'registry_version=5 nodes=3',
      '  event Txn  fields: card:str, amount:f64, country:str?  dedupe_key=id (1h)',
      '  derivation Big <- Txn  ops: filter',
      '  table CardStats <- Txn  key: [card]  features: n=count(window=1h), s=sum(amount, window=1h)',
    ]);

    c = io();
    assert.equal(await runClientCommand(['reset', ...u], c), EXIT_ERROR);
    assert.deepEqual(c.stderr, [
      'error: reset_disabled_in_production (403): start the server with --test-mode or SERVICE_TEST_MODE=1',
    ]);
  } finally {
    await srv.close();
  }
});

test('cli: usage errors exit 2 and never contact the server', async () => {
  const srv = await startFakeHttp(server);
  const u = ['--url', srv.url];
  const cases: Array<[string[], RegExp]> = [
    [[], /usage/],
    [['frobnicate', ...u], /unknown command: frobnicate/],
    [['push', 'Txn', ...u], /expected: streamfeat push EVENT/],
    [['push', 'Txn', '{bad', ...u], /push data is not valid JSON/],
    [['push', 'Txn', '[1,2]', ...u], /must be a JSON object/],
    [['push', 'Txn', '{}', 'extra', ...u], /unexpected argument extra/],
    [['get', 'T', ...u], /expected: streamfeat get TABLE KEY/],
    [['batch-get', 'missing.json', ...u], /cannot read file missing.json/],
    [['batch-get', 'bad.json', ...u], /bad.json is not valid JSON/],
    [['batch-get', 'obj.json', ...u], /expected an array/],
    [['register', 'obj.json', ...u], /expected \{"nodes"/],
    [['ping', '--bogus', ...u], /unknown option --bogus/],
    [['ping', '--url'], /--url needs a value/],
    [['ping', '--url', 'gopher://x'], /unsupported URL scheme/],
    [['ping', '--timeout-ms=-3', ...u], /--timeout-ms needs an integer >= 1, got -3/],
    [['ping', '--timeout-ms', '-3', ...u], /--timeout-ms needs a value/],
    [['ping', '--json=yes', ...u], /--json takes no value/],
  ];
  try {
    for (const [argv, want] of cases) {
      const c = io({ 'bad.json': '{', 'obj.json': '{"x":1}' });
      assert.equal(await runClientCommand(argv, c), EXIT_USAGE, argv.join(' '));
      assert.match(c.stderr.join('\n'), want, argv.join(' '));
    }
    assert.equal(srv.requests.length, 0);
    const h = io();
    assert.equal(await runClientCommand(['batch-get', '--help'], h), EXIT_OK);
    assert.match(h.stdout.join('\n'), /streamfeat batch-get FILE/);
  } finally {
    await srv.close();
  }
});

test('cli: tcp urls, connection errors, --http-url for registry', async () => {
  const tcp = await startFakeTcp(() => ({ body: { pong: true, registry_version: 9 } }));
  const http = await startFakeHttp(server);
  try {
    let c = io();
    assert.equal(await runClientCommand(['ping', '--url', tcp.url], c), EXIT_OK);
    assert.deepEqual(c.stdout, [`pong registry_version=9 (${tcp.url})`]);
    c = io();
    assert.equal(await runClientCommand(['registry', '--url', tcp.url], c), EXIT_ERROR);
    assert.match(c.stderr[0], /^error: op_not_implemented: registry has no TCP opcode/);
    c = io();
    assert.equal(await runClientCommand(['registry', '--url', tcp.url, '--http-url', http.url], c), EXIT_OK);
    assert.equal(c.stdout[0], 'registry_version=5 nodes=3');
    const port = await closedPort();
    c = io();
    assert.equal(await runClientCommand(['ping', '--url', `http://127.0.0.1:${port}`], c), EXIT_ERROR);
    assert.match(c.stderr[0], /^error: ECONNREFUSED: /);
  } finally {
    await tcp.close();
    await http.close();
  }
});

test('cli: KEY parsing and diff item wording', () => {
  assert.equal(parseKey('abc'), 'abc');
  assert.equal(parseKey('42'), 42);
  assert.equal(parseKey('-1.5'), -1.5);
  assert.equal(parseKey('"42"'), '42', 'a quoted JSON string forces a string key');
  assert.deepEqual(parseKey('["a", 1]'), ['a', 1]);
  assert.equal(parseKey('true'), 'true');
  assert.equal(parseKey('{"a":1}'), '{"a":1}');
  assert.equal(parseKey('[broken'), '[broken');
  assert.equal(formatDiffItem({ kind: 'rename', from: 'A', to: 'B' }), 'rename A -> B');
  assert.equal(formatDiffItem({ kind: 'type_change', field: 'Txn.amount', from: 'f64', to: 'i64' }), 'type change Txn.amount: f64 -> i64');
  assert.equal(formatDiffItem({ kind: 'op_removal', table: 'T', agg: 'filter[0]' }), 'op removed T.filter[0]');
  assert.equal(formatDiffItem({ kind: 'agg_removal', table: 'T', agg: 'n' }), 'feature removed T.n');
  assert.equal(formatDiffItem({ kind: 'agg_removal', table: 'T', agg: '' }), 'removed T');
  assert.equal(formatDiffItem({ kind: 'key_cols_change', table: 'T', from: ['a'], to: ['a', 'b'] }), 'key change T: ["a"] -> ["a","b"]');
  assert.equal(formatDiffItem({ kind: 'brand_new', x: 1 }), 'brand_new {"x":1}');
});
