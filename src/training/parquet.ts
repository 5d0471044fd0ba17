/**
 * Parquet event files for `streamfeat replay` (docs/training.md "Input files"),
 * read with hyparquet (pure JS, no dependencies of its own; loaded only when a
 * .parquet file is given, so nothing else pays for it). Rows come row group by row
 * group, so memory is one group's rows, not the file's. Values become what a push
 * body carries: 64-bit integers (BigInt) numbers when they are safe integers,
 * timestamps epoch ms, byte arrays base64 (the wire form of `bytes`), nulls absent.
 * Compression: what hyparquet reads by itself (uncompressed, snappy); another codec
 * is a clear error naming it.
 */
import { UsageError } from '../cli_args';
import { LineError } from './input';

/** What is used of hyparquet (its own types are ESM-only declarations). */
interface Hyparquet {
  asyncBufferFromFile(path: string): Promise<unknown>;
  parquetMetadataAsync(file: unknown): Promise<{ row_groups: Array<{ num_rows: bigint | number }> }>;
  parquetReadObjects(o: { file: unknown; rowStart: number; rowEnd: number; metadata?: unknown }): Promise<Array<Record<string, unknown>>>;
}

/** hyparquet is an ES module: import() from this CommonJS build (tsc would turn a plain import() into require()). */
const importEsm = new Function('s', 'return import(s)') as (s: string) => Promise<Hyparquet>;

/** One Parquet value as a push body value; undefined: absent. */
function value(v: unknown, file: string, row: number, column: string): unknown {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'bigint') {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw new LineError(file, row, 'invalid_event', `${column}: ${v} is outside the safe integer range`);
    return Number(v);
  }
  if (v instanceof Date) return v.getTime();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (typeof v === 'object') throw new LineError(file, row, 'invalid_event', `${column}: nested Parquet values (lists, structs) are not event fields`);
  return v;
}

/** Rows of `path` as objects, numbered from 1 (the row's number in the file). */
export async function* readParquetRows(path: string): AsyncGenerator<{ n: number; obj: Record<string, unknown> }> {
  const pq = await importEsm('hyparquet');
  let file: unknown;
  let meta: Awaited<ReturnType<Hyparquet['parquetMetadataAsync']>>;
  try {
    file = await pq.asyncBufferFromFile(path);
    meta = await pq.parquetMetadataAsync(file);
  } catch (err) {
    throw new UsageError(`${path}: not a readable Parquet file: ${(err as Error).message}`, false);
  }
  let start = 0;
  for (const group of meta.row_groups) {
    const end = start + Number(group.num_rows);
    let rows: Array<Record<string, unknown>>;
    try {
      rows = await pq.parquetReadObjects({ file, rowStart: start, rowEnd: end, metadata: meta });
    } catch (err) {
      throw new UsageError(`${path}: rows ${start + 1} to ${end}: ${(err as Error).message}`, false);
    }
    for (let i = 0; i < rows.length; i++) {
      const n = start + i + 1;
      const obj: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rows[i])) {
        const x = value(v, path, n, k);
        if (x !== undefined) obj[k] = x;
      }
      yield { n, obj };
    }
    start = end;
  }
}
