/**
 * Register diff items (spec 7.4), shared by the coordinator (which builds them)
 * and the client library (which reads them). Types only.
 */
export type DiffItem =
  | { kind: 'new_descriptor'; descriptor_kind: string; name: string }
  | { kind: 'new_agg'; table: string; agg: string; source: string }
  | { kind: 'new_field'; event: string; field: string; type: string }
  | { kind: 'rename'; from: string; to: string }
  | { kind: 'type_change'; field: string; from: string; to: string }
  | { kind: 'op_removal'; table: string; agg: string }
  | { kind: 'agg_removal'; table: string; agg: string }
  | { kind: 'window_change'; agg: string; from: string; to: string }
  | { kind: 'key_cols_change'; table: string; from: string[]; to: string[] };
