/**
 * Applies FORGET records (wal/forget_record.ts), live or replayed: each entry's
 * entity leaves its table, hot or frozen, without being thawed (TableState.forget).
 * A replayed forget removes the entity whatever its lastLsn: a fuzzy snapshot may
 * hold a copy taken before the forget or one rebuilt by pushes after it, and
 * every record after the snapshot's start is replayed, so those later pushes
 * rebuild it from nothing either way.
 */
import { FORGET_NOT_HELD, FORGET_REMOVED } from '../../protocol/messages';
import { decodeForget } from '../../wal/forget_record';
import type { ShardState } from './state';

/**
 * The FORGET record whose type byte is at `buf[body]`: per entry, in order,
 * FORGET_REMOVED when an entity was removed, FORGET_NOT_HELD when the table held
 * none of that key (the shard's answer, protocol/messages.ts ForgetItem). Null when
 * it was written under another registry version than the installed one (nothing removed).
 */
export function applyForget(state: ShardState, buf: Buffer, body: number): string | null {
  const f = decodeForget(buf, body);
  const reg = state.registry;
  if (reg === null || f.registryVersion !== reg.version) return null;
  state.advance(f.timeMs, f.lsn);
  let removed = '';
  for (let i = 0; i < f.tables.length; i++) {
    const ts = state.tables[f.tables[i]];
    removed += ts !== undefined && ts.forget(f.keys[i]) ? FORGET_REMOVED : FORGET_NOT_HELD;
  }
  return removed;
}
