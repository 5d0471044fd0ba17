/**
 * The NDJSON output of the offline tools: --out FILE or stdout, written in chunks
 * of OUTPUT_CHUNK_UNITS with the stream's backpressure respected (a slow pipe
 * slows the tool down, it does not grow its memory).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { UsageError } from '../cli_args';
import { OUTPUT_CHUNK_UNITS } from '../limits';

export class OutputFile {
  #parts: Array<string | Buffer> = [];
  #units = 0;
  #error: Error | null = null;

  private constructor(readonly name: string, readonly stream: NodeJS.WritableStream, readonly owned: boolean) {
    stream.on('error', (err: Error) => { this.#error = err; });
  }

  /** --out FILE (created or truncated), or stdout for null. */
  static open(path: string | null): OutputFile {
    if (path === null || path === '-') return new OutputFile('stdout', process.stdout, false);
    const s: WriteStream = createWriteStream(path);
    return new OutputFile(path, s, true);
  }

  async write(line: string | Buffer): Promise<void> {
    this.#parts.push(line);
    this.#units += line.length;
    if (this.#units >= OUTPUT_CHUNK_UNITS) await this.#flush();
  }

  async #flush(): Promise<void> {
    if (this.#error !== null) throw new UsageError(`cannot write ${this.name}: ${this.#error.message}`, false);
    if (this.#parts.length === 0) return;
    const parts = this.#parts;
    const chunk = parts.every((p) => typeof p === 'string') ? parts.join('') : Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
    this.#parts = [];
    this.#units = 0;
    if (!this.stream.write(chunk)) await new Promise<void>((resolve) => this.stream.once('drain', resolve));
  }

  async close(): Promise<void> {
    await this.#flush();
    if (!this.owned) return;
    await new Promise<void>((resolve, reject) => (this.stream as WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())));
    if (this.#error !== null) throw new UsageError(`cannot write ${this.name}: ${this.#error.message}`, false);
  }
}
