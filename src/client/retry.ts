/**
 * Retry policy of spec 7.1: 5xx and the codes wal_unavailable, wal_sync_timeout
 * and internal_error are retried with exponential backoff and full jitter;
 * 4xx never. Whether a call may be retried at all, and whether a lost
 * connection counts, depends on the call (see Client), because a re-sent push
 * without a dedupe_key may be applied twice.
 *
 * Full jitter (sleep = random(0, min(cap, base * 2^attempt))) spreads the retries
 * of many clients hitting the same failing server, instead of having them
 * return in lock-step.
 */
import { RETRYABLE_SERVER_CODES, StreamfeatError } from './errors';

export interface RetryOptions {
  /** Total attempts including the first (1 disables retries). */
  maxAttempts?: number;
  /** First backoff ceiling in ms. */
  baseDelayMs?: number;
  /** Backoff ceiling in ms. */
  maxDelayMs?: number;
  /** Uniform [0,1) source; injectable so tests are deterministic. */
  random?: () => number;
}

export const RETRY_ATTEMPTS_DEFAULT = 4;
export const RETRY_BASE_DELAY_MS_DEFAULT = 50;
export const RETRY_MAX_DELAY_MS_DEFAULT = 2_000;
const STATUS_NOT_IMPLEMENTED = 501;

export class RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly random: () => number;

  constructor(opts: RetryOptions | false | undefined) {
    const o = opts === false ? { maxAttempts: 1 } : opts ?? {};
    this.maxAttempts = Math.max(1, Math.floor(o.maxAttempts ?? RETRY_ATTEMPTS_DEFAULT));
    this.baseDelayMs = Math.max(0, o.baseDelayMs ?? RETRY_BASE_DELAY_MS_DEFAULT);
    this.maxDelayMs = Math.max(this.baseDelayMs, o.maxDelayMs ?? RETRY_MAX_DELAY_MS_DEFAULT);
    this.random = o.random ?? Math.random;
  }

  /** Sleep before retry number `retry` (0 for the first retry). */
  delayMs(retry: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** Math.min(retry, 30));
    return Math.floor(this.random() * ceiling);
  }
}

/** How a call may be retried. */
export const enum Idempotence {
  /** Never re-sent (push without dedupe_key: a re-push may duplicate). */
  None = 0,
  /** Re-sent on a retryable server answer (5xx, spec 7.1 codes), not on a lost connection. */
  ServerErrors = 1,
  /** Re-sent on a retryable server answer and on a lost connection or timeout. */
  Full = 2,
}

/** True when the server answered and spec 7.1 calls the answer retryable. */
export function isRetryableServerError(err: StreamfeatError): boolean {
  if (err.status === 0) return false;
  if (RETRYABLE_SERVER_CODES.includes(err.code)) return true;
  // 501 (op_not_implemented) is permanent: asking again cannot help.
  if (err.status === STATUS_NOT_IMPLEMENTED) return false;
  return err.status >= 500 && err.status <= 599 && !isClientSideCode(err);
}

export function shouldRetry(err: unknown, idempotence: Idempotence): boolean {
  if (!(err instanceof StreamfeatError) || idempotence === Idempotence.None) return false;
  if (err.isConnectionError) return idempotence === Idempotence.Full;
  return isRetryableServerError(err);
}

function isClientSideCode(err: StreamfeatError): boolean {
  // An unparseable 5xx body (a proxy's HTML 502 page) is still a 5xx: retry it.
  return err.isClientSide && err.code !== 'unparseable_error';
}

export function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
