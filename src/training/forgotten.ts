/**
 * The forgets a shard's history holds (WAL FORGET records, docs/durability.md
 * "Forgetting an entity"), so that an export never serves a forgotten entity: a
 * spine row of (table, key) read at a point before a forget of that entity answers
 * as for a key the table never held (`{}`), as if the entity's pushes before the
 * forget had not been made; at or after the forget, replay has removed the entity
 * and what pushes rebuilt since is served as usual.
 *
 * A forget names tables by index under its registry version; the names a spine
 * asks for are those names, and the names later versions gave the same table
 * (`renamed_from`). A forget that named every table (`everyKey`) covers only the
 * tables that existed then: a table registered after it held nothing of the
 * entity before it.
 */
import { renamesBetween } from '../coordinator/renames';
import { compileRegistry, type CompiledRegistry } from '../registry/compile';
import type { RegistryState } from '../registry/model';
import { decodeForget } from '../wal/forget_record';
import { RECORD_TYPE_FORGET } from '../wal/constants';
import type { ShardHistory } from './history';

export class ForgottenKeys {
  /** table name -> canonical key -> lsns of the forgets of it, ascending. */
  readonly #byTable = new Map<string, Map<string, number[]>>();
  count = 0;

  /** Reads every FORGET record of `sh` (after its begin()); `registry` is every version, oldest first. */
  static scan(sh: ShardHistory, registry: readonly RegistryState[]): ForgottenKeys {
    const out = new ForgottenKeys();
    const compiled = new Map<number, CompiledRegistry | null>();
    const tableName = (version: number, index: number): string | undefined => {
      if (!compiled.has(version)) {
        const state = registry.find((r) => r.version === version);
        let reg: CompiledRegistry | null = null;
        try {
          reg = state === undefined ? null : compileRegistry(state, { memoryGovEnforce: false, pushValidators: false, features: false });
        } catch {
          reg = null; // the export reports what replay could not apply
        }
        compiled.set(version, reg);
      }
      return compiled.get(version)?.tableList[index]?.name;
    };
    sh.forEach((r) => {
      if (r.type !== RECORD_TYPE_FORGET) return;
      const f = decodeForget(r.buf, r.body);
      for (let i = 0; i < f.tables.length; i++) {
        const name = tableName(f.registryVersion, f.tables[i]);
        if (name === undefined) continue;
        for (const n of namesAfter(registry, f.registryVersion, name)) out.#add(n, f.keys[i], f.lsn);
      }
    });
    return out;
  }

  #add(table: string, key: string, lsn: number): void {
    let keys = this.#byTable.get(table);
    if (keys === undefined) this.#byTable.set(table, (keys = new Map()));
    const lsns = keys.get(key);
    if (lsns === undefined) keys.set(key, [lsn]);
    else lsns.push(lsn); // records come in log order
    this.count++;
  }

  /** Whether a forget of `key` in `table` comes after log position `applied` (the state read still holds what it erases). */
  later(table: string, key: string, applied: number): boolean {
    const lsns = this.count === 0 ? undefined : this.#byTable.get(table)?.get(key);
    return lsns !== undefined && lsns[lsns.length - 1] > applied;
  }
}

/** `name` in version `from`, and every name later versions gave that table. */
function namesAfter(registry: readonly RegistryState[], from: number, name: string): string[] {
  const names = [name];
  let current = name;
  for (let i = 1; i < registry.length; i++) {
    if (registry[i].version <= from) continue;
    const moved = renamesBetween(registry[i - 1], registry[i]).find(([f]) => f === current);
    if (moved !== undefined) { current = moved[1]; names.push(current); }
  }
  return names;
}
