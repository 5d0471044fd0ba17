/**
 * Push contexts: one per accepted push, completed when every target shard has
 * logged (and applied) it. The ack bytes are built once, when the push completes.
 */
import type { ErrorPayload } from '../protocol/messages';
import type { Sink } from './channel';
import type { DedupeEntry } from './dedupe';
import { TRANSPORT_HTTP, type Reply } from './reply';
import { PUSH_CTX_POOL_MAX } from '../limits';

/** The ack after the LSN, for the last registry version asked (a push's ack is built on the front for every push). */
let tailVersion = -1;
let tailNew = '';
let tailReplay = '';

/**
 * `{"ack_lsn":N,"registry_version":V,"idempotent_replay":B}`. Built from a tail kept
 * per version: the template literal made six intermediate strings per ack, ~130 B of
 * the front's ~1.5 KB of garbage per push, which its scavenges pay for (bench/DECISIONS.md
 * "The push path on the front").
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

/**
 * One accepted push until every target shard has answered. The front reuses them
 * (PushCtxPool): fields are set by the constructor or reset(), and nothing may keep
 * a context after its pushDone() returned.
 */
export class PushCtx implements Sink {
  error: ErrorPayload | null = null;
  constructor(
    public lsn: number,
    public version: number,
    public reply: Reply,
    public remaining: number,
    /** performance.now() at arrival. */
    public startMs: number,
    public dedupe: DedupeEntry | null,
    public dedupeEvent: string,
    public dedupeValue: string,
    readonly owner: PushDone,
  ) {}

  done(out: string | ErrorPayload | null): void {
    if (out !== null && typeof out === 'object' && this.error === null) this.error = out;
    if (--this.remaining === 0) this.owner.pushDone(this, this.error);
  }
}

/** Answered push contexts of one owner, for its next pushes (at most PUSH_CTX_POOL_MAX). */
export class PushCtxPool {
  readonly #free: PushCtx[] = [];
  constructor(readonly owner: PushDone) {}

  take(lsn: number, version: number, reply: Reply, remaining: number, startMs: number, dedupe: DedupeEntry | null, dedupeEvent: string, dedupeValue: string): PushCtx {
    const c = this.#free.pop();
    if (c === undefined) return new PushCtx(lsn, version, reply, remaining, startMs, dedupe, dedupeEvent, dedupeValue, this.owner);
    c.lsn = lsn;
    c.version = version;
    c.reply = reply;
    c.remaining = remaining;
    c.startMs = startMs;
    c.dedupe = dedupe;
    c.dedupeEvent = dedupeEvent;
    c.dedupeValue = dedupeValue;
    c.error = null;
    return c;
  }

  /** `c` is answered and referenced nowhere else: keep it (its request and dedupe entry are let go). */
  give(c: PushCtx): void {
    if (this.#free.length >= PUSH_CTX_POOL_MAX || c.owner !== this.owner) return;
    c.reply = NO_REPLY;
    c.dedupe = null;
    c.error = null;
    this.#free.push(c);
  }
}

/** What a pooled context holds instead of the request it answered (never called). */
const NO_REPLY: Reply = {
  transport: TRANSPORT_HTTP,
  ok(): void { throw new Error('a pooled push context answered a request'); },
  ack(): void { throw new Error('a pooled push context answered a request'); },
  error(): void { throw new Error('a pooled push context answered a request'); },
};
