/**
 * The string value cap of this thread: --max-string-bytes (SERVICE_MAX_STRING_BYTES,
 * default STRING_VALUE_BYTES_MAX_DEFAULT, docs/limits.md). A pushed str or bytes
 * value over it is invalid_event (registry/push_validator.ts, and the front's text
 * scan in front/push_text.ts leaves such a value to the validator), and a derived
 * concatenation over it is null (expr/runtime.ts concatStr) on every thread that
 * evaluates expressions: the front runs the chains, the shards the `where` clauses.
 *
 * One value per thread, set once at its start, before it compiles a registry: the
 * front (server.ts) from its config, the shard and coordinator threads from their
 * init (protocol/shard_calls.ts shardInit, protocol/coordinator_calls.ts
 * coordinatorInit). A module variable rather than a parameter because the checks
 * that read it are generated functions and expression helpers shared by every
 * registry version; reading it costs a load, as the constant it replaced did.
 */
import { STRING_VALUE_BYTES_MAX_DEFAULT, STRING_VALUE_BYTES_MAX_LIMIT } from './limits';

let cap = STRING_VALUE_BYTES_MAX_DEFAULT;

/** The cap in UTF-8 bytes. */
export function stringBytesMax(): number {
  return cap;
}

/** Sets this thread's cap (1..STRING_VALUE_BYTES_MAX_LIMIT; config.ts has checked the setting). */
export function setStringBytesMax(bytes: number): void {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > STRING_VALUE_BYTES_MAX_LIMIT) throw new RangeError(`string cap ${bytes} is outside 1..${STRING_VALUE_BYTES_MAX_LIMIT}`);
  cap = bytes;
}

/** True when a string is within the cap in UTF-8 bytes (measured only when it could be over). */
export function stringFits(v: string): boolean {
  return v.length * 3 <= cap || (v.length <= cap && Buffer.byteLength(v) <= cap);
}
