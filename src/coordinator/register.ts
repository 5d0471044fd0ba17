/**
 * The register algorithm (spec 4.2), run only on the coordinator thread:
 *
 *   1. payload shape            -> invalid_registration / event_time_not_supported_in_v0
 *   2. parse every node          -> per-node codes, collected (several failures -> `errors` list)
 *   3. payload graph             -> duplicate_name, cycle, topological_order_violation, missing_upstream
 *   4. merge into the registry   -> registration_cycle (merge semantics: absent nodes stay)
 *   5. diff vs registered nodes  -> additive / destructive (renames via renamed_from), kind changes noted
 *   6. compile the merged state  -> schema, expression and aggregation codes
 *   7. verdict                   -> force_required (409, sorted diff), then registration_conflict,
 *                                   then the dry-run preview or the next state (version + 1)
 *
 * Pure: takes the current state and returns the next one; persistence is the caller's.
 */
import { SfError } from '../errors';
import { REGISTER_NODES_MAX } from '../limits';
import { compileRegistry, type CompiledRegistry } from '../registry/compile';
import type { NodeDef, RegistryState } from '../registry/model';
import { parseNode, upstreamOf } from '../registry/node_parse';
import { combineErrors } from '../registry/register_errors';
import { stableStringify } from '../util/stable_json';
import { stripNullMembers } from '../util/strip_nulls';
import { unknownNameHint } from '../util/near_name';
import { descriptorKind, diffNode, sortDiff, type Diff } from './diff';
import { RENAMED_FROM } from './renames';

type Obj = Record<string, unknown>;

export interface RegisterOutcome {
  /** The state to install and persist; null for a dry run. */
  next: RegistryState | null;
  body: Record<string, unknown>;
  /** Old name -> new name for renamed nodes (shards move state along). */
  renames: Array<[string, string]>;
  /** The merged state compiled (`next`'s, or the dry run's): the caller's `previous` for the next register. */
  compiled: CompiledRegistry;
}

export interface RegisterOptions {
  memoryGovEnforce: boolean;
  /** What this thread compiled last: unchanged nodes are not compiled again (compile.ts). */
  previous?: CompiledRegistry | null;
}

function parsePayload(payload: unknown): { nodes: unknown[]; force: boolean; dryRun: boolean } {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new SfError('invalid_registration', 'register body must be an object {nodes: [...], force?, dry_run?}', { path: '' });
  }
  const p = payload as Obj;
  if ('event_time_field' in p || 'tolerate_delay_ms' in p) {
    throw new SfError('event_time_not_supported_in_v0', 'event time is not supported in v0 (time is processing time)', { path: 'event_time_field' in p ? 'event_time_field' : 'tolerate_delay_ms' });
  }
  if (!Array.isArray(p.nodes)) throw new SfError('invalid_registration', '"nodes" must be an array of node objects', { path: 'nodes' });
  if (p.nodes.length > REGISTER_NODES_MAX) throw new SfError('invalid_registration', `at most ${REGISTER_NODES_MAX} nodes per register call`, { path: 'nodes' });
  for (const k of ['force', 'dry_run'] as const) {
    if (p[k] !== undefined && p[k] !== null && typeof p[k] !== 'boolean') throw new SfError('invalid_registration', `${k} must be a boolean`, { path: k });
  }
  return { nodes: p.nodes.map(stripNullMembers), force: p.force === true, dryRun: p.dry_run === true };
}

/** Steps 2 and 3: parse nodes and check the payload's own graph. */
function parseAll(nodes: unknown[], registered: Map<string, NodeDef>): NodeDef[] {
  const errors: SfError[] = [];
  const defs: Array<NodeDef | null> = nodes.map((raw, i) => {
    try {
      return parseNode(raw, i);
    } catch (err) {
      if (err instanceof SfError) { errors.push(err); return null; }
      throw err;
    }
  });
  const index = new Map<string, number>();
  defs.forEach((d, i) => {
    if (d === null) return;
    if (index.has(d.name)) errors.push(new SfError('duplicate_name', `name ${JSON.stringify(d.name)} appears twice in this register call (first at nodes[${index.get(d.name)}])`, { path: `nodes[${i}].name` }));
    else index.set(d.name, i);
  });
  defs.forEach((d, i) => {
    if (d === null) return;
    const up = upstreamOf(d);
    if (up === null) return;
    const j = index.get(up);
    if (j === undefined) {
      if (!registered.has(up)) errors.push(new SfError('missing_upstream', `upstream ${JSON.stringify(up)} is neither in the payload nor registered${unknownNameHint(up, [...new Set([...registered.keys(), ...index.keys()])], 'known names')}`, { path: `nodes[${i}].upstreams[0]` }));
      return;
    }
    if (j < i) return;
    if (payloadCycle(d.name, defs, index)) errors.push(new SfError('cycle', `nodes[${i}] (${d.name}) is part of a cycle of upstreams`, { path: `nodes[${i}].upstreams[0]` }));
    else errors.push(new SfError('topological_order_violation', `upstream ${JSON.stringify(up)} appears later (nodes[${j}]) than its downstream; list upstreams first`, { path: `nodes[${i}].upstreams[0]` }));
  });
  if (errors.length > 0) throw combineErrors(errors);
  return defs as NodeDef[];
}

function payloadCycle(start: string, defs: Array<NodeDef | null>, index: Map<string, number>): boolean {
  const seen = new Set<string>();
  let cur: string | null = start;
  while (cur !== null) {
    if (seen.has(cur)) return cur === start;
    seen.add(cur);
    const j = index.get(cur);
    const d = j === undefined ? null : defs[j];
    cur = d === null ? null : upstreamOf(d);
  }
  return false;
}

/**
 * `renamed_from` of each payload node, checked: a string naming another node; a
 * registered node is renamed at most once per call and is not also re-sent under
 * its old name (it would be both kept and replaced). A name that is not registered
 * makes the node an ordinary new descriptor, so a client that keeps
 * `renamed_from` in its code can still bootstrap an empty server; a node that is
 * already registered under its new name is diffed as usual (re-sending a rename
 * is idempotent).
 */
function checkRenames(defs: NodeDef[], nodes: Obj[], registered: Map<string, unknown>): Array<string | null> {
  const errors: SfError[] = [];
  const names = new Set(defs.map((d) => d.name));
  const claimed = new Map<string, number>();
  const out = defs.map((def, i): string | null => {
    const from = nodes[i][RENAMED_FROM];
    if (from === undefined || from === null) return null;
    const path = `nodes[${i}].${RENAMED_FROM}`;
    if (typeof from !== 'string' || from === def.name) {
      errors.push(new SfError('invalid_registration', `${RENAMED_FROM} must be the node's former name (a string other than its own name)`, { path }));
      return null;
    }
    if (registered.has(def.name) || !registered.has(from)) return null;
    if (names.has(from)) {
      errors.push(new SfError('invalid_registration', `${JSON.stringify(from)} is renamed to ${JSON.stringify(def.name)} and also sent under its old name in the same call`, { path }));
      return null;
    }
    const first = claimed.get(from);
    if (first !== undefined) {
      errors.push(new SfError('invalid_registration', `${JSON.stringify(from)} is already renamed by nodes[${first}] in this call`, { path }));
      return null;
    }
    claimed.set(from, i);
    return from;
  });
  if (errors.length > 0) throw combineErrors(errors);
  return out;
}

/** Stable topological order of the merged nodes; a cycle is a registration_cycle. */
function topoSort(order: string[], up: Map<string, string | null>): string[] {
  const out: string[] = [];
  const state = new Map<string, 1 | 2>();
  const visit = (n: string, trail: string[]): void => {
    const s = state.get(n);
    if (s === 2) return;
    if (s === 1) throw new SfError('registration_cycle', `registering would create a cycle: ${[...trail, n].join(' -> ')}`, { path: `registry.${n}` });
    state.set(n, 1);
    const u = up.get(n);
    if (u !== null && u !== undefined && up.has(u)) visit(u, [...trail, n]);
    state.set(n, 2);
    out.push(n);
  };
  for (const n of order) visit(n, []);
  return out;
}

export function register(current: RegistryState, payload: unknown, opts: RegisterOptions): RegisterOutcome {
  const { nodes, force, dryRun } = parsePayload(payload);
  const registered = new Map<string, { def: NodeDef; raw: Obj }>();
  current.nodes.forEach((raw, i) => { const def = parseNode(raw, i); registered.set(def.name, { def, raw }); });
  const defs = parseAll(nodes, new Map([...registered].map(([k, v]) => [k, v.def])));

  const diff: Diff = { additive: [], destructive: [] };
  const conflicts: SfError[] = [];
  const added: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  const renames: Array<[string, string]> = [];
  const merged = new Map<string, Obj>(current.nodes.map((raw) => [String(raw.name), raw]));
  const order = current.nodes.map((raw) => String(raw.name));
  const renameSources = checkRenames(defs, nodes as Obj[], registered);
  defs.forEach((def, i) => {
    const raw = nodes[i] as Obj;
    const renamedFrom = renameSources[i];
    const old = registered.get(def.name);
    if (old === undefined && renamedFrom !== null && registered.has(renamedFrom)) {
      const prev = registered.get(renamedFrom)!;
      if (descriptorKind(prev.def) !== descriptorKind(def)) {
        conflicts.push(new SfError('registration_conflict', `cannot rename ${descriptorKind(prev.def)} ${renamedFrom} into a ${descriptorKind(def)} (a rename keeps the kind)`, { path: `nodes[${i}].renamed_from` }));
        return;
      }
      diff.destructive.push({ kind: 'rename', from: renamedFrom, to: def.name });
      diffNode(prev.def, def, diff);
      renames.push([renamedFrom, def.name]);
      order[order.indexOf(renamedFrom)] = def.name;
      merged.delete(renamedFrom);
      merged.set(def.name, raw);
      changed.push(def.name);
      return;
    }
    if (old === undefined) {
      diff.additive.push({ kind: 'new_descriptor', descriptor_kind: descriptorKind(def), name: def.name });
      added.push(def.name);
      order.push(def.name);
      merged.set(def.name, raw);
      return;
    }
    if (descriptorKind(old.def) !== descriptorKind(def)) {
      conflicts.push(new SfError('registration_conflict', `${def.name} is registered as a ${descriptorKind(old.def)}; it cannot become a ${descriptorKind(def)}, even with force (register it under a new name)`, { path: `nodes[${i}].kind` }));
      return;
    }
    if (stableStringify(old.raw) === stableStringify(raw)) { unchanged.push(def.name); return; }
    diffNode(old.def, def, diff);
    changed.push(def.name);
    merged.set(def.name, raw);
  });

  // Downstream nodes of a renamed node follow it.
  for (const [from, to] of renames) {
    for (const [name, raw] of merged) {
      if (Array.isArray(raw.upstreams) && raw.upstreams[0] === from) merged.set(name, { ...raw, upstreams: [to] });
    }
  }
  const ups = new Map<string, string | null>();
  for (const [name, raw] of merged) ups.set(name, Array.isArray(raw.upstreams) ? String(raw.upstreams[0]) : null);
  const sorted = topoSort(order, ups);
  const nextNodes = sorted.map((n) => merged.get(n)!);
  const payloadIndex = new Map(defs.map((d, i) => [d.name, i]));
  const version = current.version + 1;
  const compiled = compileRegistry({ version, nodes: nextNodes }, {
    memoryGovEnforce: opts.memoryGovEnforce,
    pushValidators: true,
    enforceLimits: true,
    previous: opts.previous ?? null,
    pathOf: (name) => (payloadIndex.has(name) ? `nodes[${payloadIndex.get(name)}]` : `registry.${name}`),
  });

  // Order of the verdicts (spec 7.2): validation errors (compile above), then
  // force_required, then registration_conflict (kind changes, which force cannot fix).
  const sortedDiff = sortDiff(diff);
  if (!dryRun && sortedDiff.destructive.length > 0 && !force) {
    throw new SfError('force_required', 'destructive changes need force=true; see diff (existing state of affected aggregations would become inconsistent)', {
      reason: `${sortedDiff.destructive.length} destructive change(s) in this payload require "force": true`,
      diff: sortedDiff,
    });
  }
  if (conflicts.length > 0) throw combineErrors(conflicts);
  // Notes about this payload's nodes (registered nodes were reported when they came).
  const warnings = compiled.notes.filter((n) => n.path.startsWith('nodes['));
  const extra = warnings.length > 0 ? { warnings } : {};
  if (dryRun) {
    return {
      next: null,
      renames,
      compiled,
      body: { status: 'ok', dry_run: true, would_apply: sortedDiff.destructive.length === 0 || force, registry_version: current.version, diff: sortedDiff, ...extra },
    };
  }
  return {
    next: { version, nodes: nextNodes },
    renames,
    compiled,
    // already_present and registered_descriptors: the peer's names (peer-facts 5.3), for its clients.
    body: {
      status: 'ok', registry_version: version, added, changed, unchanged, diff: sortedDiff, ...extra,
      already_present: [...unchanged].sort(), registered_descriptors: defs.map((d) => d.name),
    },
  };
}
