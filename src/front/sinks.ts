/**
 * Who waits for shard answers: one get, one batch_get (answers gathered in request
 * order), or a countdown over every shard (reset, snapshot). A push waits in a
 * PushCtx (push.ts).
 */
import { RESPONSE_BYTES_MAX } from '../limits';
import type { ErrorPayload } from '../protocol/messages';
import type { Metrics } from '../admin/metrics';
import type { Sink } from './channel';
import type { Reply } from './reply';

/** What a get or batch_get answer needs of the front (Front implements it; no import of front.ts). */
export interface Answers {
  readonly metrics: Metrics;
  /** Answers an error; the get family passes withVersion false (no registry_version). */
  fail(reply: Reply, e: ErrorPayload, withVersion?: boolean): void;
}

/**
 * UTF-8 bytes of `parts`, exact only when it matters: UTF-16 units never exceed
 * UTF-8 bytes and one unit is at most 3 bytes, so texts under a third of the
 * limit are known to fit without measuring.
 */
export function overResponseLimit(units: number, parts: readonly string[], limit = RESPONSE_BYTES_MAX): boolean {
  if (units > limit) return true;
  if (units * 3 <= limit) return false;
  let bytes = 0;
  for (const p of parts) if (p !== undefined) bytes += Buffer.byteLength(p);
  return bytes > limit;
}

export function responseTooLarge(what: string): ErrorPayload {
  return { code: 'response_too_large', detail: { message: `${what} is over the ${RESPONSE_BYTES_MAX}-byte response limit (RESPONSE_BYTES_MAX); ask for fewer entries or features` } };
}

export class GetCtx implements Sink {
  /** `startMs`: performance.now() at arrival (latency histogram). */
  constructor(readonly reply: Reply, readonly front: Answers, readonly startMs: number) {}
  done(out: string | ErrorPayload | null): void {
    if (typeof out === 'string' && overResponseLimit(out.length, [out])) out = responseTooLarge('the row');
    if (typeof out === 'string') {
      const m = this.front.metrics;
      m.getTotal++;
      m.getLatency[this.reply.transport].observe((performance.now() - this.startMs) / 1000);
      this.reply.ok(out);
    }
    else this.front.fail(this.reply, out ?? { code: 'internal_error', detail: { message: 'no row from shard' } }, false);
  }
}

/**
 * Answers of one batch_get in request order. The answer is bounded: once the rows
 * gathered pass RESPONSE_BYTES_MAX (or a shard cut the batch short), the rows are
 * dropped as they come and the request gets response_too_large.
 */
export class BatchCtx implements Sink {
  remaining: number;
  #units = 0;
  #tooLarge = false;
  constructor(readonly reply: Reply, readonly parts: string[], readonly front: Answers, pending: number, readonly startMs: number) {
    this.remaining = pending;
    for (const p of parts) if (p !== undefined) this.#units += p.length;
  }
  done(out: string | ErrorPayload | null, tag: number): void {
    if (!this.#tooLarge) {
      if (out !== null && typeof out === 'object' && out.code === 'response_too_large') this.#cut();
      else {
        const part = typeof out === 'string' ? out : JSON.stringify({ error: { code: out?.code ?? 'internal_error', message: out?.detail.message } });
        this.parts[tag] = part;
        this.#units += part.length + 1;
        if (this.#units > RESPONSE_BYTES_MAX) this.#cut();
      }
    }
    if (--this.remaining === 0) this.finish();
  }
  #cut(): void {
    this.#tooLarge = true;
    this.parts.fill(''); // the rows are not needed any more
  }
  finish(): void {
    if (!this.#tooLarge && overResponseLimit(this.#units, this.parts)) this.#cut();
    if (this.#tooLarge) {
      this.front.fail(this.reply, responseTooLarge(`the answer to ${this.parts.length} entries`), false);
      return;
    }
    const m = this.front.metrics;
    m.batchGetTotal++;
    m.batchGetEntriesTotal += this.parts.length;
    m.batchGetLatency[this.reply.transport].observe((performance.now() - this.startMs) / 1000);
    this.reply.ok(`{"results":[${this.parts.join(',')}]}`);
  }
}

export class CountdownSink implements Sink {
  error: ErrorPayload | null = null;
  constructor(public remaining: number, readonly onDone: (err: ErrorPayload | null) => void, readonly reply?: Reply) {}
  done(out: string | ErrorPayload | null): void {
    if (out !== null && typeof out === 'object' && this.error === null) this.error = out;
    if (--this.remaining === 0) this.onDone(this.error);
  }
}
