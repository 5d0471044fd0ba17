/**
 * A registry version as it crosses threads: each node's JSON text, back to back in
 * one SharedArrayBuffer, and where each text ends. Posting it shares the memory
 * instead of cloning the state: structured-cloning a 4 MB registry cost the
 * sending thread ~30 ms and the receiving one ~40 ms, and the front sent every
 * version to the coordinator's caller, then twice to each shard. A register must
 * not stall the data plane whatever the registry size (docs/limits.md).
 *
 * The receiving thread decodes the texts one node at a time inside its sliced
 * compile (compile.ts), and a node whose text equals the previous version's is not
 * parsed again. Written once by its producer (the coordinator), never changed after.
 */
import type { RegistryState } from './model';

export interface RegistryWire {
  readonly version: number;
  /** UTF-8 node texts, back to back (SharedArrayBuffer-backed). */
  readonly text: Uint8Array;
  /** ends[i]: end of node i's text in `text` (node i starts at ends[i - 1], node 0 at 0). */
  readonly ends: Uint32Array;
}

const encoder = new TextEncoder();

/** The wire form of `version` from its node texts (in registry order). */
export function encodeWire(version: number, texts: readonly string[]): RegistryWire {
  let bytes = 0;
  for (const t of texts) bytes += Buffer.byteLength(t, 'utf8');
  const text = new Uint8Array(new SharedArrayBuffer(bytes));
  const ends = new Uint32Array(new SharedArrayBuffer(texts.length * Uint32Array.BYTES_PER_ELEMENT));
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    at += encoder.encodeInto(texts[i], text.subarray(at)).written;
    ends[i] = at;
  }
  return { version, text, ends };
}

/** The wire of a state held as objects (each node stringified: a thread with no compile of it). */
export function stateWire(state: RegistryState): RegistryWire {
  return encodeWire(state.version, state.nodes.map((n) => JSON.stringify(n)));
}

/** Node `i`'s JSON text. */
export function wireNodeText(w: RegistryWire, i: number): string {
  const start = i === 0 ? 0 : w.ends[i - 1];
  // A Buffer over the shared bytes (no copy); TextDecoder refuses shared memory.
  return Buffer.from(w.text.buffer, w.text.byteOffset + start, w.ends[i] - start).toString('utf8');
}

/** The whole state at once (a thread with no sliced compile of it: a replaced shard, tests). */
export function decodeWire(w: RegistryWire): RegistryState {
  const nodes: Array<Record<string, unknown>> = [];
  for (let i = 0; i < w.ends.length; i++) nodes.push(JSON.parse(wireNodeText(w, i)) as Record<string, unknown>);
  return { version: w.version, nodes };
}

/** What a compile reads: a state already in objects, or a wire still in text. */
export type RegistrySource = RegistryState | RegistryWire;

export function isWire(s: RegistrySource): s is RegistryWire {
  return (s as RegistryWire).ends !== undefined;
}

export function nodeCount(s: RegistrySource): number {
  return isWire(s) ? s.ends.length : s.nodes.length;
}
