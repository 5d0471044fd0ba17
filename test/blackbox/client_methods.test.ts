/**
 * The client library against the real server (a child process on port 0), over
 * HTTP and over framed TCP: every method, the values it converts, and every
 * error path a caller can meet (server codes, client-side codes, connection
 * refused). Retry timing and timeouts are covered against fault-injecting fake
 * servers in test/unit/client.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { CLI, startServer } from '../harness/server';
import type { TestServer } from '../harness/server';
import { Agg, Client, StreamfeatError, TableClass, agg, col, event, int, optional, ref, table } from '../../src/client';

const SKIP = existsSync(CLI) ? false : `server not built (${CLI} missing)`;

let srv: TestServer | null = null;
let prod: TestServer | null = null;

before(async () => {
  if (SKIP !== false) return;
  [srv, prod] = await Promise.all([startServer({ memoryOnly: true, testMode: true }), startServer({ memoryOnly: true, testMode: false })]);
});

after(async () => {
  await Promise.all([srv?.stop(), prod?.stop()]);
});

function urls(s: TestServer): { http: string; tcp: string } {
  return { http: s.base, tcp: `tcp://127.0.0.1:${s.tcpPort}` };
}

async function rejects(p: Promise<unknown>, code: string, status?: number): Promise<StreamfeatError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof StreamfeatError, `expected StreamfeatError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (status !== undefined) assert.equal(e.status, status, `${code} status`);
    return e;
  }
  assert.fail(`expected ${code}`);
}

function throwsCode(f: () => unknown, code: string): void {
  assert.throws(f, (e: unknown) => e instanceof StreamfeatError && e.code === code);
}

const Txn = event(
  'Txn',
  {
    txn_id: String,
    card_id: String,
    amount: Number,
    country: optional(String),
    shop: int({ optional: true }),
    at: optional(Date),
    blob: optional(Buffer),
  },
  { dedupe_key: 'txn_id', dedupe_window: '1h' },
);
const Click = event('Click', { user: String, page: String });
const BigTxn = Txn.filter(col('amount').gt(100)).select('txn_id', 'card_id', 'amount').as('BigTxn');
const CardStats = table('CardStats', {
  from: Txn,
  key: 'card_id',
  features: {
    n_1h: agg.count({ window: '1h' }),
    spend_1h: agg.sum('amount', { window: '1h' }),
    max_1h: agg.max('amount', { window: '1h' }),
    countries: agg.nUnique('country', { window: '1d' }),
    us_ratio: agg.ratio(col('country').eq('US')),
    last_at: agg.last('at'),
    recent: agg.lastN('amount', 3),
  },
});
const BigStats = table('BigStats', { from: BigTxn, key: 'card_id', features: { big_n: agg.count() } });
const PairStats = table('PairStats', { from: Txn.filter(col('country').isNotNull()), key: ['card_id', 'country'], features: { pair_n: agg.count() } });
const ShopStats = table('ShopStats', { from: Txn, key: 'shop', features: { shop_n: agg.count() } });
const ClickStats = table('ClickStats', { from: Click, key: 'user', features: { pages: agg.topK('page', { k: 2 }) } });
const ALL = [CardStats, BigStats, PairStats, ShopStats, ClickStats];
const NAMES = ['Txn', 'CardStats', 'BigTxn', 'BigStats', 'PairStats', 'ShopStats', 'Click', 'ClickStats'];

for (const transport of ['http', 'tcp'] as const) {
  test(`${transport}: ping, reset, register (dry run, apply, re-apply), registry`, { skip: SKIP }, async () => {
    const u = urls(srv!);
    const c = new Client(u[transport], { httpUrl: u.http });
    try {
      const pong = await c.ping();
      assert.equal(pong.pong, true);
      const r0 = await c.reset();
      assert.deepEqual([r0.status, r0.reset], ['ok', true]);
      assert.ok(r0.registry_version >= pong.registry_version, 'reset never moves the version back');
      const v0 = r0.registry_version;

      const dry = await c.register(ALL, { dryRun: true });
      assert.equal(dry.dry_run, true);
      assert.ok(dry.dry_run === true && dry.would_apply);
      assert.equal(dry.registry_version, v0, 'a dry run changes nothing');
      assert.deepEqual(dry.diff.additive.map((d) => (d as { name: string }).name).sort(), [...NAMES].sort());
      assert.equal(c.retriesPushesOf('Txn'), false, 'a dry run teaches nothing');
      assert.equal((await c.ping()).registry_version, v0);

      const applied = await c.register(ALL);
      assert.ok(applied.dry_run === undefined);
      assert.equal(applied.status, 'ok');
      assert.equal(applied.registry_version, v0 + 1);
      assert.deepEqual([...applied.added].sort(), [...NAMES].sort());
      assert.equal(c.registryVersion, v0 + 1);
      assert.equal(c.retriesPushesOf('Txn'), true);
      assert.equal(c.retriesPushesOf('Click'), false);

      const again = await c.register(ALL);
      assert.ok(again.dry_run === undefined);
      assert.deepEqual(again.added, []);
      assert.deepEqual([...again.unchanged].sort(), [...NAMES].sort());

      const reg = await c.registry();
      assert.equal(reg.registry_version, c.registryVersion);
      const byName = new Map(reg.nodes.map((n) => [(n as { name: string }).name, n]));
      assert.deepEqual([...byName.keys()].sort(), [...NAMES].sort());
      assert.deepEqual(byName.get('Txn'), Txn.toNode(), 'the registry returns nodes as registered');
      assert.deepEqual(byName.get('CardStats'), CardStats.toNode());
      assert.deepEqual(byName.get('BigTxn'), BigTxn.toNode());

      // A second client learns which events dedupe from registry() alone.
      const fresh = new Client(u[transport], { httpUrl: u.http });
      try {
        assert.equal(fresh.retriesPushesOf('Txn'), false);
        await fresh.registry();
        assert.equal(fresh.retriesPushesOf('Txn'), true);
      } finally {
        await fresh.close();
      }
    } finally {
      await c.close();
    }
  });

  test(`${transport}: push, dedupe replay, derived events, native values, get, batchGet`, { skip: SKIP }, async () => {
    const u = urls(srv!);
    const c = new Client(u[transport], { httpUrl: u.http });
    try {
      await c.reset();
      await c.register(ALL);
      const at = new Date(1_700_000_000_000);
      const pushes = [
        { txn_id: 't1', card_id: 'c1', amount: 50, country: 'US', shop: 7n, at },
        { txn_id: 't2', card_id: 'c1', amount: 150, country: 'FR', shop: 7, blob: Buffer.from('raw bytes') },
        { txn_id: 't3', card_id: 'c1', amount: 250.5, country: 'US' },
        { txn_id: 't4', card_id: 'c2', amount: 10 },
      ];
      let lastLsn = -1;
      for (const p of pushes) {
        const ack = await c.push(Txn, p);
        assert.equal(ack.idempotent_replay, false);
        assert.ok(ack.ack_lsn > lastLsn);
        lastLsn = ack.ack_lsn;
      }
      const replay = await c.push('Txn', { txn_id: 't3', card_id: 'c1', amount: 9999, country: 'US' });
      assert.equal(replay.idempotent_replay, true);
      assert.equal(replay.ack_lsn, lastLsn - 1, 'a replay returns the original ack');
      // A derived event can be pushed to by name.
      assert.equal((await c.push(BigTxn, { txn_id: 't5', card_id: 'c3', amount: 500 })).idempotent_replay, false);
      await c.push(Click, { user: 'u1', page: 'home' });
      await c.push(Click, { user: 'u1', page: 'home' });
      await c.push(Click, { user: 'u1', page: 'cart' });

      const row = await c.get(CardStats, 'c1');
      assert.equal(row.n_1h, 3);
      assert.equal(row.spend_1h, 450.5);
      assert.equal(row.max_1h, 250.5);
      assert.equal(row.countries, 2);
      assert.ok(Math.abs((row.us_ratio as number) - 2 / 3) < 1e-9);
      assert.equal(row.last_at, at.getTime(), 'a Date travels as epoch ms');
      assert.deepEqual(row.recent, [50, 150, 250.5]);
      assert.deepEqual(await c.get('CardStats', 'c1', ['n_1h', 'max_1h']), { n_1h: 3, max_1h: 250.5 });
      assert.deepEqual(await c.get(CardStats, 'never-seen'), {}, 'a cold key is {}');
      assert.deepEqual(await c.get(BigStats, 'c1'), { big_n: 2 });
      assert.deepEqual(await c.get(BigStats, 'c3'), { big_n: 1 });
      assert.deepEqual(await c.get(PairStats, ['c1', 'US']), { pair_n: 2 });
      assert.deepEqual(await c.get(ShopStats, 7n), { shop_n: 2 }, 'a BigInt key travels as a number');
      assert.deepEqual(await c.get(ClickStats, 'u1'), { pages: [{ value: 'home', count: 2 }, { value: 'cart', count: 1 }] });

      const results = await c.batchGet([
        { table: CardStats, key: 'c2', features: ['n_1h'] },
        { table: 'NoSuchTable', key: 'c1' },
        { table: PairStats, key: 'c1' },
        { table: CardStats, key: 'c1', features: ['nope'] },
        { table: CardStats, key: 'cold' },
        { table: PairStats, key: ['c1', 'FR'] },
      ]);
      assert.equal(results.length, 6);
      assert.deepEqual(results[0], { n_1h: 1 });
      const errs = [results[1], results[2], results[3]].map((r) => {
        assert.ok(r instanceof StreamfeatError);
        return [r.code, r.status];
      });
      assert.deepEqual(errs, [['unknown_table', 404], ['key_shape_mismatch', 400], ['feature_not_found', 400]]);
      assert.deepEqual(results[4], {});
      assert.deepEqual(results[5], { pair_n: 1 });
    } finally {
      await c.close();
    }
  });

  test(`${transport}: server error paths surface as StreamfeatError`, { skip: SKIP }, async () => {
    const u = urls(srv!);
    const c = new Client(u[transport], { httpUrl: u.http, retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2 } });
    try {
      await c.reset();
      await c.register(ALL);
      // Push.
      await rejects(c.push('Ghost', { a: 1 }), 'event_not_found', 404);
      // @ts-expect-error -- required fields missing: does not compile; sent anyway, the server refuses it too
      const missing = await rejects(c.push(Txn, { txn_id: 'x' }), 'invalid_event', 400);
      assert.equal(missing.path, 'fields.card_id');
      // @ts-expect-error -- amount is a number: does not compile; sent anyway, the server refuses it too
      await rejects(c.push(Txn, { txn_id: 'x', card_id: 'c', amount: 'ten' }), 'invalid_event', 400);
      // @ts-expect-error -- no field `extra`: does not compile; sent anyway, the server refuses it too
      await rejects(c.push(Txn, { txn_id: 'x', card_id: 'c', amount: 1, extra: 1 }), 'unknown_field_v0', 400);
      // @ts-expect-error -- card_id is required (not null): does not compile; sent anyway, the server refuses it too
      await rejects(c.push(Txn, { txn_id: 'x', card_id: null, amount: 1 }), 'missing_field', 400);
      await rejects(c.push(Txn, { txn_id: 'x', card_id: 'c', amount: 1, blob: 'not base64 %%' }), 'schema_mismatch', 400);
      // @ts-expect-error -- no field `event_time`: does not compile; sent anyway, the server refuses it too
      await rejects(c.push(Txn, { txn_id: 'x', card_id: 'c', amount: 1, event_time: 5 }), 'unknown_field_event_time_v0', 400);
      // A BigInt beyond 2^53 is sent as its digits; the server refuses it rather than the client rounding it.
      await rejects(c.push(Txn, { txn_id: 'x', card_id: 'c', amount: 1, shop: 2n ** 62n }), 'invalid_event', 400);
      // Get.
      const unknown = await rejects(c.get('NoSuchTable', 'k'), 'unknown_table', 404);
      assert.equal(unknown.path, 'table');
      // @ts-expect-error -- a composite key is a tuple: does not compile; sent anyway, the server refuses it too
      await rejects(c.get(PairStats, 'c1'), 'key_shape_mismatch', 400);
      // @ts-expect-error -- the key has two parts: does not compile; sent anyway, the server refuses it too
      await rejects(c.get(PairStats, ['c1', 'US', 'extra']), 'key_parse_failure', 400);
      // @ts-expect-error -- no feature `nope`: does not compile; sent anyway, the server refuses it too
      await rejects(c.get(CardStats, 'c1', ['nope']), 'feature_not_found', 400);
      // @ts-expect-error -- pair_n is another table's: does not compile; sent anyway, the server refuses it too
      await rejects(c.get(CardStats, 'c1', ['pair_n']), 'feature_not_in_table', 400);
      await rejects(c.batchGet(Array.from({ length: 10_001 }, () => ({ table: 'CardStats', key: 'c' }))), 'batch_too_large', 400);
      // Register validation.
      const v = c.registryVersion;
      const t = (features: Record<string, Agg<unknown, 'amount' | 'country'>>): ReturnType<typeof table> =>
        table('Bad', { from: Txn, key: 'card_id', features });
      await rejects(c.register(t({ a: agg.op('no_such_op', 'amount') })), 'unknown_op', 400);
      await rejects(c.register(t({ a: agg.sum('amount') })), 'aggregation_invalid_window', 400);
      await rejects(c.register(t({ a: agg.bloomMember('country', { window: '1h' }) })), 'window_not_supported', 400);
      await rejects(c.register(t({ a: agg.quantile('amount', 2) })), 'invalid_percentile_q', 400);
      await rejects(c.register(t({ a: agg.topK('country', { k: 0 }) })), 'invalid_top_k_k', 400);
      await rejects(c.register(t({ a: agg.bloomMember('country', { fpr: 1.5 }) })), 'invalid_bloom_fpr', 400);
      await rejects(c.register(t({ a: agg.ewma('amount', 'forever') })), 'aggregation_invalid_half_life', 400);
      await rejects(c.register(t({ a: agg.burstCount('0s') })), 'aggregation_invalid_sub_window', 400);
      await rejects(c.register(t({ a: agg.op('first_n', 'amount') })), 'unbounded_op_in_lifetime_mode', 400);
      await rejects(c.register(Txn.filter('amount >').as('Bad')), 'invalid_expression', 400);
      await rejects(c.register(Txn.filter(col('nope').gt(1)).as('Bad')), 'unknown_field_reference', 400);
      await rejects(c.register(Txn.filter(col('amount').and(col('card_id'))).as('Bad')), 'schema_mismatch', 400);
      await rejects(c.register(Txn.withColumns({ d: 'cast(amount, date)' }).as('Bad')), 'invalid_cast_target', 400);
      await rejects(c.register(event('Bad', { a: 'i32' })), 'unknown_field_type', 400);
      await rejects(c.register(event('Bad', { event_time: Number })), 'event_time_not_supported_in_v0', 400);
      await rejects(c.register(table('Bad', { from: ref('Nope'), key: 'k', features: { n: agg.count() } })), 'missing_upstream', 400);
      await rejects(c.register(table('Bad', { from: ref('CardStats'), key: 'card_id', features: { n: agg.count() } })), 'aggregation_on_table_not_supported', 400);
      // @ts-expect-error -- a key the upstream lacks does not compile; sent anyway, the server refuses it too
      await rejects(c.register(table('Bad', { from: Txn, key: 'nope', features: { n: agg.count() } })), 'table_key_invalid', 400);
      const dup = await rejects(c.register([event('Dup', { a: String }), event('Dup', { b: String })]), 'duplicate_name', 400);
      assert.equal(dup.path, 'nodes[1].name');
      await rejects(c.register({ kind: 'upsert', name: 'Bad' }), 'unsupported_node_kind', 400);
      // Validators.
      await c.register(event('Checked', { a: Number }, { validators: [col('a').gt(0)] }));
      await rejects(c.push('Checked', { a: -1 }), 'validation_failed', 400);
      const afterBad = (await c.ping()).registry_version;
      assert.equal(afterBad, (v ?? 0) + 1, 'failed registrations changed nothing (one good one did)');
      // Destructive change: 409 with the diff, dry run says would_apply false, force applies.
      const changed = table('CardStats', { from: Txn, key: 'card_id', features: { ...CardStats.features, n_1h: agg.count({ window: '2h' }) } });
      const forced = await rejects(c.register(changed), 'force_required', 409);
      assert.equal(forced.registryVersion, afterBad);
      assert.deepEqual(forced.diff?.destructive, [{ kind: 'window_change', agg: 'CardStats.n_1h', from: '1h', to: '2h' }]);
      assert.ok(typeof forced.reason === 'string' && forced.reason.length > 0);
      const dry = await c.register(changed, { dryRun: true });
      assert.ok(dry.dry_run === true && dry.would_apply === false);
      assert.equal(dry.diff.destructive.length, 1);
      const applied = await c.register(changed, { force: true });
      assert.ok(applied.dry_run === undefined);
      assert.deepEqual(applied.changed, ['CardStats']);
      assert.equal(applied.registry_version, afterBad + 1);
    } finally {
      await c.close();
    }
  });

  test(`${transport}: client-side codes never reach the server; reset refused outside test mode; refused connections`, { skip: SKIP }, async () => {
    const u = urls(srv!);
    const c = new Client(u[transport], { httpUrl: u.http });
    try {
      const before = (await c.ping()).registry_version;
      await rejects(c.register(Txn.filter(col('amount').gt(1))), 'invalid_descriptor');
      await rejects(c.register([Txn, ref('Txn')]), 'invalid_descriptor');
      throwsCode(() => Txn.join(Click), 'joins_not_supported');
      throwsCode(() => CardStats.join(ClickStats), 'joins_not_supported');
      throwsCode(() => Txn.union(Click), 'unions_not_supported_in_v0');
      class Form extends TableClass {}
      throwsCode(() => new Form(), 'svc_table_class_form_not_supported');
      await rejects(c.register([Form as never]), 'svc_table_class_form_not_supported');
      assert.equal((await c.ping()).registry_version, before, 'nothing was sent');
    } finally {
      await c.close();
    }
    const p = urls(prod!);
    const pc = new Client(p[transport], { httpUrl: p.http });
    try {
      const e = await rejects(pc.reset(), 'reset_disabled_in_production', 403);
      assert.ok(typeof e.reason === 'string' && e.reason.length > 0, 'the reason says how to enable test mode');
      assert.equal((await pc.ping()).pong, true);
    } finally {
      await pc.close();
    }
  });
}

test('registry over tcp:// without an HTTP address is op_not_implemented', { skip: SKIP }, async () => {
  const c = new Client(urls(srv!).tcp);
  try {
    await rejects(c.registry(), 'op_not_implemented');
  } finally {
    await c.close();
  }
});

test('a stopped server: ECONNREFUSED over both transports, after the retries', { skip: SKIP }, async () => {
  const s = await startServer({ memoryOnly: true, testMode: true });
  const u = urls(s);
  const clients = [new Client(u.http, { retry: { maxAttempts: 2, baseDelayMs: 1 } }), new Client(u.tcp, { retry: { maxAttempts: 2, baseDelayMs: 1 } })];
  try {
    for (const c of clients) assert.equal((await c.ping()).pong, true);
    await s.stop();
    for (const c of clients) {
      const e = await rejects(c.ping(), 'ECONNREFUSED', 0);
      assert.ok(e.isConnectionError);
    }
  } finally {
    for (const c of clients) await c.close();
  }
});
