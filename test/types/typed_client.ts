/**
 * Type fixture of the client: compiled by `npm test`'s tsc, never run. Every
 * line under `@ts-expect-error` must fail to compile: if a change makes one
 * compile, tsc reports the unused directive and the suite fails. The rest must
 * compile. test/unit/client/types.test.ts checks the reasons one by one.
 */
import { Client, agg, col, datetime, event, f64, i64, int, optional, ref, str, table } from '../../src/client';
import type { KeyOfTable, PushData, RowOf } from '../../src/client';

const Txn = event('Txn', { user: str, amount: f64, n: i64, at: optional(datetime), country: optional(String) });
const Big = Txn.filter(col('amount').gt(100)).select('user', 'amount').as('BigTxn');
const UserSpend = table('UserSpend', {
  from: Txn,
  key: 'user',
  features: { n: agg.count(), total: agg.sum('amount', { window: '1h' }), last_country: agg.last('country'), recent: agg.lastN('amount', 3) },
});
const Pair = table('Pair', { from: Txn, key: ['user', 'country'], features: { n: agg.count() } });
const Renamed = table('R', { from: Txn.rename({ user: 'who' }).withColumns({ cents: 'cast(amount * 100, int)' }), key: 'who', features: { c: agg.max('cents') } });

export async function fixture(sf: Client): Promise<void> {
  await sf.register([UserSpend, Big, Pair, Renamed]);
  await sf.push(Txn, { user: 'u1', amount: 12.5, n: 3 });
  await sf.push(Txn, { user: 'u1', amount: 1, n: 10n, at: new Date(), country: null });
  await sf.push(Big, { user: 'u1', amount: 200 });
  await sf.push('Txn', { anything: 'goes', by: 'name' }); // untyped by name

  const row = await sf.get(UserSpend, 'u1');
  const total: number | null | undefined = row.total;
  const n: number | undefined = row.n;
  const last: string | null | undefined = row.last_country;
  const recent: number[] | undefined = row.recent;
  const some = await sf.get(UserSpend, 'u1', ['n']);
  const onlyN: number | undefined = some.n;
  const pair = await sf.get(Pair, ['u1', 'US']);
  const byName = await sf.get('UserSpend', 'u1');
  const anyFeature = byName.whatever; // untyped row: any feature name
  const [a, b] = await sf.batchGet([{ table: UserSpend, key: 'u1' }, { table: 'Other', key: 1 }] as const);
  void [total, n, last, recent, onlyN, pair, anyFeature, a, b];

  const data: PushData<typeof Txn> = { user: 'u', amount: 1, n: 1 };
  const r: RowOf<typeof UserSpend> = { n: 1, total: null, last_country: null, recent: [] };
  const k: KeyOfTable<typeof Pair> = ['u', null];
  void [data, r, k];

  const Untyped = ref('Elsewhere');
  table('U', { from: Untyped, key: 'anything', features: { s: agg.sum('any_column', { window: '1h' }) } });
  const Typed = ref<{ user: string; amount: number }>('Elsewhere');
  table('V', { from: Typed, key: 'user', features: { s: agg.sum('amount', { window: '1h' }) } });
  event('WithInt', { c: int(), d: int({ optional: true }) }, { optional: ['c'] });

  // ---- must not compile ----
  // @ts-expect-error -- amount is a number
  await sf.push(Txn, { user: 'u1', amount: 'yes', n: 1 });
  // @ts-expect-error -- a required field is missing
  await sf.push(Txn, { user: 'u1', n: 1 });
  // @ts-expect-error -- not a field of Txn
  await sf.push(Txn, { user: 'u1', amount: 1, n: 1, extra: true });
  // @ts-expect-error -- BigTxn kept only user and amount
  await sf.push(Big, { user: 'u1', amount: 1, n: 1 });
  // @ts-expect-error -- the upstream has no column mss
  table('Bad1', { from: Txn, key: 'user', features: { s: agg.sum('mss', { window: '1h' }) } });
  // @ts-expect-error -- the key names a column the upstream lacks
  table('Bad2', { from: Txn, key: ['usr'], features: { n: agg.count() } });
  // @ts-expect-error -- not a feature of UserSpend
  void row.not_a_feature;
  // @ts-expect-error -- not a feature of UserSpend
  await sf.get(UserSpend, 'u1', ['not_a_feature']);
  // @ts-expect-error -- UserSpend is keyed by a string
  await sf.get(UserSpend, 42);
  // @ts-expect-error -- Pair's key has two parts
  await sf.get(Pair, 'u1');
  // @ts-expect-error -- select names a column Txn lacks
  Txn.select('nope');
  // @ts-expect-error -- after rename, `user` is `who`
  table('Bad3', { from: Txn.rename({ user: 'who' }), key: 'user', features: { n: agg.count() } });
  // @ts-expect-error -- after drop, `amount` is gone
  table('Bad4', { from: Txn.drop('amount'), key: 'user', features: { s: agg.sum('amount', { window: '1h' }) } });
  // @ts-expect-error -- batch results are typed by their table
  void (a instanceof Error ? null : a.not_a_feature);
}
