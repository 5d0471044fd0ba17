/**
 * Renames between two registry versions (docs/registry.md, "Renames").
 *
 * A rename is declared, never guessed: the new node carries
 * `"renamed_from": "<old name>"`. It is a rename at the version where the old
 * name is registered and the new one is not; the node keeps `renamed_from` in
 * the stored registry, so the pair is derivable from (previous state, next
 * state) alone. That matters because shards also install versions while
 * replaying their WAL after a restart, where no register response is at hand:
 * deriving renames from the states makes live installs and replays agree.
 */
import type { RegistryState } from '../registry/model';

type Obj = Record<string, unknown>;

/** The key a node uses to declare its former name. */
export const RENAMED_FROM = 'renamed_from';

/** [old name, new name] pairs that `next` applies to `prev`, in node order. */
export function renamesBetween(prev: RegistryState | null, next: RegistryState): Array<[string, string]> {
  if (prev === null) return [];
  const before = new Set(prev.nodes.map((n) => String(n.name)));
  const after = new Set(next.nodes.map((n) => String(n.name)));
  const out: Array<[string, string]> = [];
  for (const n of next.nodes) {
    const from = n[RENAMED_FROM];
    const to = String(n.name);
    if (typeof from === 'string' && from !== to && before.has(from) && !after.has(from) && !before.has(to)) out.push([from, to]);
  }
  return out;
}

/**
 * `state` with every renamed node (and every upstream reference to it) spelled
 * with its new name. Compiling this gives the previous version's signatures in
 * the next version's names, which is what a shard compares to decide which
 * states survive a rename (signatures embed source event names).
 */
export function underNewNames(state: RegistryState, renames: ReadonlyArray<[string, string]>): RegistryState {
  if (renames.length === 0) return state;
  const to = new Map(renames);
  const nodes = state.nodes.map((raw): Obj => {
    const name = String(raw.name);
    const ups = raw.upstreams;
    const movedUp = Array.isArray(ups) && ups.some((u) => typeof u === 'string' && to.has(u));
    if (!to.has(name) && !movedUp) return raw;
    const copy: Obj = { ...raw, name: to.get(name) ?? name };
    if (movedUp) copy.upstreams = (ups as unknown[]).map((u) => (typeof u === 'string' ? to.get(u) ?? u : u));
    return copy;
  });
  return { version: state.version, nodes };
}
