/**
 * Live registry evolution over real sockets (spec 4.2, 7.4, 2.8; docs/registry.md):
 * the 409 force_required body, dry run, force, GET /registry, and which
 * aggregations keep their state across each kind of change, with 1 and 4 shards,
 * across a crash (WAL replay under each record's version) and a clean restart
 * (snapshot).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_ERROR_RESPONSE, OP_REGISTER } from '../../src/protocol/frame';

type Obj = Record<string, any>;

const TXN = { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', card: 'str', amount: 'f64', n: 'i64' }, optional_fields: ['n'] } };
const T = {
  kind: 'table', name: 'T', upstreams: ['Txn'], key: ['user'],
  agg: { a: { op: 'count', params: { window: '1h' } }, b: { op: 'sum', params: { field: 'amount', window: '1h' } } },
};
const U = { kind: 'table', name: 'U', upstreams: ['Txn'], key: ['card'], agg: { k: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'amount', window: 'forever' } } } };
const USERS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
const CARDS = ['c0', 'c1', 'c2', 'c3'];

async function reg(srv: TestServer, body: unknown, status = 200): Promise<Obj> {
  const r = await post(srv.base, '/register', body);
  assert.equal(r.status, status, r.text);
  return r.json;
}

async function version(srv: TestServer): Promise<number> {
  return (await post(srv.base, '/ping', {})).json.registry_version;
}

test('force_required 409 over HTTP and TCP: spec 7.4 body, sorted, byte-identical, nothing applied; dry run; force', async () => {
  const srv = await startServer({ shards: 2, memoryOnly: true });
  const tcp = await TcpClient.connect(srv.tcpPort);
  try {
    await reg(srv, { nodes: [TXN, T, U] });
    await post(srv.base, '/push', { event: 'Txn', data: { user: 'alice', card: 'c0', amount: 5 } });
    const v = await version(srv);
    const registryBefore = (await get(srv.base, '/registry')).text;
    const payload = {
      nodes: [
        { ...TXN, schema: { fields: { user: 'str', card: 'str', amount: 'i64', country: 'str' }, optional_fields: ['country'] } },
        { kind: 'event', name: 'Login', schema: { fields: { user: 'str' }, optional_fields: [] } },
        { ...T, key: ['card'], agg: { a: { op: 'count', params: { window: '2h' } }, c: { op: 'max', params: { field: 'amount', window: '1h' } } } },
        { ...U, name: 'U2', renamed_from: 'U', agg: { k: { op: 'count', params: {} }, s: { op: 'mean', params: { field: 'amount', window: '1h' } } } },
      ],
    };
    const r = await post(srv.base, '/register', payload);
    assert.equal(r.status, 409, r.text);
    assert.deepEqual(Object.keys(r.json), ['error', 'registry_version'], 'top level: error and registry_version only');
    assert.equal(r.json.registry_version, v);
    const e = r.json.error;
    assert.equal(e.code, 'force_required');
    assert.equal(typeof e.reason, 'string');
    assert.equal('path' in e, false);
    assert.deepEqual(e.diff, {
      additive: [
        { kind: 'new_agg', table: 'T', agg: 'c', source: 'max' },
        { kind: 'new_descriptor', descriptor_kind: 'event', name: 'Login' },
        { kind: 'new_field', event: 'Txn', field: 'country', type: 'str' },
      ],
      destructive: [
        { kind: 'agg_removal', table: 'T', agg: 'b' },
        { kind: 'key_cols_change', table: 'T', from: ['user'], to: ['card'] },
        { kind: 'op_removal', table: 'U2', agg: 's' },
        { kind: 'rename', from: 'U', to: 'U2' },
        { kind: 'type_change', field: 'Txn.amount', from: 'f64', to: 'i64' },
        { kind: 'type_change', field: 'Txn.n', from: 'i64', to: '<absent>' },
        { kind: 'window_change', agg: 'T.a', from: '1h', to: '2h' },
      ],
    });
    // Byte-identical on repeat and over TCP.
    assert.equal((await post(srv.base, '/register', payload)).text, r.text);
    const t = await tcp.request(OP_REGISTER, payload);
    assert.equal(t.op, OP_ERROR_RESPONSE);
    assert.equal(t.text, r.text);
    // Nothing applied: version, registry and state unchanged.
    assert.equal(await version(srv), v);
    assert.equal((await get(srv.base, '/registry')).text, registryBefore);
    assert.deepEqual((await post(srv.base, '/get', { table: 'T', key: 'alice' })).json, { a: 1, b: 5 });
    // Dry run: the same diff, 200, nothing mutated (also over TCP).
    const dry = await reg(srv, { ...payload, dry_run: true });
    assert.deepEqual(dry, { status: 'ok', dry_run: true, would_apply: false, registry_version: v, diff: e.diff });
    const dryTcp = await tcp.request(OP_REGISTER, { ...payload, dry_run: true, force: true });
    assert.equal(dryTcp.op, OP_REGISTER, dryTcp.text);
    assert.deepEqual(dryTcp.json, { ...dry, would_apply: true });
    assert.equal(await version(srv), v);
    assert.equal((await get(srv.base, '/registry')).text, registryBefore);
    assert.deepEqual((await post(srv.base, '/get', { table: 'T', key: 'alice' })).json, { a: 1, b: 5 });
    // Force: applies, version + 1, the same diff in the success body.
    const ok = await reg(srv, { ...payload, force: true });
    assert.equal(ok.registry_version, v + 1);
    assert.deepEqual(ok.diff, e.diff);
    assert.equal(await version(srv), v + 1);
    const after = (await get(srv.base, '/registry')).json;
    assert.equal(after.registry_version, v + 1);
    assert.deepEqual(after.nodes.map((n: Obj) => n.name), ['Txn', 'T', 'U2', 'Login']);
    assert.equal((await post(srv.base, '/get', { table: 'U', key: 'c0' })).json.error.code, 'unknown_table');
    // T was re-keyed: its old rows are gone, U2 (renamed) kept k but s restarted (op change).
    assert.deepEqual((await post(srv.base, '/get', { table: 'T', key: 'alice' })).json, {});
    assert.deepEqual((await post(srv.base, '/get', { table: 'U2', key: 'c0' })).json, { k: 1, s: null });
  } finally {
    tcp.close();
    await srv.stop();
    srv.cleanup();
  }
});

test('GET /registry (data plane and admin): every node as registered, merge semantics, version', async () => {
  const srv = await startServer({ shards: 1, memoryOnly: true, admin: true });
  try {
    const empty = await get(srv.base, '/registry');
    assert.deepEqual(empty.json, { registry_version: 0, nodes: [] });
    await reg(srv, { nodes: [TXN, T] });
    await reg(srv, { nodes: [U] });
    const withDedupe = { ...TXN, dedupe_key: 'card', dedupe_window: '10m', schema: { ...TXN.schema, optional_fields: ['n'] } };
    await reg(srv, { nodes: [withDedupe] });
    const r = await get(srv.base, '/registry');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { registry_version: 3, nodes: [withDedupe, T, U] });
    const admin = await get(srv.adminBase!, '/registry');
    assert.equal(admin.text, r.text);
    // A rename: the node keeps renamed_from; downstream nodes follow the new name.
    await reg(srv, { nodes: [{ ...withDedupe, name: 'Payment', renamed_from: 'Txn' }], force: true });
    const renamed = (await get(srv.base, '/registry')).json;
    assert.deepEqual(renamed, {
      registry_version: 4,
      nodes: [{ ...withDedupe, name: 'Payment', renamed_from: 'Txn' }, { ...T, upstreams: ['Payment'] }, { ...U, upstreams: ['Payment'] }],
    });
  } finally {
    await srv.stop();
    srv.cleanup();
  }
});

/**
 * Reference for the state test: per table and feature, the first push it reflects;
 * the expected value is recomputed from the list of acked pushes.
 */
interface Push { user: string; card: string; amount: number; country?: string }
interface FeatRef { kind: 'count' | 'sum' | 'max_amount'; from: number; where?: (p: Push) => boolean }
interface TableRef { key: 'user' | 'card'; from: number; feats: Map<string, FeatRef> }

function expectedRow(pushes: Push[], t: TableRef, key: string): Obj {
  const mine = pushes.map((p, i) => ({ p, i })).filter(({ p, i }) => i >= t.from && p[t.key] === key);
  if (mine.length === 0) return {};
  const out: Obj = {};
  for (const [name, f] of t.feats) {
    const seen = mine.filter(({ p, i }) => i >= f.from && (f.where === undefined || f.where(p)));
    if (f.kind === 'count') out[name] = seen.length;
    else if (f.kind === 'sum') out[name] = seen.length === 0 ? null : seen.reduce((a, { p }) => a + p.amount, 0);
    else out[name] = seen.length === 0 ? null : Math.max(...seen.map(({ p }) => p.amount));
  }
  return out;
}

/** Every key of every table against the reference; `skip` names features left out of the comparison. */
async function checkAll(srv: TestServer, pushes: Push[], tables: Map<string, TableRef>, label: string, skip: string[] = []): Promise<void> {
  const requests: Obj[] = [];
  const want: Obj[] = [];
  for (const [name, t] of tables) {
    for (const key of t.key === 'user' ? USERS : CARDS) {
      requests.push(skip.length === 0 ? { table: name, key } : { table: name, key, features: [...t.feats.keys()] });
      want.push(expectedRow(pushes, t, key));
    }
  }
  const r = await post(srv.base, '/batch_get', { requests });
  assert.equal(r.status, 200, r.text);
  for (let i = 0; i < requests.length; i++) {
    assert.deepEqual(r.json.results[i], want[i], `${label}: ${requests[i].table}/${requests[i].key}`);
  }
}

for (const shards of [1, 4]) {
  test(`state kept vs reset per aggregation across every kind of change, ${shards} shard(s), crash and restart`, async () => {
    let srv = await startServer({ shards, args: ['--snapshot-interval', '0'] });
    const dataDir = srv.dataDir;
    const pushes: Push[] = [];
    let event = 'Txn';
    let seq = 0;
    // Pushes of one batch run concurrently; `pushes` is kept in ack_lsn order, the
    // order in which every shard applies them (the order `last` depends on).
    const push = async (n: number, withCountry = false): Promise<void> => {
      const batch: Array<Promise<{ p: Push; lsn: number }>> = [];
      for (let i = 0; i < n; i++) {
        const p: Push = { user: USERS[seq % USERS.length], card: CARDS[(seq * 7) % CARDS.length], amount: (seq * 13) % 50 };
        if (withCountry && seq % 3 !== 0) p.country = seq % 2 === 0 ? 'US' : 'FR';
        seq++;
        batch.push(post(srv.base, '/push', { event, data: p }).then((r) => {
          assert.equal(r.status, 200, r.text);
          return { p, lsn: r.json.ack_lsn as number };
        }));
      }
      for (const { p } of (await Promise.all(batch)).sort((x, y) => x.lsn - y.lsn)) pushes.push(p);
    };
    const tables = new Map<string, TableRef>();
    try {
      await reg(srv, { nodes: [TXN, T, U] });
      tables.set('T', { key: 'user', from: 0, feats: new Map([['a', { kind: 'count', from: 0 }], ['b', { kind: 'sum', from: 0 }]]) });
      tables.set('U', { key: 'card', from: 0, feats: new Map([['k', { kind: 'count', from: 0 }], ['s', { kind: 'sum', from: 0 }]]) });
      await push(30);
      await checkAll(srv, pushes, tables, 'initial');

      // window_change on T.b with force: a keeps its count, b restarts; U untouched.
      let tNode: Obj = { ...T, agg: { ...T.agg, b: { op: 'sum', params: { field: 'amount', window: '2h' } } } };
      await reg(srv, { nodes: [tNode] }, 409);
      await reg(srv, { nodes: [tNode], force: true });
      tables.get('T')!.feats.get('b')!.from = pushes.length;
      await checkAll(srv, pushes, tables, 'after window change');
      await push(12);
      await checkAll(srv, pushes, tables, 'pushes after window change');

      // new_agg (no force): a and b keep, c starts empty and only sees later events.
      tNode = { ...tNode, agg: { ...tNode.agg, c: { op: 'max', params: { field: 'amount', window: '1h' } } } };
      await reg(srv, { nodes: [tNode] });
      tables.get('T')!.feats.set('c', { kind: 'max_amount', from: pushes.length });
      await checkAll(srv, pushes, tables, 'after new agg');
      await push(12);

      // new_field (no force): nothing restarts; pushes without it keep working. A new
      // feature reading it sees the field missing (null) on events that lack it.
      const txn2 = { ...TXN, schema: { fields: { ...TXN.schema.fields, country: 'str' }, optional_fields: ['n', 'country'] } };
      const uNode = { ...U, agg: { ...U.agg, us: { op: 'count', params: { window: '1h', where: "country == 'US'" } }, lc: { op: 'last', params: { field: 'country' } } } };
      await reg(srv, { nodes: [txn2, uNode] });
      tables.get('U')!.feats.set('us', { kind: 'count', from: pushes.length, where: (p) => p.country === 'US' });
      await push(6);
      await push(12, true);
      await checkAll(srv, pushes, tables, 'after new field', ['lc']);
      const lastCountry = new Map<string, string | null>();
      // `last` keeps the last non-null value; an entity whose events all lacked the field reads null.
      for (const p of pushes.slice(pushes.length - 18)) {
        if (p.country !== undefined) lastCountry.set(p.card, p.country);
        else if (!lastCountry.has(p.card)) lastCountry.set(p.card, null);
      }
      for (const card of CARDS) {
        const g = await post(srv.base, '/get', { table: 'U', key: card, features: ['lc'] });
        if (lastCountry.has(card)) assert.deepEqual(g.json, { lc: lastCountry.get(card) }, `U/${card} lc`);
      }
      tables.get('U')!.feats.delete('lc');
      const uNoLc = { ...uNode, agg: { k: uNode.agg.k, s: uNode.agg.s, us: uNode.agg.us } };
      await reg(srv, { nodes: [uNoLc] }, 409);
      await reg(srv, { nodes: [uNoLc], force: true });
      await checkAll(srv, pushes, tables, 'after agg removal');

      // rename of the table and of its source event (force): every state kept, under the new names.
      await reg(srv, { nodes: [{ ...tNode, name: 'T2', renamed_from: 'T' }] }, 409);
      await reg(srv, { nodes: [{ ...tNode, name: 'T2', renamed_from: 'T' }], force: true });
      tables.set('T2', tables.get('T')!);
      tables.delete('T');
      assert.equal((await post(srv.base, '/get', { table: 'T', key: 'alice' })).json.error.code, 'unknown_table');
      await checkAll(srv, pushes, tables, 'after table rename');
      await reg(srv, { nodes: [{ ...txn2, name: 'Payment', renamed_from: 'Txn' }], force: true });
      assert.equal((await post(srv.base, '/push', { event: 'Txn', data: { user: 'x', card: 'c0', amount: 1 } })).json.error.code, 'event_not_found');
      event = 'Payment';
      await checkAll(srv, pushes, tables, 'after event rename');
      await push(12, true);
      await checkAll(srv, pushes, tables, 'pushes after event rename');

      // type_change of a column read by U.s only (amount f64 -> i64): s restarts, k and us keep;
      // T2 reads amount in b and c: those restart, a keeps.
      const txn3 = { ...txn2, name: 'Payment', renamed_from: 'Txn', schema: { fields: { ...txn2.schema.fields, amount: 'i64' }, optional_fields: ['n', 'country'] } };
      await reg(srv, { nodes: [txn3] }, 409);
      await reg(srv, { nodes: [txn3], force: true });
      for (const [t, f] of [['U', 's'], ['T2', 'b'], ['T2', 'c']]) tables.get(t)!.feats.get(f)!.from = pushes.length;
      await checkAll(srv, pushes, tables, 'after type change');
      await push(12, true);

      // key_cols_change on T2 (force): the whole table restarts; U keeps.
      const t2Card = { ...tNode, name: 'T2', upstreams: ['Payment'], key: ['card'] };
      await reg(srv, { nodes: [t2Card] }, 409);
      await reg(srv, { nodes: [t2Card], force: true });
      const t2 = tables.get('T2')!;
      t2.key = 'card';
      t2.from = pushes.length;
      for (const f of t2.feats.values()) f.from = pushes.length;
      await checkAll(srv, pushes, tables, 'after key change');
      await push(12, true);
      await checkAll(srv, pushes, tables, 'before crash');
      const v = await version(srv);
      const registry = (await get(srv.base, '/registry')).text;

      // Crash (no snapshot was ever taken): the WAL replays every event under the
      // version it was validated with, renames included.
      await srv.kill9();
      srv = await startServer({ shards, dataDir });
      assert.equal(await version(srv), v);
      assert.equal((await get(srv.base, '/registry')).text, registry);
      await checkAll(srv, pushes, tables, 'after crash recovery');
      await push(6, true);
      // Clean restart: snapshot at shutdown, restored at boot.
      await srv.stop();
      srv = await startServer({ shards, dataDir });
      assert.equal(await version(srv), v);
      await checkAll(srv, pushes, tables, 'after clean restart');
    } finally {
      await srv.stop();
      srv.cleanup();
      if (srv.dataDir === dataDir) (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
