/**
 * shard/columns/: the feature state of a table, one column per feature (or per
 * shared ring), indexed by entity slot, in typed arrays and pooled blocks.
 *
 *   table_columns.ts  TableColumns: a table's columns, built and carried per
 *                     registry version, and its layout
 *   ring_group.ts     one raw-event ring per entity shared by the windowed features:
 *                     pushes, windows (skip counts), expiry, bucket records,
 *                     deferred evictions, reads (one class: the push path reads them all)
 *   ring_member.ts    a feature reading a ring; hashed fields
 *   ring_save.ts      a ring slot's save as plain data, and what reshapes one
 *   ring_pool.ts      the pooled blocks the rings live in
 *   cells.ts          one value in one double (numbers as themselves, the rest NaN-boxed)
 *   solo_column.ts    features without a shared ring: FixedColumn, ObjectColumn and
 *                     the dispatch to the three below
 *   kept_column.ts    lifetime point ops (first, last, first_n, last_n, lag)
 *   exact_column.ts   lifetime sketch ops, exact while an entity is small
 *   bloom_column.ts   bloom_member filters in pooled blocks
 *   dropped_cells.ts  intern references of dropped columns, given back in slices
 */
export {};
