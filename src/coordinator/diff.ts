/**
 * Classifies a register payload against the registry (spec 4.2, 7.4): additive
 * changes always apply; destructive ones need force. Items are built with a fixed
 * member order and sorted by (kind, primary field, secondary field), so identical
 * inputs give byte-identical bodies.
 */
import { aggSignature } from '../ops';
import type { NodeDef, TableNodeDef } from '../registry/model';
import { stableStringify } from '../util/stable_json';

import type { DiffItem } from '../protocol/diff_items';

export type { DiffItem };

export interface Diff {
  additive: DiffItem[];
  destructive: DiffItem[];
}

/** Field that names a removed event field in a type_change (`to`). */
export const ABSENT = '<absent>';

export function descriptorKind(def: NodeDef): string {
  return def.kind === 'derived' ? 'derivation' : def.kind;
}

function sortKey(it: DiffItem): [string, string, string] {
  switch (it.kind) {
    case 'new_descriptor': return [it.kind, it.name, ''];
    case 'new_agg': return [it.kind, it.table, it.agg];
    case 'new_field': return [it.kind, it.event, it.field];
    case 'rename': return [it.kind, it.from, it.to];
    case 'type_change': return [it.kind, it.field, ''];
    case 'op_removal': return [it.kind, it.table, it.agg];
    case 'agg_removal': return [it.kind, it.table, it.agg];
    case 'window_change': return [it.kind, it.agg, ''];
    case 'key_cols_change': return [it.kind, it.table, ''];
  }
}

function cmp(a: DiffItem, b: DiffItem): number {
  const x = sortKey(a);
  const y = sortKey(b);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

export function sortDiff(d: Diff): Diff {
  return { additive: [...d.additive].sort(cmp), destructive: [...d.destructive].sort(cmp) };
}

function windowOf(spec: { params: Record<string, unknown> }): string {
  const w = spec.params.window;
  return typeof w === 'string' ? w : 'forever';
}

/** The spec with its window replaced by one placeholder: equal iff only the window differs. */
function withWindow(spec: { op: string; params: Record<string, unknown> }): { op: string; params: Record<string, unknown> } {
  return { op: spec.op, params: { ...spec.params, window: WINDOW_PLACEHOLDER } };
}
const WINDOW_PLACEHOLDER = '<window>';

function diffTable(a: TableNodeDef, b: TableNodeDef, out: Diff): void {
  if (stableStringify(a.key) !== stableStringify(b.key)) out.destructive.push({ kind: 'key_cols_change', table: b.name, from: [...a.key], to: [...b.key] });
  if (a.upstream !== b.upstream) out.destructive.push({ kind: 'op_removal', table: b.name, agg: 'upstreams' });
  const n = Math.max(a.ops.length, b.ops.length);
  for (let j = 0; j < n; j++) {
    if (stableStringify(a.ops[j]) !== stableStringify(b.ops[j])) out.destructive.push({ kind: 'op_removal', table: b.name, agg: `ops[${j}]` });
  }
  const oldAgg = new Map(a.agg);
  const newAgg = new Map(b.agg);
  for (const [feat, spec] of oldAgg) {
    const next = newAgg.get(feat);
    if (next === undefined) { out.destructive.push({ kind: 'agg_removal', table: b.name, agg: feat }); continue; }
    // Compare meanings, not spellings: aliases, `60m` vs `1h` and defaults written
    // out are the same feature (and the shard keeps its state: same signature).
    if (aggSignature(spec) === aggSignature(next)) continue;
    if (aggSignature(withWindow(spec)) === aggSignature(withWindow(next))) out.destructive.push({ kind: 'window_change', agg: `${b.name}.${feat}`, from: windowOf(spec), to: windowOf(next) });
    else out.destructive.push({ kind: 'op_removal', table: b.name, agg: feat });
  }
  for (const [feat, spec] of newAgg) {
    if (!oldAgg.has(feat)) out.additive.push({ kind: 'new_agg', table: b.name, agg: feat, source: spec.op });
  }
}

/** Diff of one re-registered node (same name) against its registered definition. */
export function diffNode(a: NodeDef, b: NodeDef, out: Diff): void {
  if (a.kind === 'event' && b.kind === 'event') {
    for (const [f, t] of Object.entries(a.fields)) {
      const u = b.fields[f];
      if (u === undefined) out.destructive.push({ kind: 'type_change', field: `${b.name}.${f}`, from: t, to: ABSENT });
      else if (u !== t) out.destructive.push({ kind: 'type_change', field: `${b.name}.${f}`, from: t, to: u });
    }
    for (const [f, t] of Object.entries(b.fields)) {
      if (!(f in a.fields)) out.additive.push({ kind: 'new_field', event: b.name, field: f, type: t });
    }
    return;
  }
  if (a.kind === 'derived' && b.kind === 'derived') {
    if (a.upstream !== b.upstream) out.destructive.push({ kind: 'op_removal', table: b.name, agg: 'upstreams' });
    const n = Math.max(a.ops.length, b.ops.length);
    for (let j = 0; j < n; j++) {
      if (stableStringify(a.ops[j]) !== stableStringify(b.ops[j])) out.destructive.push({ kind: 'op_removal', table: b.name, agg: `ops[${j}]` });
    }
    return;
  }
  if (a.kind === 'table' && b.kind === 'table') diffTable(a, b, out);
}
