/**
 * Size limits of a whole registry (limits.ts, docs/limits.md), checked by the
 * coordinator before anything is compiled, so that an oversized register costs a
 * count, not a compile: nodes, features per table and in all, expressions, key
 * columns and derivation depth. Each violation is registry_too_large (key
 * columns: table_key_invalid) with the path of the first node over the limit.
 */
import { SfError } from '../errors';
import {
  DERIVATION_DEPTH_MAX, KEY_FIELDS_MAX, REGISTRY_BYTES_MAX, REGISTRY_EXPRESSIONS_MAX, REGISTRY_FEATURES_MAX, REGISTRY_NODE_BYTES_MAX, REGISTRY_NODES_MAX, TABLE_FEATURES_MAX,
} from '../limits';
import type { ChainOpDef, NodeDef } from './model';

function tooLarge(path: string, message: string): never {
  throw new SfError('registry_too_large', message, { path });
}

function chainExpressions(ops: readonly ChainOpDef[]): number {
  let n = 0;
  for (const op of ops) {
    if (op.op === 'filter') n++;
    else if (op.op === 'with_columns') n += op.exprs.length;
  }
  return n;
}

/**
 * One node's JSON text against REGISTRY_NODE_BYTES_MAX, and the registry's bytes so
 * far (`before`) plus this node against REGISTRY_BYTES_MAX; returns the node's bytes.
 */
export function checkNodeBytes(text: string, before: number, path: string): number {
  const n = Buffer.byteLength(text, 'utf8');
  if (n > REGISTRY_NODE_BYTES_MAX) tooLarge(path, `this node is ${n} bytes of JSON; at most ${REGISTRY_NODE_BYTES_MAX} (REGISTRY_NODE_BYTES_MAX)`);
  if (before + n > REGISTRY_BYTES_MAX) tooLarge(path, `the registry would be more than ${REGISTRY_BYTES_MAX} bytes of JSON (REGISTRY_BYTES_MAX)`);
  return n;
}

/** `defs` in topological order (upstreams first), as a registry state keeps them. */
export function checkRegistryLimits(defs: readonly NodeDef[], pathOf: (name: string, index: number) => string): void {
  if (defs.length > REGISTRY_NODES_MAX) {
    tooLarge(pathOf(defs[REGISTRY_NODES_MAX].name, REGISTRY_NODES_MAX), `the registry would have ${defs.length} nodes; at most ${REGISTRY_NODES_MAX} (REGISTRY_NODES_MAX)`);
  }
  const depth = new Map<string, number>();
  let features = 0;
  let expressions = 0;
  defs.forEach((def, i) => {
    const path = pathOf(def.name, i);
    if (def.kind === 'event') {
      depth.set(def.name, 0);
      expressions += def.validators.length;
    } else {
      const d = (depth.get(def.upstream) ?? 0) + 1;
      // Tables count too: their own ops run after the deepest derived event.
      if (d > DERIVATION_DEPTH_MAX) {
        tooLarge(`${path}.upstreams[0]`, `${def.name} is ${d} derivations below its source event; at most ${DERIVATION_DEPTH_MAX} (DERIVATION_DEPTH_MAX)`);
      }
      depth.set(def.name, d);
      expressions += chainExpressions(def.ops);
    }
    if (def.kind === 'table') {
      if (def.agg.length > TABLE_FEATURES_MAX) {
        tooLarge(`${path}.agg`, `table ${def.name} has ${def.agg.length} features; at most ${TABLE_FEATURES_MAX} per table (TABLE_FEATURES_MAX)`);
      }
      if (def.key.length > KEY_FIELDS_MAX) {
        throw new SfError('table_key_invalid', `table ${def.name} has ${def.key.length} key fields; at most ${KEY_FIELDS_MAX} (KEY_FIELDS_MAX)`, { path: `${path}.key` });
      }
      features += def.agg.length;
      for (const [, spec] of def.agg) if (spec.params.where !== undefined) expressions++;
      if (features > REGISTRY_FEATURES_MAX) {
        tooLarge(`${path}.agg`, `the registry would have more than ${REGISTRY_FEATURES_MAX} features (REGISTRY_FEATURES_MAX)`);
      }
    }
    if (expressions > REGISTRY_EXPRESSIONS_MAX) {
      tooLarge(path, `the registry would have more than ${REGISTRY_EXPRESSIONS_MAX} expressions (validators, filters, with_columns columns, where clauses; REGISTRY_EXPRESSIONS_MAX)`);
    }
  });
}
