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

/** `{"ack_lsn":` */
const ACK_PREFIX = Buffer.from('{"ack_lsn":', 'latin1');
/** The longest ack: a 16-digit LSN and a 10-digit version (u32). */
const ACK_BYTES_MAX = ACK_PREFIX.length + 16 + Buffer.byteLength(',"registry_version":,"idempotent_replay":false}') + 10;
/** The bytes of the last ackBytes(): prefix, digits, tail; rewritten in place. */
const ackBuf = Buffer.alloc(ACK_BYTES_MAX);
ACK_PREFIX.copy(ackBuf, 0);
/** One view of ackBuf per ack length, made once. */
const ackViews: Uint8Array[] = [];
/** LSN digit count and version of the tail now in ackBuf (-1: none yet). */
let bufDigits = -1;
let bufVersion = -1;
let bufTail: Buffer = Buffer.alloc(0);

/**
 * The same bytes as ackBody(lsn, version, false), written into one buffer kept by
 * this module, as a view that stays valid until the next call (the caller hands it
 * to a write that copies it at once: uWS's res.end, a TCP frame). An ack is the one
 * answer every push gets, and as a string it was ~170 B of the front's garbage per
 * push (number to string, two concatenations, the flat copy the write makes).
 */
export function ackBytes(lsn: number, version: number): Uint8Array {
  let digits = 1;
  for (let p = 10; p <= lsn; p *= 10) digits++;
  if (version !== bufVersion) {
    bufTail = Buffer.from(`,"registry_version":${version},"idempotent_replay":false}`, 'latin1');
    bufVersion = version;
    bufDigits = -1;
  }
  const at = ACK_PREFIX.length;
  if (digits !== bufDigits) {
    bufTail.copy(ackBuf, at + digits);
    bufDigits = digits;
  }
  let v = lsn;
  for (let i = at + digits - 1; i >= at; i--) {
    const q = Math.floor(v / 10);
    ackBuf[i] = 0x30 + (v - q * 10);
    v = q;
  }
  const len = at + digits + bufTail.length;
  return (ackViews[len] ??= ackBuf.subarray(0, len));
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
