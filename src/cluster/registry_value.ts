/**
 * The registry bucket's value in cluster mode (docs/cluster.md "Registry"):
 * {state, renames, epoch, purgedSeq} as JSON. Read and written on the coordinator
 * thread (coordinator_main.ts `register_on`, `decode_value`), never parsed or
 * built on the front: a whole registry is megabytes of JSON at the limits.
 */
import { EMPTY_REGISTRY, type RegistryState } from '../registry/model';

export interface RegistryValue {
  state: RegistryState;
  renames: Array<[string, string]>;
  /** Version of the last reset's state (0: never reset); also the dedupe id epoch. */
  epoch: number;
  /** Stream sequence at the last reset: everything at or below it was purged. */
  purgedSeq: number;
}

/** The value of a bucket that has none yet. */
export const EMPTY_VALUE: RegistryValue = { state: EMPTY_REGISTRY, renames: [], epoch: 0, purgedSeq: 0 };

export function parseRegistryValue(bytes: Uint8Array | null): RegistryValue {
  if (bytes === null) return EMPTY_VALUE;
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as RegistryValue;
}

export function encodeRegistryValue(v: RegistryValue): Uint8Array {
  return Buffer.from(JSON.stringify(v), 'utf8');
}
