/**
 * Push contexts: one per accepted push, completed when every target shard has
 * logged (and applied) it. The ack bytes are built once, when the push completes.
 */
import type { ErrorPayload } from '../protocol/messages';
import type { Sink } from './channel';
import type { DedupeEntry } from './dedupe';
import type { Reply } from './reply';

/** The ack after the LSN, for the last registry version asked (a push's ack is built on the front for every push). */
let tailVersion = -1;
let tailNew = '';
let tailReplay = '';

/**
 * `{"ack_lsn":N,"registry_version":V,"idempotent_replay":B}`. Built from a tail kept
 * per version: the template literal made six intermediate strings per ack, ~130 B of
 * the front's ~1.5 KB of garbage per push, which its scavenges pay for (bench/RESULTS.md
 * "Tail latency").
 */
export function ackBody(lsn: number, version: number, replay: boolean): string {
  if (version !== tailVersion) {
    tailNew = `,"registry_version":${version},"idempotent_replay":false}`;
    tailReplay = `,"registry_version":${version},"idempotent_replay":true}`;
    tailVersion = version;
  }
  return '{"ack_lsn":' + lsn + (replay ? tailReplay : tailNew);
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
