/**
 * Push contexts: one per accepted push, completed when every target shard has
 * logged (and applied) it. The ack bytes are built once, when the push completes.
 */
import type { ErrorPayload } from '../protocol/messages';
import type { Sink } from './channel';
import type { DedupeEntry } from './dedupe';
import type { Reply } from './reply';

export function ackBody(lsn: number, version: number, replay: boolean): string {
  return `{"ack_lsn":${lsn},"registry_version":${version},"idempotent_replay":${replay}}`;
}

export interface PushDone {
  pushDone(ctx: PushCtx, error: ErrorPayload | null): void;
}

export class PushCtx implements Sink {
  error: ErrorPayload | null = null;
  constructor(
    readonly lsn: number,
    readonly version: number,
    readonly reply: Reply,
    public remaining: number,
    /** performance.now() at arrival. */
    readonly startMs: number,
    readonly dedupe: DedupeEntry | null,
    readonly dedupeEvent: string,
    readonly dedupeValue: string,
    readonly owner: PushDone,
  ) {}

  done(out: string | ErrorPayload | null): void {
    if (out !== null && typeof out === 'object' && this.error === null) this.error = out;
    if (--this.remaining === 0) this.owner.pushDone(this, this.error);
  }
}
