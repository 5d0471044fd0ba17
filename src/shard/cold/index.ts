/**
 * shard/cold/: idle entities out of hot memory and back.
 *
 *   cold.ts          idle-entity eviction: the sweep cursor
 *   frozen_entity.ts a frozen entity's bytes: freeze, thaw, its save for another layout
 *   cold_store.ts    the store interface; MemColdStore (memory-only mode)
 *   cold_files.ts    the on-disk store: append-only segments under <data>/shard-<i>/cold/
 *   key_index.ts     the on-disk store's compact in-memory index
 *
 * The store is a cache: the WAL and the snapshots (../persist/) cover every entity in it.
 */
export {};
