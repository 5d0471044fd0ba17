/**
 * Applies FORGET records (wal/forget_record.ts), live or replayed: each entry's
 * entity leaves its table, hot or frozen, without being thawed (TableState.forget).
 * A replayed forget removes the entity whatever its lastLsn: a fuzzy snapshot may
 * hold a copy taken before the forget or one rebuilt by pushes after it, and
 * every record after the snapshot's start is replayed, so those later pushes
 * rebuild it from nothing either way.
 */
import { decodeForget } from '../../wal/forget_record';
import type { ShardState } from './state';

/**
 * The FORGET record whose type byte is at `buf[body]`: per entry, in order, 1 when
 * an entity was removed, 0 when the table held none of that key. Null when it was
 * written under another registry version than the installed one (nothing removed).
 */
export function applyForget(state: ShardState, buf: Buffer, body: number): number[] | null {
  const f = decodeForget(buf, body);
  const reg = state.registry;
  if (reg === null || f.registryVersion !== reg.version) return null;
  state.advance(f.timeMs, f.lsn);
  const removed = new Array<number>(f.tables.length);
  for (let i = 0; i < f.tables.length; i++) {
    const ts = state.tables[f.tables[i]];
    removed[i] = ts !== undefined && ts.forget(f.keys[i]) ? 1 : 0;
  }
  return removed;
}
