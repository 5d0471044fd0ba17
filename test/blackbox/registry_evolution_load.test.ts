/**
 * Registry evolution under load (spec 4.2, 2.8, 9.2): several HTTP and TCP
 * connections push continuously while tables are added and forced changes
 * applied, with 2 and 4 shards. Checks:
 *
 *  - no push fails because of a change; per connection, registry_version in acks
 *    never goes backwards;
 *  - a register is visible to every push and get that starts after its response
 *    (ack version >= it; the new table/feature resolves; read-your-write on a
 *    probe key over the other transport);
 *  - no event is applied under a registry it was not validated against: every
 *    aggregation (re)started at version N holds exactly the pushes acked with
 *    registry_version >= N, per key (a push acked with a lower version must not be
 *    in it, one acked with N or more must be);
 *  - the same holds after a crash (WAL replay under each record's version), and
 *    the registry and its version survive it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get, post, startServer, type TestServer } from '../harness/server';
import { TcpClient } from '../harness/tcp';
import { OP_GET, OP_GET_RESPONSE, OP_PUSH, OP_REGISTER } from '../../src/protocol/frame';
import { Prng } from '../unit/sketch/prng';

type Obj = Record<string, any>;

const USERS = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6', 'u7'];
const CARDS = ['c0', 'c1', 'c2', 'c3', 'c4'];

interface Acked { user: string; card: string; amount: number; n: number; v: number }
type FeatKind = 'count' | 'sum_amount' | 'max_amount' | 'sum_n';
interface TableRef { key: 'user' | 'card'; from: number; feats: Map<string, { kind: FeatKind; from: number }> }

function expectedRow(acked: readonly Acked[], t: TableRef, key: string): Obj {
  const mine = acked.filter((a) => a.v >= t.from && a[t.key] === key);
  if (mine.length === 0) return {};
  const out: Obj = {};
  for (const [name, f] of t.feats) {
    const seen = mine.filter((a) => a.v >= f.from);
    if (f.kind === 'count') out[name] = seen.length;
    else if (seen.length === 0) out[name] = null;
    else if (f.kind === 'sum_amount') out[name] = seen.reduce((s, a) => s + a.amount, 0);
    else if (f.kind === 'sum_n') out[name] = seen.reduce((s, a) => s + a.n, 0);
    else out[name] = Math.max(...seen.map((a) => a.amount));
  }
  return out;
}

async function verifyAll(srv: TestServer, acked: readonly Acked[], tables: Map<string, TableRef>, label: string): Promise<void> {
  const requests: Obj[] = [];
  const want: Obj[] = [];
  for (const [name, t] of tables) {
    const keys = t.key === 'user' ? [...USERS, ...new Set(acked.filter((a) => a.user.startsWith('probe')).map((a) => a.user))] : CARDS;
    for (const key of keys) {
      requests.push({ table: name, key });
      want.push(expectedRow(acked, t, key));
    }
  }
  const r = await post(srv.base, '/batch_get', { requests });
  assert.equal(r.status, 200, r.text);
  for (let i = 0; i < requests.length; i++) {
    assert.deepEqual(r.json.results[i], want[i], `${label}: ${requests[i].table}/${requests[i].key}`);
  }
}

class Load {
  stop = false;
  /** Highest registry_version whose register response the test has received. */
  visible = 0;
  readonly acked: Acked[] = [];
  readonly failures: string[] = [];
  pushes = 0;

  constructor(readonly srv: TestServer) {}

  row(rng: Prng): { user: string; card: string; amount: number; n: number } {
    return { user: USERS[rng.int(USERS.length)], card: CARDS[rng.int(CARDS.length)], amount: rng.int(1000), n: rng.int(10) };
  }

  record(worker: string, data: ReturnType<Load['row']>, ack: Obj | null, text: string, minV: number, last: { v: number }): void {
    this.pushes++;
    if (ack === null || typeof ack.registry_version !== 'number') { this.failures.push(`${worker}: push failed: ${text}`); return; }
    const v = ack.registry_version as number;
    if (v < last.v) this.failures.push(`${worker}: registry_version went backwards ${last.v} -> ${v}`);
    if (v < minV) this.failures.push(`${worker}: push sent after the response of version ${minV} was validated under ${v}`);
    last.v = v;
    this.acked.push({ ...data, v });
  }

  async httpWorker(id: number): Promise<void> {
    const rng = new Prng(1000 + id);
    const last = { v: 0 };
    while (!this.stop) {
      const data = this.row(rng);
      const minV = this.visible;
      const r = await post(this.srv.base, '/push', { event: 'Txn', data });
      this.record(`http${id}`, data, r.status === 200 ? r.json : null, r.text, minV, last);
    }
  }

  async tcpWorker(id: number): Promise<void> {
    const rng = new Prng(2000 + id);
    const last = { v: 0 };
    const tcp = await TcpClient.connect(this.srv.tcpPort);
    try {
      while (!this.stop) {
        const data = this.row(rng);
        const minV = this.visible;
        const r = await tcp.request(OP_PUSH, { event: 'Txn', data });
        this.record(`tcp${id}`, data, r.op === OP_PUSH ? r.json : null, r.text, minV, last);
      }
    } finally {
      tcp.close();
    }
  }
}

const TXN_FIELDS = { user: 'str', card: 'str', amount: 'f64', n: 'i64' };
const txn = (fields: Record<string, string>): Obj => ({ kind: 'event', name: 'Txn', schema: { fields, optional_fields: Object.keys(fields).filter((f) => f !== 'user' && f !== 'card' && f !== 'amount') } });
const BASE = { kind: 'table', name: 'Base', upstreams: ['Txn'], key: ['user'], agg: { c: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'amount', window: 'forever' } } } };

for (const shards of [2, 4]) {
  test(`registers and forced changes while HTTP and TCP connections push, ${shards} shards`, async () => {
    let srv = await startServer({ shards, args: ['--snapshot-interval', '0'] });
    const dataDir = srv.dataDir;
    const getTcp = await TcpClient.connect(srv.tcpPort);
    const regTcp = await TcpClient.connect(srv.tcpPort);
    const load = new Load(srv);
    const tables = new Map<string, TableRef>();
    let probes = 0;
    try {
      const first = await post(srv.base, '/register', { nodes: [txn(TXN_FIELDS), BASE] });
      assert.equal(first.status, 200, first.text);
      load.visible = first.json.registry_version;
      tables.set('Base', { key: 'user', from: load.visible, feats: new Map([['c', { kind: 'count', from: load.visible }], ['s', { kind: 'sum_amount', from: load.visible }]]) });
      const workers = [0, 1, 2, 3, 4].map((i) => load.httpWorker(i)).concat([0, 1, 2, 3, 4].map((i) => load.tcpWorker(i)));
      const pause = (): Promise<void> => new Promise((r) => setTimeout(r, 120));

      /** Registers over HTTP or TCP (alternating); on success checks visibility right after the response. */
      let useTcp = false;
      const register = async (body: Obj, expect: 'ok' | 'force_required' | 'dry'): Promise<number> => {
        await pause();
        useTcp = !useTcp;
        const r = useTcp ? await regTcp.request(OP_REGISTER, body) : await post(srv.base, '/register', body);
        const json = r.json as Obj;
        if (expect === 'force_required') {
          assert.equal(json.error?.code, 'force_required', r.text);
          assert.equal(json.registry_version, load.visible, 'a refused register leaves the version');
          return load.visible;
        }
        assert.equal(json.status, 'ok', r.text);
        if (expect === 'dry') {
          assert.equal(json.registry_version, load.visible, 'a dry run leaves the version');
          return load.visible;
        }
        assert.ok(json.registry_version > load.visible, `version increments: ${load.visible} -> ${json.registry_version}`);
        load.visible = json.registry_version;
        return load.visible;
      };
      /** A push that starts after the response, then a get over the other transport that must see it. */
      const probe = async (table: string, features: string[]): Promise<void> => {
        const user = `probe${++probes}`;
        const data = { user, card: 'c0', amount: 7, n: 1 };
        const minV = load.visible;
        const p = await post(srv.base, '/push', { event: 'Txn', data });
        assert.equal(p.status, 200, p.text);
        assert.ok(p.json.registry_version >= minV);
        load.acked.push({ ...data, v: p.json.registry_version });
        const g = await getTcp.request(OP_GET, { table, key: user, features });
        assert.equal(g.op, OP_GET_RESPONSE, g.text);
        assert.deepEqual(Object.keys(g.json).sort(), [...features].sort(), `${table} row of ${user} right after the register: ${g.text}`);
        const h = await post(srv.base, '/get', { table, key: user, features });
        assert.equal(h.status, 200, h.text);
        assert.deepEqual(h.json, g.json);
      };

      // 1. New table A keyed by user (additive).
      let a: Obj = { kind: 'table', name: 'A', upstreams: ['Txn'], key: ['user'], agg: { c: { op: 'count', params: {} } } };
      let v = await register({ nodes: [a] }, 'ok');
      tables.set('A', { key: 'user', from: v, feats: new Map([['c', { kind: 'count', from: v }]]) });
      await probe('A', ['c']);
      // 2. New table B keyed by card (additive).
      let b: Obj = { kind: 'table', name: 'B', upstreams: ['Txn'], key: ['card'], agg: { c: { op: 'count', params: {} }, s: { op: 'sum', params: { field: 'amount', window: 'forever' } } } };
      v = await register({ nodes: [b] }, 'ok');
      tables.set('B', { key: 'card', from: v, feats: new Map([['c', { kind: 'count', from: v }], ['s', { kind: 'sum_amount', from: v }]]) });
      // 3. New aggregations in A (additive): A.c keeps counting.
      a = { ...a, agg: { ...a.agg, m: { op: 'max', params: { field: 'amount', window: '1h' } }, ns: { op: 'sum', params: { field: 'n', window: '1h' } } } };
      v = await register({ nodes: [a] }, 'ok');
      tables.get('A')!.feats.set('m', { kind: 'max_amount', from: v });
      tables.get('A')!.feats.set('ns', { kind: 'sum_n', from: v });
      await probe('A', ['c', 'm', 'ns']);
      // 4. Window change on A.m: refused without force, then forced (A.m restarts).
      a = { ...a, agg: { ...a.agg, m: { op: 'max', params: { field: 'amount', window: '2h' } } } };
      await register({ nodes: [a] }, 'force_required');
      await register({ nodes: [a], dry_run: true }, 'dry');
      v = await register({ nodes: [a], force: true }, 'ok');
      tables.get('A')!.feats.get('m')!.from = v;
      // 5. New field on Txn (additive; pushers never send it): nothing restarts.
      const fields2 = { ...TXN_FIELDS, country: 'str' };
      await register({ nodes: [txn(fields2)] }, 'ok');
      // 6. Key change on B (forced): the whole table restarts, keyed by user.
      b = { ...b, key: ['user'] };
      await register({ nodes: [b] }, 'force_required');
      v = await register({ nodes: [b], force: true }, 'ok');
      tables.set('B', { key: 'user', from: v, feats: new Map([['c', { kind: 'count', from: v }], ['s', { kind: 'sum_amount', from: v }]]) });
      await probe('B', ['c', 's']);
      // 7. Type change of n (i64 -> f64, forced; pushers' integers stay valid): only A.ns reads n.
      v = await register({ nodes: [txn({ ...fields2, n: 'f64' })], force: true }, 'ok');
      tables.get('A')!.feats.get('ns')!.from = v;
      // 8. Rename A -> A2 (forced): all of A's state moves along.
      v = await register({ nodes: [{ ...a, name: 'A2', renamed_from: 'A' }], force: true }, 'ok');
      tables.set('A2', tables.get('A')!);
      tables.delete('A');
      await probe('A2', ['c', 'm', 'ns']);
      // 9. Identical re-register: the version still increments; nothing restarts.
      await register({ nodes: [txn({ ...fields2, n: 'f64' }), BASE] }, 'ok');
      // 10. A table added last, then an aggregation removed from B (forced).
      v = await register({ nodes: [{ kind: 'table', name: 'C', upstreams: ['Txn'], key: ['card'], agg: { c: { op: 'count', params: {} } } }] }, 'ok');
      tables.set('C', { key: 'card', from: v, feats: new Map([['c', { kind: 'count', from: v }]]) });
      await register({ nodes: [{ ...b, agg: { c: b.agg.c } }], force: true }, 'ok');
      tables.get('B')!.feats.delete('s');
      await pause();

      load.stop = true;
      await Promise.all(workers);
      assert.deepEqual(load.failures, [], 'no push failed, no version went backwards, no stale validation');
      const perVersion = new Map<number, number>();
      for (const x of load.acked) perVersion.set(x.v, (perVersion.get(x.v) ?? 0) + 1);
      assert.ok(load.pushes > 100, `pushed continuously (${load.pushes} pushes)`);
      assert.ok(perVersion.size >= 6, `pushes were acked under many versions: ${JSON.stringify([...perVersion])}`);
      assert.equal((await post(srv.base, '/get', { table: 'A', key: 'u0' })).json.error.code, 'unknown_table');
      await verifyAll(srv, load.acked, tables, `${shards} shards, live`);
      const version = (await post(srv.base, '/ping', {})).json.registry_version;
      const registry = (await get(srv.base, '/registry')).text;

      // Crash: the WAL holds pushes of every version interleaved with the installs.
      getTcp.close();
      regTcp.close();
      await srv.kill9();
      srv = await startServer({ shards, dataDir });
      assert.equal((await post(srv.base, '/ping', {})).json.registry_version, version);
      assert.equal((await get(srv.base, '/registry')).text, registry);
      await verifyAll(srv, load.acked, tables, `${shards} shards, after crash recovery`);
    } finally {
      load.stop = true;
      getTcp.close();
      regTcp.close();
      await srv.stop();
      (await import('node:fs')).rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
