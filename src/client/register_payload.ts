/**
 * Turns what the caller passes to register() into the `nodes` list of spec 4.2.
 *
 * Builders pull in their upstream builders automatically, upstreams first
 * (spec 4.2 rule 7: topological order), so `register([CardStats])` also sends
 * `Txn`. Raw wire objects pass through untouched, in the order given. A node
 * reached twice with the same JSON is sent once; two different definitions
 * under one name are both sent, so the server reports `duplicate_name`.
 */
import { Chain, DerivedEvent, EventSource, Ref, Table, classFormError } from './builders';
import { StreamfeatError } from './errors';
import type { WireNode } from './wire';

// Builders of any row type (their types only matter to push, get and table).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Registrable = EventSource<any> | DerivedEvent<any> | Table<any, any> | Chain<any> | Ref<any> | WireNode;

export function buildNodes(items: Registrable | readonly Registrable[] | { nodes: readonly Registrable[] }): WireNode[] {
  const list = Array.isArray(items) ? (items as readonly Registrable[]) : isPayload(items) ? items.nodes : [items as Registrable];
  const out: WireNode[] = [];
  const sent = new Map<string, string>();
  for (let i = 0; i < list.length; i++) visit(list[i], `nodes[${i}]`, out, sent, true);
  return out;
}

/** A whole register body as read from a file: `{"nodes": [...]}` (no `kind`). */
function isPayload(x: unknown): x is { nodes: readonly Registrable[] } {
  const o = x as Record<string, unknown> | null;
  return typeof o === 'object' && o !== null && !('kind' in o) && Array.isArray(o.nodes);
}

function visit(item: unknown, where: string, out: WireNode[], sent: Map<string, string>, explicit: boolean): void {
  if (typeof item === 'function') throw classFormError();
  if (item instanceof Chain) {
    throw new StreamfeatError(
      'invalid_descriptor',
      'an unnamed chain cannot be registered: name it with .as(name) or use it as a table\'s `from`',
      { path: where },
    );
  }
  if (item instanceof Ref) {
    // A bare reference explicitly passed has nothing to send; as an upstream it is already registered.
    if (explicit) {
      throw new StreamfeatError('invalid_descriptor', `ref('${item.name}') names a registered node and has no definition to register`, {
        path: where,
      });
    }
    return;
  }
  if (item instanceof EventSource) return emit(item.name, item.toNode(), out, sent);
  if (item instanceof DerivedEvent) {
    visit(item.upstream, where, out, sent, false);
    return emit(item.name, item.toNode(), out, sent);
  }
  if (item instanceof Table) {
    visit(item.upstream, where, out, sent, false);
    return emit(item.name, item.toNode(), out, sent);
  }
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw new StreamfeatError('invalid_descriptor', `${where} is not a node or a builder`, { path: where });
  }
  const name = (item as Record<string, unknown>).name;
  if (typeof name === 'string') return emit(name, item as WireNode, out, sent);
  out.push(item as WireNode); // Nameless raw node: the server explains what is wrong with it.
}

function emit(name: string, node: WireNode, out: WireNode[], sent: Map<string, string>): void {
  const json = JSON.stringify(node);
  const prior = sent.get(name);
  if (prior === json) return;
  if (prior === undefined) sent.set(name, json);
  out.push(node);
}
