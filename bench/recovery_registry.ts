/**
 * The registry the recovery benches load (recovery.ts writes a WAL for it,
 * snapshot_cpu.ts snapshots and restores it): one table keyed by user with a
 * windowed count, a lifetime sum and a windowed max, so rings and slab rows both appear.
 */
export const RECOVERY_NODES = [
  { kind: 'event', name: 'Txn', schema: { fields: { user: 'str', amount: 'f64' }, optional_fields: [] } },
  {
    kind: 'table', name: 'U', upstreams: ['Txn'], key: ['user'],
    agg: {
      n: { op: 'count', params: { window: '1h' } },
      total: { op: 'sum', params: { field: 'amount', window: 'forever' } },
      mx: { op: 'max', params: { field: 'amount', window: '1h' } },
    },
  },
];
