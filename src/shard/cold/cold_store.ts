/**
 * Where a table's cold (frozen) entities live: the one interface the shard state
 * uses (state.ts, snapshot_job.ts, partition_io.ts), with two implementations:
 *
 *   MemColdStore   frozen buffers in a Map (memory-only mode, cluster mode, unit tests)
 *   DiskColdStore  records in the shard's on-disk cold segments (cold_files.ts),
 *                  only a compact index in memory
 *
 * A frozen entity is an opaque Buffer (cold.ts decides its encoding); the store
 * never looks inside it.
 */

export interface ColdStore {
  /** Entities held. */
  readonly size: number;
  has(key: string): boolean;
  get(key: string): Buffer | undefined;
  /** get + delete: the entity is thawing. */
  take(key: string): Buffer | undefined;
  set(key: string, frozen: Buffer): void;
  delete(key: string): boolean;
  /**
   * delete() for a forget: the entity must not stay readable anywhere this store
   * wrote it (the disk store overwrites its record). True when there was one.
   */
  erase(key: string): boolean;
  /** Every entity (disk: a sequential scan of the segments). Deleting while iterating is allowed. */
  entries(): IterableIterator<[string, Buffer]>;
  keys(): IterableIterator<string>;
  /** Forgets every entity (the table was replaced or dropped). */
  clear(): void;
  /** Bytes this store keeps in memory (buffers, or the index). */
  memoryBytes(): number;
}

export class MemColdStore implements ColdStore {
  readonly #map = new Map<string, Buffer>();
  #bytes = 0;

  get size(): number {
    return this.#map.size;
  }

  has(key: string): boolean {
    return this.#map.has(key);
  }

  get(key: string): Buffer | undefined {
    return this.#map.get(key);
  }

  take(key: string): Buffer | undefined {
    const buf = this.#map.get(key);
    if (buf !== undefined) this.delete(key);
    return buf;
  }

  set(key: string, frozen: Buffer): void {
    const old = this.#map.get(key);
    if (old !== undefined) this.#bytes -= old.length + key.length * 2;
    this.#map.set(key, frozen);
    this.#bytes += frozen.length + key.length * 2;
  }

  delete(key: string): boolean {
    const old = this.#map.get(key);
    if (old === undefined) return false;
    this.#bytes -= old.length + key.length * 2;
    return this.#map.delete(key);
  }

  erase(key: string): boolean {
    return this.delete(key);
  }

  entries(): IterableIterator<[string, Buffer]> {
    return this.#map.entries();
  }

  keys(): IterableIterator<string> {
    return this.#map.keys();
  }

  clear(): void {
    this.#map.clear();
    this.#bytes = 0;
  }

  memoryBytes(): number {
    return this.#bytes;
  }
}
