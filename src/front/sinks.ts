/**
 * Who waits for shard answers: one get, one batch_get (answers gathered in request
 * order), or a countdown over every shard (reset, snapshot). A push waits in a
 * PushCtx (push.ts).
 */
import type { ErrorPayload } from '../protocol/messages';
import type { Sink } from './channel';
import type { Front } from './front';
import type { Reply } from './reply';

export class GetCtx implements Sink {
  /** `startMs`: performance.now() at arrival (latency histogram). */
  constructor(readonly reply: Reply, readonly front: Front, readonly startMs: number) {}
  done(out: string | ErrorPayload | null): void {
    if (typeof out === 'string') {
      const m = this.front.metrics;
      m.getTotal++;
      m.getLatency[this.reply.transport].observe((performance.now() - this.startMs) / 1000);
      this.reply.ok(out);
    }
    else this.front.fail(this.reply, out ?? { code: 'internal_error', detail: { message: 'no row from shard' } });
  }
}

export class BatchCtx implements Sink {
  remaining: number;
  constructor(readonly reply: Reply, readonly parts: string[], readonly front: Front, pending: number, readonly startMs: number) {
    this.remaining = pending;
  }
  done(out: string | ErrorPayload | null, tag: number): void {
    this.parts[tag] = typeof out === 'string' ? out : JSON.stringify({ error: { code: out?.code ?? 'internal_error', message: out?.detail.message } });
    if (--this.remaining === 0) this.finish();
  }
  finish(): void {
    const m = this.front.metrics;
    m.batchGetTotal++;
    m.batchGetEntriesTotal += this.parts.length;
    m.batchGetLatency[this.reply.transport].observe((performance.now() - this.startMs) / 1000);
    this.reply.ok(`{"results":[${this.parts.join(',')}]}`);
  }
}

export class CountdownSink implements Sink {
  error: ErrorPayload | null = null;
  constructor(public remaining: number, readonly onDone: (err: ErrorPayload | null) => void) {}
  done(out: string | ErrorPayload | null): void {
    if (out !== null && typeof out === 'object' && this.error === null) this.error = out;
    if (--this.remaining === 0) this.onDone(this.error);
  }
}
