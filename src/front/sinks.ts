/**
 * Who waits for shard answers: one get, one batch_get (answers gathered in request
 * order), or a countdown over every shard (reset, snapshot). A push waits in a
 * PushCtx (push.ts).
 */
import { RESPONSE_BYTES_MAX } from '../limits';
import type { ErrorPayload, ItemOut, ServedRowOut } from '../protocol/messages';
import { servedLine, type ServedRowLog } from '../training/served_log';
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

/** A shard's answer to a get asked with its position (GetItem.p). */
function isServedRow(out: ItemOut): out is ServedRowOut {
  return typeof out === 'object' && out !== null && typeof (out as ServedRowOut).row === 'string';
}

/**
 * One get answer the served-row log takes (the get was sampled): what its line says
 * besides the row, the read time and the position.
 */
export class ServedGet {
  constructor(
    readonly log: ServedRowLog,
    readonly tableJson: string,
    /** The canonical key as JSON: a string, or the array text of a composite key. */
    readonly keyJson: string,
    readonly version: number,
    /** The features the get named, as JSON; null: every feature. */
    readonly featuresJson: string | null,
    readonly requestIdJson: string | null,
    /** Index in its batch_get, -1 for a get. */
    readonly batchIndex: number,
  ) {}

  /**
   * The answer `row` was written; `t` and `lsn` are the shard's (t < 0: the row came
   * without them, from the key's owner in cluster mode: this node's time now, no position).
   */
  answered(row: string, t: number, lsn: number): void {
    this.log.append(servedLine(t < 0 ? Date.now() : t, this.tableJson, this.keyJson, this.version, lsn, this.featuresJson, row, this.requestIdJson, this.batchIndex));
  }
}

export class GetCtx implements Sink {
  /** `startMs`: performance.now() at arrival (latency histogram); `served`: the log entry of a sampled get, else null. */
  constructor(readonly reply: Reply, readonly front: Answers, readonly startMs: number, readonly served: ServedGet | null = null) {}
  done(out: ItemOut): void {
    let t = -1;
    let lsn = -1;
    if (isServedRow(out)) {
      t = out.t;
      lsn = out.lsn;
      out = out.row;
    }
    if (typeof out === 'string' && overResponseLimit(out.length, [out])) out = responseTooLarge('the row');
    if (typeof out === 'string') {
      const m = this.front.metrics;
      m.getTotal++;
      m.getLatency[this.reply.transport].observe((performance.now() - this.startMs) / 1000);
      this.reply.ok(out);
      // After the answer is written: the log costs the read nothing before that.
      if (this.served !== null) this.served.answered(out, t, lsn);
    }
    else this.front.fail(this.reply, (out as ErrorPayload | null) ?? { code: 'internal_error', detail: { message: 'no row from shard' } }, false);
  }
}

/** The served-row log's view of one batch_get: the sampled entries, and each one's read time and position once answered. */
export class ServedBatch {
  readonly t: Float64Array;
  readonly lsn: Float64Array;
  /** 1: the entry's row arrived (its line is written if the batch is answered). */
  readonly got: Uint8Array;
  constructor(readonly entries: ReadonlyArray<ServedGet | null>) {
    this.t = new Float64Array(entries.length).fill(-1);
    this.lsn = new Float64Array(entries.length).fill(-1);
    this.got = new Uint8Array(entries.length);
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
  constructor(readonly reply: Reply, readonly parts: string[], readonly front: Answers, pending: number, readonly startMs: number, readonly served: ServedBatch | null = null) {
    this.remaining = pending;
    for (const p of parts) if (p !== undefined) this.#units += p.length;
  }
  done(out: ItemOut, tag: number): void {
    const served = this.served;
    if (served !== null && served.entries[tag] !== null && (typeof out === 'string' || isServedRow(out))) {
      served.got[tag] = 1;
      if (typeof out !== 'string') {
        served.t[tag] = out.t;
        served.lsn[tag] = out.lsn;
      }
    }
    if (isServedRow(out)) out = out.row;
    if (!this.#tooLarge) {
      if (out !== null && typeof out === 'object' && (out as ErrorPayload).code === 'response_too_large') this.#cut();
      else {
        const e = out as ErrorPayload | null;
        const part = typeof out === 'string' ? out : JSON.stringify({ error: { code: e?.code ?? 'internal_error', message: e?.detail.message } });
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
    const served = this.served;
    if (served === null) return;
    for (let i = 0; i < served.entries.length; i++) {
      if (served.got[i] === 1) served.entries[i]!.answered(this.parts[i], served.t[i], served.lsn[i]);
    }
  }
}

export class CountdownSink implements Sink {
  error: ErrorPayload | null = null;
  constructor(public remaining: number, readonly onDone: (err: ErrorPayload | null) => void, readonly reply?: Reply) {}
  done(out: ItemOut): void {
    if (out !== null && typeof out === 'object' && this.error === null) this.error = out as ErrorPayload;
    if (--this.remaining === 0) this.onDone(this.error);
  }
}
