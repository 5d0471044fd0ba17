import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamfeatError, agg, col, event, table } from '../../../src/client';
import type { RetryEvent } from '../../../src/client';
import { closedPort, startFakeHttp } from './fake_servers';
import type { HttpAnswer, HttpRequestSeen } from './fake_servers';

const FAST_RETRY = { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 4 };
const Txn = event('Txn', { txn_id: String, card_id: String, amount: Number }, { dedupe_key: 'txn_id', dedupe_window: '1h' });
const Click = event('Click', { user: String });
const Stats = table('CardStats', { from: Txn, key: 'card_id', features: { n: agg.count({ window: '1h' }) } });

const OK_ACK = { ack_lsn: 1, registry_version: 2, idempotent_replay: false };
const REGISTER_OK = { status: 'ok', registry_version: 2, added: ['Txn', 'CardStats'], unchanged: [], changed: [], diff: { additive: [], destructive: [] } };

async function rejects(p: Promise<unknown>): Promise<StreamfeatError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof StreamfeatError, `expected StreamfeatError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a rejection');
}

/** Routes by path; each route answers from a script (last answer repeats). */
function scripted(routes: Record<string, HttpAnswer[]>): (req: HttpRequestSeen) => HttpAnswer {
  const used: Record<string, number> = {};
  return (req) => {
    const path = req.url;
    const script = routes[path];
    if (script === undefined) return { status: 404, body: { error: { code: 'not_found' } } };
    const i = used[path] ?? 0;
    used[path] = i + 1;
    return script[Math.min(i, script.length - 1)];
  };
}

test('every method sends the documented request and reads the reply', async () => {
  const srv = await startFakeHttp(
    scripted({
      '/ping': [{ body: { pong: true, registry_version: 0 } }],
      '/register': [{ body: REGISTER_OK }],
      '/push': [{ body: OK_ACK }, { body: { ...OK_ACK, idempotent_replay: true }, headers: { 'X-Service-Idempotent-Replay': '1' } }, { body: OK_ACK, headers: { 'x-service-idempotent-replay': '1' } }],
      '/get': [{ body: { n: 3 } }],
      '/batch_get': [{ body: { results: [{ n: 3 }, { error: { code: 'unknown_table', message: 'table is not registered', path: 'requests[1].table' } }, {}] } }],
      '/reset': [{ body: { status: 'ok', reset: true, registry_version: 3 } }],
      '/registry': [{ body: { registry_version: 3, nodes: [Txn.toNode()] } }],
    }),
  );
  const c = new Client(srv.url);
  try {
    assert.deepEqual(await c.ping(), { pong: true, registry_version: 0 });
    assert.equal(c.registryVersion, 0);

    const r = await c.register([Stats], { force: true, dryRun: false });
    assert.deepEqual(r, REGISTER_OK);
    assert.equal(c.registryVersion, 2);
    const reg = srv.requests[1];
    assert.equal(reg.method, 'POST');
    assert.equal(reg.url, '/register');
    assert.equal(reg.headers['content-type'], 'application/json');
    assert.deepEqual(reg.json, { nodes: [Txn.toNode(), Stats.toNode()], force: true });

    assert.deepEqual(await c.push(Txn, { txn_id: 't1', card_id: 'c1', amount: 5 }), OK_ACK);
    assert.deepEqual(srv.requests[2].json, { event: 'Txn', data: { txn_id: 't1', card_id: 'c1', amount: 5 } });
    assert.equal((await c.push('Txn', { txn_id: 't1', card_id: 'c1', amount: 5 })).idempotent_replay, true);
    assert.equal((await c.push('Txn', { txn_id: 't1', card_id: 'c1', amount: 5 })).idempotent_replay, true, 'the header alone marks a replay');

    assert.deepEqual(await c.get(Stats, 'c1', ['n']), { n: 3 });
    assert.deepEqual(srv.requests[5].json, { table: 'CardStats', key: 'c1', features: ['n'] });
    await c.get('CardStats', ['c1', 7]);
    assert.deepEqual(srv.requests[6].json, { table: 'CardStats', key: ['c1', 7] });

    const results = await c.batchGet([
      { table: Stats, key: 'c1', features: ['n'] },
      { table: 'Nope', key: 'c1' },
      { table: 'CardStats', key: 'cold' },
    ]);
    assert.deepEqual(srv.requests[7].json, {
      requests: [{ table: 'CardStats', key: 'c1', features: ['n'] }, { table: 'Nope', key: 'c1' }, { table: 'CardStats', key: 'cold' }],
    });
    assert.deepEqual(results[0], { n: 3 });
    assert.ok(results[1] instanceof StreamfeatError);
    assert.equal(results[1].code, 'unknown_table');
    assert.equal(results[1].status, 404);
    assert.equal(results[1].path, 'requests[1].table');
    assert.deepEqual(results[2], {});

    assert.deepEqual(await c.reset(), { status: 'ok', reset: true, registry_version: 3 });
    assert.equal(srv.requests[8].url, '/reset');
    assert.equal(c.retriesPushesOf('Txn'), false, 'reset forgets the registry');

    const registry = await c.registry();
    assert.equal(srv.requests[9].method, 'GET');
    assert.equal(srv.requests[9].url, '/registry');
    assert.equal(registry.nodes.length, 1);
    assert.equal(c.retriesPushesOf('Txn'), true, 'registry() teaches which events dedupe');
  } finally {
    await c.close();
  }
  const err = await rejects(c.ping());
  assert.equal(err.code, 'ECONNABORTED');
  await srv.close();
});

test('error replies become StreamfeatError with every envelope member', async () => {
  const srv = await startFakeHttp(
    scripted({
      '/register': [
        {
          status: 409,
          body: {
            error: { code: 'force_required', reason: 'destructive change', diff: { additive: [], destructive: [{ kind: 'window_change', agg: 'CardStats.n', from: '1h', to: '2h' }] } },
            registry_version: 4,
          },
        },
        { status: 400, body: { error: { code: 'schema_invalid', path: 'nodes[0]', message: 'bad' }, errors: [{ kind: 'unknown_field_type', path: 'nodes[0].schema.fields.a', message: 'x' }] } },
        { status: 415, body: '<html>nope</html>', headers: { 'content-type': 'text/html' } },
      ],
      '/push': [{ status: 404, body: { error: { code: 'event_not_found', message: 'event is not registered' }, registry_version: 4 } }],
    }),
  );
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    const e1 = await rejects(c.register(Stats));
    assert.equal(e1.code, 'force_required');
    assert.equal(e1.status, 409);
    assert.equal(e1.reason, 'destructive change');
    assert.equal(e1.registryVersion, 4);
    assert.equal(e1.diff?.destructive.length, 1);
    assert.equal(c.registryVersion, 4, 'errors also report the registry version');
    const e2 = await rejects(c.register(Stats));
    assert.equal(e2.path, 'nodes[0]');
    assert.deepEqual(e2.errors, [{ kind: 'unknown_field_type', path: 'nodes[0].schema.fields.a', message: 'x' }]);
    const e3 = await rejects(c.register(Stats));
    assert.equal(e3.code, 'unparseable_error');
    assert.equal(e3.status, 415);
    const e4 = await rejects(c.push('Ghost', { a: 1 }));
    assert.equal(e4.code, 'event_not_found');
    assert.equal(e4.message, 'event is not registered');
    assert.equal(srv.requests.length, 4, 'no 4xx was retried');
  } finally {
    await c.close();
    await srv.close();
  }
});

test('retries: 5xx then success; persistent 5xx gives up after maxAttempts; 4xx is never retried', async () => {
  const srv = await startFakeHttp(
    scripted({
      '/get': [
        { status: 503, body: { error: { code: 'wal_unavailable' } } },
        { status: 502, body: '<html>bad gateway</html>' },
        { body: { n: 1 } },
      ],
      '/ping': [{ status: 500, body: { error: { code: 'internal_error', reason: 'boom' } } }],
      '/batch_get': [{ status: 400, body: { error: { code: 'batch_too_large' } } }],
    }),
  );
  const retries: RetryEvent[] = [];
  const c = new Client(srv.url, { retry: FAST_RETRY, onRetry: (e) => retries.push(e) });
  try {
    assert.deepEqual(await c.get('T', 'k'), { n: 1 });
    assert.deepEqual(retries.map((r) => [r.op, r.attempt, r.error.code]), [['get', 1, 'wal_unavailable'], ['get', 2, 'unparseable_error']]);
    for (const r of retries) assert.ok(r.delayMs >= 0 && r.delayMs < FAST_RETRY.maxDelayMs);
    const e = await rejects(c.ping());
    assert.equal(e.code, 'internal_error');
    assert.equal(e.reason, 'boom');
    assert.equal(srv.requests.filter((r) => r.url === '/ping').length, FAST_RETRY.maxAttempts);
    const b = await rejects(c.batchGet([{ table: 'T', key: 'k' }]));
    assert.equal(b.code, 'batch_too_large');
    assert.equal(srv.requests.filter((r) => r.url === '/batch_get').length, 1);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('push retries only with a dedupe_key (learned or opted in)', async () => {
  let pushes = 0;
  const srv = await startFakeHttp((req) => {
    if (req.url === '/register') return { body: REGISTER_OK };
    if (req.url === '/registry') return { body: { registry_version: 2, nodes: [Click.toNode(), { ...Click.toNode(), name: 'Fed', dedupe_key: 'user', dedupe_window: '1m' }] } };
    pushes++;
    // Every other push fails: fail, ok, fail, ok, ...
    return pushes % 2 === 1 ? { status: 503, body: { error: { code: 'wal_unavailable' } } } : { body: OK_ACK };
  });
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    // Unknown event, no opt-in: not retried.
    assert.equal((await rejects(c.push('Click', { user: 'u' }))).code, 'wal_unavailable');
    assert.equal(pushes, 1);
    pushes = 0;
    // Opt-in.
    assert.deepEqual(await c.push('Click', { user: 'u' }, { retry: true }), OK_ACK);
    assert.equal(pushes, 2);
    pushes = 0;
    // Learned from register through this client.
    await c.register([Txn, Click]);
    assert.equal(c.retriesPushesOf('Txn'), true);
    assert.equal(c.retriesPushesOf('Click'), false);
    assert.deepEqual(await c.push(Txn, { txn_id: 'a', card_id: 'c', amount: 1 }), OK_ACK);
    assert.equal(pushes, 2);
    pushes = 0;
    assert.equal((await rejects(c.push(Click, { user: 'u' }))).code, 'wal_unavailable');
    assert.equal(pushes, 1);
    pushes = 0;
    // Opt-out wins over a dedupe key.
    assert.equal((await rejects(c.push(Txn, { txn_id: 'b', card_id: 'c', amount: 1 }, { retry: false }))).code, 'wal_unavailable');
    assert.equal(pushes, 1);
    pushes = 0;
    // Learned from registry().
    await c.registry();
    assert.equal(c.retriesPushesOf('Fed'), true);
    assert.equal(c.retriesPushesOf('Txn'), false, 'registry() is the whole truth');
    assert.deepEqual(await c.push('Fed', { user: 'u' }), OK_ACK);
    assert.equal(pushes, 2);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('dry run does not teach dedupe; register and reset retry on 5xx', async () => {
  let registers = 0;
  let resets = 0;
  const srv = await startFakeHttp((req) => {
    if (req.url === '/register') {
      registers++;
      if (registers === 1) return { status: 500, body: { error: { code: 'internal_error' } } };
      const dry = (req.json as { dry_run?: boolean }).dry_run === true;
      return { body: dry ? { status: 'ok', dry_run: true, would_apply: true, registry_version: 0, diff: { additive: [], destructive: [] } } : REGISTER_OK };
    }
    resets++;
    return resets === 1 ? { status: 503, body: { error: { code: 'wal_unavailable' } } } : { body: { status: 'ok', reset: true, registry_version: 3 } };
  });
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    const dry = await c.register(Txn, { dryRun: true });
    assert.equal(dry.dry_run, true);
    assert.equal(registers, 2);
    assert.deepEqual(srv.requests[1].json, { nodes: [Txn.toNode()], dry_run: true });
    assert.equal(c.retriesPushesOf('Txn'), false);
    assert.equal((await c.reset()).reset, true);
    assert.equal(resets, 2);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('timeouts: ETIMEDOUT, retried for reads, not for plain pushes', async () => {
  let gets = 0;
  const srv = await startFakeHttp((req) => {
    if (req.url === '/get') {
      gets++;
      return gets < 3 ? { hang: true } : { body: { n: 9 } };
    }
    return { hang: true };
  });
  const c = new Client(srv.url, { timeoutMs: 100, retry: FAST_RETRY });
  try {
    const t0 = Date.now();
    const e = await rejects(c.push('Click', { user: 'u' }));
    const took = Date.now() - t0;
    assert.equal(e.code, 'ETIMEDOUT');
    assert.equal(e.status, 0);
    assert.ok(took >= 90 && took < 2000, `timeout took ${took} ms`);
    assert.equal(srv.requests.filter((r) => r.url === '/push').length, 1);
    assert.deepEqual(await c.get('T', 'k'), { n: 9 });
    assert.equal(gets, 3);
    const p = await rejects(c.ping({ timeoutMs: 50 }));
    assert.equal(p.code, 'ETIMEDOUT');
    assert.equal(srv.requests.filter((r) => r.url === '/ping').length, FAST_RETRY.maxAttempts);
  } finally {
    await c.close();
    await srv.close();
  }
});

test('lost connections: reads retry, plain pushes do not; refused connections', async () => {
  let gets = 0;
  const srv = await startFakeHttp((req) => {
    if (req.url === '/get') {
      gets++;
      return gets === 1 ? { reset: true } : { body: { n: 2 } };
    }
    return { reset: true };
  });
  const c = new Client(srv.url, { retry: FAST_RETRY });
  try {
    assert.deepEqual(await c.get('T', 'k'), { n: 2 });
    assert.equal(gets, 2);
    const e = await rejects(c.push('Click', { user: 'u' }));
    assert.equal(e.code, 'ECONNRESET');
    assert.ok(e.isConnectionError);
    assert.equal(srv.requests.filter((r) => r.url === '/push').length, 1);
  } finally {
    await c.close();
    await srv.close();
  }
  const port = await closedPort();
  const retries: RetryEvent[] = [];
  const refused = new Client(`http://127.0.0.1:${port}`, { retry: { ...FAST_RETRY, maxAttempts: 3 }, onRetry: (r) => retries.push(r) });
  try {
    assert.equal((await rejects(refused.ping())).code, 'ECONNREFUSED');
    assert.equal(retries.length, 2);
    retries.length = 0;
    assert.equal((await rejects(refused.register(Txn))).code, 'ECONNREFUSED');
    assert.equal(retries.length, 0, 'register is not re-sent on a lost connection');
  } finally {
    await refused.close();
  }
});

test('urls: base path, bad schemes, https module selection', async () => {
  const srv = await startFakeHttp(() => ({ body: { pong: true, registry_version: 1 } }));
  const c = new Client(`${srv.url}/api/`);
  try {
    await c.ping();
    assert.equal(srv.requests[0].url, '/api/ping');
  } finally {
    await c.close();
    await srv.close();
  }
  assert.throws(() => new Client('ftp://x'), TypeError);
  assert.throws(() => new Client('not a url'), TypeError);
  const s = new Client('https://127.0.0.1:1');
  await s.close();
  // Expressions in filters travel verbatim.
  assert.equal(Txn.filter(col('amount').gt(1)).ops[0].op, 'filter');
});
