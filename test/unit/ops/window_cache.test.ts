/**
 * The merged-closed-buckets cache of value windows (val_window.ts) must never
 * change an answer: after every update and at many read times (crossing bucket
 * boundaries and window expiry), a state's read equals the read of a cache-free
 * copy of itself (load(save())). Merges of these accumulators are associative in
 * exact mode and for HLL/DDSketch, so both groupings must agree exactly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileAgg } from '../../../src/ops';
import { prng } from '../../harness/prng';
import { columnState, loadColumnState } from './column_state';

const FIELDS = { s: 'str', x: 'f64' } as const;
const SPECS = [
  { op: 'n_unique', params: { field: 's', window: '10m' } },
  { op: 'top_k', params: { field: 's', k: 3, window: '10m' } },
  { op: 'quantile', params: { field: 'x', q: 0.9, window: '10m' } },
  { op: 'entropy', params: { field: 's', window: '10m' } },
  { op: 'n_unique', params: { field: 'x', window: '1h' } },
];

for (const spec of SPECS) {
  test(`cached bucket merges answer like a fresh state: ${spec.op} ${spec.params.window}`, () => {
    const f = compileAgg(spec, { fields: { ...FIELDS }, path: 'x', memoryGovEnforce: true });
    for (const seed of [1, 2, 3]) {
      const rnd = prng(seed);
      const st = columnState(f);
      let t = 1_000_000;
      for (let i = 0; i < 3000; i++) {
        // Bursts (busy entity: buckets in use) and gaps (buckets expire).
        t += rnd() < 0.02 ? Math.floor(rnd() * 900_000) : Math.floor(rnd() * 2000);
        const s = `v${Math.floor(rnd() * 20)}`;
        st.update(spec.params.field === 's' ? s : Math.round(rnd() * 1000) / 10, t, {});
        if (i % 7 === 0) {
          for (const dt of [0, 1000, 60_000, 300_000, 700_000]) {
            const fresh = loadColumnState(f, structuredClone(st.save()));
            assert.deepEqual(st.read(t + dt), fresh.read(t + dt), `seed ${seed} step ${i} dt ${dt}`);
          }
        }
      }
    }
  });
}
