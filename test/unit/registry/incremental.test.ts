/**
 * Incremental compile (registry/compile.ts `previous`): an
 * unchanged node reuses its compiled artefacts, a change upstream invalidates
 * every dependent, positions and notes belong to the new compile, and the
 * reused registry behaves as a fresh one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileRegistry, SlicedCompile, type CompileOptions, type CompiledRegistry } from '../../../src/registry/compile';
import { ShardState } from '../../../src/shard/state/state';
import { register } from '../../../src/coordinator/register';
import { EMPTY_REGISTRY } from '../../../src/registry/model';

type Node = Record<string, unknown>;
const SHARD: CompileOptions = { memoryGovEnforce: false, pushValidators: false };
const FRONT: CompileOptions = { memoryGovEnforce: false, pushValidators: true, features: false };

const ev: Node = { kind: 'event', name: 'E', schema: { fields: { u: 'str', a: 'i64', s: 'str' } } };
const derived = (mult: number): Node => ({ kind: 'derivation', name: 'D', output_kind: 'event', upstreams: ['E'], ops: [{ op: 'with_columns', exprs: { b: `a * ${mult}` } }] });
const table = (name: string, up: string, field: string): Node => ({
  kind: 'table', name, upstreams: [up], key: ['u'],
  agg: { total: { op: 'sum', params: { field, window: '1h', where: "s != 'x'" } }, n: { op: 'count', params: { window: 'forever' } } },
});

function compile(nodes: Node[], opts: CompileOptions, previous: CompiledRegistry | null, version = 1): CompiledRegistry {
  return compileRegistry({ version, nodes }, { ...opts, previous });
}

test('unchanged nodes reuse their compiled artefacts; a changed upstream recompiles its dependents', () => {
  const v1 = compile([ev, derived(2), table('TD', 'D', 'b'), table('TE', 'E', 'a')], SHARD, null);
  // D changes: TD (below D) must be recompiled; E and TE must not.
  const v2 = compile([ev, derived(3), table('TD', 'D', 'b'), table('TE', 'E', 'a')], SHARD, v1, 2);
  assert.equal(v2.artefacts.get('E'), v1.artefacts.get('E'));
  assert.equal(v2.artefacts.get('TE'), v1.artefacts.get('TE'));
  assert.equal(v2.tables.get('TE'), v1.tables.get('TE'), 'same position: the very TablePlan');
  assert.equal(v2.tables.get('TE')!.features[0], v1.tables.get('TE')!.features[0]);
  assert.notEqual(v2.artefacts.get('D'), v1.artefacts.get('D'));
  assert.notEqual(v2.artefacts.get('D')!.chain, v1.artefacts.get('D')!.chain);
  assert.notEqual(v2.artefacts.get('TD')!.key, v1.artefacts.get('TD')!.key, 'a dependent\'s key covers its upstream');
  assert.notEqual(v2.tables.get('TD')!.features[0], v1.tables.get('TD')!.features[0]);
  assert.notEqual(v2.tables.get('TD')!.keySignature, v1.tables.get('TD')!.keySignature);
  // EventPlans are per version (feeds, scratch rows), never shared.
  assert.notEqual(v2.events.get('E'), v1.events.get('E'));
  // And the recompiled dependent computes with the new upstream.
  const row = (reg: CompiledRegistry): unknown => {
    const plan = reg.events.get('E')!;
    const rows = plan.feedRows({ u: 'k', a: 5, s: 'y' });
    return rows[plan.feeds.findIndex((f) => f.table.name === 'TD')]!.b;
  };
  assert.equal(row(v1), 10);
  assert.equal(row(v2), 15);
});

test('a reused table at a new position gets a plan with the new index and the same features', () => {
  const v1 = compile([ev, table('T1', 'E', 'a'), table('T2', 'E', 'a')], SHARD, null);
  const v2 = compile([ev, table('T0', 'E', 'a'), table('T1', 'E', 'a'), table('T2', 'E', 'a')], SHARD, v1, 2);
  assert.deepEqual([...v2.tables.values()].map((t) => [t.name, t.index]), [['T0', 0], ['T1', 1], ['T2', 2]]);
  assert.notEqual(v2.tables.get('T1'), v1.tables.get('T1'));
  assert.equal(v2.tables.get('T1')!.features, v1.tables.get('T1')!.features);
  assert.equal(v2.tables.get('T1')!.featureIndex.get('n'), 1);
  // Every feed of E points at this version's plans.
  assert.deepEqual(v2.events.get('E')!.feeds.map((f) => f.table), [...v2.tables.values()]);
});

test('no reuse across other compile options, and the front reuses its validators', () => {
  const nodes = [ev, derived(2), table('TD', 'D', 'b')];
  const shard = compile(nodes, SHARD, null);
  const front = compile(nodes, FRONT, shard);
  assert.notEqual(front.artefacts.get('E'), shard.artefacts.get('E'));
  assert.equal(front.tables.get('TD')!.features[0].where, null, 'the front compiles names only');
  const front2 = compile([...nodes, table('TE', 'E', 'a')], FRONT, front, 2);
  assert.equal(front2.artefacts.get('E')!.validator, front.artefacts.get('E')!.validator);
  assert.equal(front2.artefacts.get('D')!.validator, front.artefacts.get('D')!.validator);
  assert.ok(front2.events.get('E')!.validator !== null);
});

test('an artefact does not survive a compile that failed, and the next compile still reuses', () => {
  const v1 = compile([ev, table('TE', 'E', 'a')], SHARD, null);
  assert.throws(() => compile([ev, table('TE', 'E', 'a'), table('Bad', 'E', 'nope')], SHARD, v1, 2));
  const v3 = compile([ev, table('TE', 'E', 'a'), table('T2', 'E', 'a')], SHARD, v1, 2);
  assert.equal(v3.artefacts.get('TE'), v1.artefacts.get('TE'));
});

test('notes of a reused node carry the path of the register that reports them', () => {
  const d: Node = { kind: 'derivation', name: 'D', output_kind: 'event', upstreams: ['E'], ops: [{ op: 'with_columns', exprs: { b: 'a * 2' } }], schema: { fields: { u: 'str', a: 'i64', s: 'str', b: 'str' } } };
  const first = register(EMPTY_REGISTRY, { nodes: [ev, d] }, { memoryGovEnforce: false });
  assert.deepEqual((first.body.warnings as Array<{ path: string }>).map((w) => w.path), ['nodes[1].schema.b']);
  // D again, now at payload index 0: reused from the previous compile, reported at its new path.
  const again = register(first.next!, { nodes: [d, table('T', 'E', 'a')] }, { memoryGovEnforce: false, previous: first.compiled });
  assert.equal(again.compiled.artefacts.get('D'), first.compiled.artefacts.get('D'));
  assert.deepEqual((again.body.warnings as Array<{ path: string }>).map((w) => w.path), ['nodes[0].schema.b']);
});

test('a sliced compile yields between nodes and features and ends with what one compile builds; its errors come out of finish()', () => {
  const nodes: Node[] = [ev];
  for (let t = 0; t < 5; t++) nodes.push(table(`T${t}`, 'E', 'a'));
  const sliced = new SlicedCompile({ version: 1, nodes }, SHARD);
  let slices = 0;
  while (!sliced.step(0)) slices++;
  // A zero budget stops after every unit: nodes (6) + features (2 per table) + more.
  assert.ok(slices >= 6 + 10, `${slices} slices`);
  assert.equal(sliced.done, true);
  const whole = compile(nodes, SHARD, null);
  const got = sliced.finish();
  assert.deepEqual([...got.tables.values()].map((t) => [t.name, t.index, t.keySignature, t.features.map((f) => f.signature)]),
    [...whole.tables.values()].map((t) => [t.name, t.index, t.keySignature, t.features.map((f) => f.signature)]));
  const bad = new SlicedCompile({ version: 2, nodes: [ev, table('Bad', 'E', 'nope')] }, SHARD);
  assert.equal(bad.step(1000), true, 'a failed compile is done');
  assert.throws(() => bad.finish(), (err: Error & { code?: string }) => typeof err.code === 'string');
});

test('a shard swaps in the version (and new tables\' storage) it prepared in slices, and compiles itself when none was prepared', () => {
  const shard = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: false });
  shard.install({ version: 1, nodes: [ev, table('T1', 'E', 'a')] });
  const v2 = { version: 2, nodes: [ev, table('T1', 'E', 'a'), table('T2', 'E', 'a')] };
  const job = shard.prepare(v2);
  assert.equal(shard.prepare(v2), job, 'a second PREPARE continues the same compile');
  while (!job.step(0));
  // The new table's storage was built during the prepare; the install takes it.
  const taken: unknown[] = [];
  const columnsFor = job.columnsFor.bind(job);
  job.columnsFor = (plan) => { const c = columnsFor(plan); if (c !== null) taken.push(c); return c; };
  const t1 = shard.tableByName('T1')!.cols;
  shard.install(v2);
  assert.equal(shard.registry, job.finish());
  assert.equal(taken.length, 1);
  assert.equal(shard.tableByName('T2')!.cols, taken[0]);
  assert.equal(shard.tableByName('T1')!.cols, t1, 'an unchanged table keeps its storage');
  assert.equal(shard.preparing(2), null);
  const v3 = { version: 3, nodes: v2.nodes };
  shard.install(v3);
  assert.equal(shard.registry!.version, 3);
  assert.equal(shard.registry!.tables.get('T2'), job.finish().tables.get('T2'), 'incremental without a prepare too');
});
