/**
 * The registry wire (registry/wire.ts: a register must not stall the data
 * plane whatever the registry size): node texts in shared memory, decoded one node
 * at a time by the sliced compile, unchanged nodes not parsed again; and the
 * registry byte limits (REGISTRY_NODE_BYTES_MAX, REGISTRY_BYTES_MAX).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { compileRegistry, SlicedCompile, wireOf, type CompileOptions } from '../../../src/registry/compile';
import { decodeWire, encodeWire, wireNodeText, type RegistryWire } from '../../../src/registry/wire';
import { register } from '../../../src/coordinator/register';
import { ShardState } from '../../../src/shard/state/state';
import { EXPRESSION_LENGTH_MAX, REGISTRY_BYTES_MAX, REGISTRY_NODE_BYTES_MAX } from '../../../src/limits';
import type { SfError } from '../../../src/errors';

type Node = Record<string, unknown>;
const SHARD: CompileOptions = { memoryGovEnforce: false, pushValidators: false };

const ev: Node = { kind: 'event', name: 'E', schema: { fields: { u: 'str', a: 'i64', s: 'str' } } };
const table = (name: string, extra = ''): Node => ({
  kind: 'table', name, upstreams: ['E'], key: ['u'],
  agg: { total: { op: 'sum', params: { field: 'a', window: '1h', where: `s != 'x${extra}'` } }, n: { op: 'count', params: { window: 'forever' } } },
});
const sig = (reg: ReturnType<typeof compileRegistry>): unknown =>
  [...reg.tables.values()].map((t) => [t.name, t.index, t.keySignature, t.features.map((f) => f.signature)]);

test('a wire carries every node text (UTF-8 too) in shared memory; posting it shares, decoding gives the state back', () => {
  const nodes = [ev, table('T1', 'é€😀'), table('T2')];
  const wire = encodeWire(7, nodes.map((n) => JSON.stringify(n)));
  assert.ok(wire.text.buffer instanceof SharedArrayBuffer);
  assert.ok(wire.ends.buffer instanceof SharedArrayBuffer);
  assert.deepEqual(decodeWire(wire), { version: 7, nodes });
  assert.equal(wireNodeText(wire, 1), JSON.stringify(nodes[1]));
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(wire);
  const got = receiveMessageOnPort(port2)!.message as RegistryWire;
  port1.close();
  // Shared, not copied: a byte written on one side is seen on the other.
  const before = got.text[0];
  wire.text[0] = before + 1;
  assert.equal(got.text[0], before + 1);
  wire.text[0] = before;
  assert.deepEqual(decodeWire(got), { version: 7, nodes });
});

test('compiling a wire builds what compiling the state builds; unchanged nodes keep their objects and artefacts', () => {
  const v1 = compileRegistry({ version: 1, nodes: [ev, table('T1'), table('T2')] }, SHARD);
  const v1w = compileRegistry(wireOf(v1), SHARD);
  assert.deepEqual(sig(v1w), sig(v1));
  assert.deepEqual(v1w.state, v1.state);
  assert.deepEqual(v1w.texts, v1.texts);
  // v2 changes T2 only: T1's raw object and artefacts are the previous compile's.
  const v2 = compileRegistry({ version: 2, nodes: [ev, table('T1'), table('T2', 'y'), table('T3')] }, SHARD);
  const v2w = compileRegistry(wireOf(v2), { ...SHARD, previous: v1w });
  assert.deepEqual(sig(v2w), sig(v2));
  assert.equal(v2w.state.nodes[1], v1w.state.nodes[1], 'an unchanged node is not parsed again');
  assert.notEqual(v2w.state.nodes[2], v1w.state.nodes[2]);
  assert.equal(v2w.artefacts.get('T1'), v1w.artefacts.get('T1'));
  assert.notEqual(v2w.artefacts.get('T2'), v1w.artefacts.get('T2'));
  assert.equal(v2w.wire, wireOf(v2), 'a registry compiled from a wire keeps it (a replaced shard gets the same one)');
});

test('a sliced compile of a wire yields at every node, unchanged or not', () => {
  const nodes = [ev, ...Array.from({ length: 50 }, (_, i) => table(`T${i}`))];
  const v1 = compileRegistry({ version: 1, nodes }, SHARD);
  const job = new SlicedCompile(wireOf(compileRegistry({ version: 2, nodes }, SHARD)), { ...SHARD, previous: v1 });
  let slices = 0;
  while (!job.step(0)) slices++;
  assert.ok(slices >= nodes.length, `${slices} slices for ${nodes.length} unchanged nodes`);
  assert.equal(job.version, 2);
  assert.equal(job.finish().tables.get('T7')!.features, v1.tables.get('T7')!.features);
});

test('a shard prepares a renaming version in slices, the previous version under the new names included', () => {
  const shard = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: false });
  const v1 = compileRegistry({ version: 1, nodes: [ev, table('T1')] }, SHARD);
  shard.install(wireOf(v1));
  const renamed = { ...table('T9'), renamed_from: 'T1' };
  const v2 = wireOf(compileRegistry({ version: 2, nodes: [ev, renamed] }, SHARD));
  const job = shard.prepare(v2);
  while (!job.step(0));
  assert.ok(job.renamedPrevious(), 'the reference compile of the rename was prepared');
  shard.install(v2);
  assert.equal(shard.registry!.version, 2);
  assert.ok(shard.tableByName('T9'));
});

test('registry byte limits: one node over REGISTRY_NODE_BYTES_MAX, or the registry over REGISTRY_BYTES_MAX, is registry_too_large', () => {
  const verdict = (current: { version: number; nodes: Node[] }, nodes: Node[]): { code: string; path?: string; message?: string } => {
    try { register(current, { nodes }, { memoryGovEnforce: false }); return { code: 'ok' }; } catch (e) { return { code: (e as SfError).code, path: (e as SfError).detail.path, message: (e as SfError).message }; }
  };
  // An event whose validators make its JSON `bytes` long.
  const expr = `u != '${'x'.repeat(EXPRESSION_LENGTH_MAX - 16)}'`;
  const big = (name: string, bytes: number): Node => ({ kind: 'event', name, schema: { fields: { u: 'str', a: 'f64' } }, validators: Array.from({ length: Math.ceil(bytes / (expr.length + 3)) }, () => expr) });
  assert.equal(verdict({ version: 0, nodes: [] }, [big('A', REGISTRY_NODE_BYTES_MAX - 64 * 1024)]).code, 'ok');
  const tooBig = verdict({ version: 0, nodes: [] }, [ev, big('A', REGISTRY_NODE_BYTES_MAX + 1)]);
  assert.deepEqual([tooBig.code, tooBig.path], ['registry_too_large', 'nodes[1]']);
  assert.match(tooBig.message!, /REGISTRY_NODE_BYTES_MAX/);
  // Registered nodes count too: a registry at the cap refuses one more large node
  // (checked before anything is compiled, so this costs a count).
  const n = Math.floor(REGISTRY_BYTES_MAX / (REGISTRY_NODE_BYTES_MAX - 64 * 1024));
  const current = { version: 1, nodes: Array.from({ length: n }, (_, i) => big(`R${i}`, REGISTRY_NODE_BYTES_MAX - 64 * 1024)) };
  const full = verdict(current, [big('B', REGISTRY_NODE_BYTES_MAX - 64 * 1024)]);
  assert.deepEqual([full.code, full.path], ['registry_too_large', 'nodes[0]']);
  assert.match(full.message!, /REGISTRY_BYTES_MAX/);
});
