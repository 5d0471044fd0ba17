/**
 * A client written for the peer server (test/harness/peer_client.ts: its register
 * payload shape with null settings, string keys, TCP `body` pushes and its reply
 * opcodes) runs one full scenario against streamfeat over HTTP and over TCP:
 * register, push, get, batch_get, reset (docs/compatibility.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverForFile } from '../harness/server';
import { PeerError, PeerHttp, PeerTcp, peerEventNode, peerKey, peerTableNode } from '../harness/peer_client';
import { PACKAGE_VERSION } from '../harness/package_version';

const srv = serverForFile({ memoryOnly: true, shards: 2 });

/** What the peer's SDK would send for a small fraud pipeline. */
function peerNodes(): Array<Record<string, unknown>> {
  return [
    peerEventNode('Txn', { txn_id: 'str', user: 'str', card: 'str', amount: 'f64' }, [], { dedupe_key: 'txn_id', dedupe_window_ms: 3_600_000 }),
    // A derived event whose computed column the SDK declares as str (spec 2.1 coercion).
    {
      kind: 'derivation', name: 'Scored', output_kind: 'event', upstreams: ['Txn'],
      ops: [{ op: 'with_columns', exprs: { big: '(amount > 100.0)' } }],
      schema: { fields: { txn_id: 'str', user: 'str', card: 'str', amount: 'f64', big: 'str' }, optional_fields: [] },
      table_primary_key: null,
    },
    peerTableNode('UserSpend', 'Txn', ['user'], {
      cnt: { op: 'count', params: { window: '1h', where: null } },
      total: { op: 'sum', params: { field: 'amount', window: '1h' } },
    }, [{ op: 'filter', expr: '(amount > 0.0)' }]),
    peerTableNode('CardUser', 'Txn', ['card', 'user'], { n: { op: 'count', params: {} } }),
    peerTableNode('BigUsers', 'Scored', ['user'], { bigs: { op: 'count', params: { where: 'big' } } }),
  ];
}

type Transport = {
  ping(): Promise<{ registry_version: number; server_version: string }>;
  register(nodes: Array<Record<string, unknown>>): Promise<Record<string, unknown>>;
  push(event: string, data: Record<string, unknown>): Promise<{ ack_lsn: number; registry_version: number; idempotent_replay: boolean }>;
  get(table: string, key: string, features?: string[]): Promise<Record<string, unknown>>;
  batchGet(requests: Array<Record<string, unknown>>): Promise<Array<Record<string, unknown>>>;
  reset(): Promise<{ registry_version: number; reset: boolean }>;
};

async function scenario(c: Transport, tag: string): Promise<void> {
  await c.reset(); // each transport starts from an empty registry
  const ping = await c.ping();
  assert.equal(ping.server_version, PACKAGE_VERSION);
  const reg = await c.register(peerNodes());
  assert.equal(reg.status, 'ok');
  assert.deepEqual(reg.added, ['Txn', 'Scored', 'UserSpend', 'CardUser', 'BigUsers']);
  assert.deepEqual(reg.registered_descriptors, ['Txn', 'Scored', 'UserSpend', 'CardUser', 'BigUsers']);
  assert.deepEqual(reg.already_present, []);
  assert.deepEqual((reg.warnings as Array<{ path: string }>).map((w) => w.path), ['nodes[1].schema.big'], 'the register answer says the produced type won');
  // Re-sending the same payload (nulls and all) changes no node; registry_version still
  // moves (spec 2.8: every successful register increments it; the peer's does not).
  const again = await c.register(peerNodes());
  assert.equal(again.registry_version, (reg.registry_version as number) + 1);
  assert.deepEqual(again.added, []);
  assert.deepEqual(again.already_present, ['BigUsers', 'CardUser', 'Scored', 'Txn', 'UserSpend']);

  let last = -1;
  for (let i = 0; i < 12; i++) {
    const ack = await c.push('Txn', { txn_id: `${tag}${i}`, user: i % 2 === 0 ? 'alice' : 'bob', card: `c${i % 3}`, amount: i * 20.5 });
    assert.equal(ack.idempotent_replay, false);
    assert.ok(ack.ack_lsn > last, 'ack_lsn grows');
    last = ack.ack_lsn;
  }
  // BigUsers reads Scored, whose with_columns computes big as a bool (declared str).
  for (const amount of [500, 5, 300]) await c.push('Txn', { txn_id: `${tag}s${amount}`, user: 'carol', card: 'c9', amount });
  const replay = await c.push('Txn', { txn_id: `${tag}3`, user: 'bob', card: 'c0', amount: 61.5 });
  assert.equal(replay.idempotent_replay, true, 'dedupe_key with dedupe_window_ms');

  // alice: i = 0, 2, ..., 10 (amount 0 is filtered out by amount > 0).
  const alice = await c.get('UserSpend', 'alice');
  assert.deepEqual(alice, { cnt: 5, total: 20.5 * (2 + 4 + 6 + 8 + 10) });
  assert.deepEqual(await c.get('UserSpend', 'bob', ['cnt']), { cnt: 6 });
  assert.deepEqual(await c.get('UserSpend', 'nobody'), {});
  // Composite key in the peer's "a|b" form: card c0 and alice at i = 0, 6.
  assert.deepEqual(await c.get('CardUser', peerKey('c0', 'alice')), { n: 2 });
  assert.deepEqual(await c.get('BigUsers', 'carol'), { bigs: 2 });

  const rows = await c.batchGet([
    { table: 'UserSpend', key: 'alice', features: ['total'] },
    { table: 'Nope', key: 'x' },
    { table: 'CardUser', entity_id: peerKey('c1', 'bob') },
    { table: 'UserSpend', key: 'ghost' },
  ]);
  assert.equal(rows.length, 4);
  assert.deepEqual(rows[0], { total: alice.total });
  assert.equal((rows[1] as { error: { code: string } }).error.code, 'unknown_table');
  assert.deepEqual(rows[2], { n: 2 }, 'entity_id is the peer alias of key (bob with c1 at i = 1, 7)');
  assert.deepEqual(rows[3], {});

  // Errors dispatch on error.code, as in the peer's SDK.
  await assert.rejects(c.get('Nope', 'x'), (e: unknown) => e instanceof PeerError && e.code === 'unknown_table');
  await assert.rejects(c.push('Nope', {}), (e: unknown) => e instanceof PeerError && e.code === 'event_not_found');

  const reset = await c.reset();
  assert.equal(reset.reset, true);
  assert.ok(reset.registry_version > (reg.registry_version as number));
  assert.equal((await c.ping()).registry_version, reset.registry_version);
  await assert.rejects(c.get('UserSpend', 'alice'), (e: unknown) => e instanceof PeerError && e.code === 'unknown_table');
}

test('peer dialect over HTTP: register, push, get, batch_get, reset', async () => {
  await scenario(new PeerHttp(srv.base), 'h');
});

test('peer dialect over TCP: reply opcodes 0x0000/0x0001/0x0010/0x0023, push with body', async () => {
  const c = await PeerTcp.connect(srv.tcpPort);
  try {
    await scenario(c, 't');
  } finally {
    c.close();
  }
});
