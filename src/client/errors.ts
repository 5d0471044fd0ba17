/**
 * The one error class of the client library (spec 2.7 and 7.1).
 *
 * Every failure a caller can handle surfaces as a StreamfeatError and callers
 * dispatch on `code`:
 *   - server codes (src/errors.ts), read from the error envelope;
 *   - client-side codes (CLIENT_ERROR_CODES), which the server never sends;
 *   - transport failures, whose code is the Node system error code
 *     (ECONNREFUSED, ECONNRESET, EPIPE, ...; ETIMEDOUT for our own per-request
 *     timeout) and whose status is 0 because no response arrived.
 * Unknown future codes keep their string, so a `default:` branch handles them.
 */
import { ERRORS } from '../errors';
import type { ErrorCode } from '../errors';
import type { RegisterDiff } from './wire';

/** Codes raised by the client library itself; spec 7.2 says the server never sends them. */
export const CLIENT_ERROR_CODES = [
  'invalid_descriptor',
  'unparseable_error',
  'joins_not_supported',
  'unions_not_supported_in_v0',
  'svc_table_class_form_not_supported',
] as const;

export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/** Node system codes we treat as "the request may not have reached the server". */
export const CONNECTION_ERROR_CODES = [
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
] as const;

/** Server codes that spec 7.1 names retryable regardless of their status. */
export const RETRYABLE_SERVER_CODES: readonly string[] = ['wal_unavailable', 'wal_sync_timeout', 'internal_error', 'partition_unavailable'];

/** `string & {}` keeps editor completion for the known codes while allowing future ones. */
export type StreamfeatErrorCode = ErrorCode | ClientErrorCode | (string & {});

export interface ValidationItem {
  kind: string;
  path: string;
  message: string;
}

export interface StreamfeatErrorInit {
  status?: number;
  path?: string;
  reason?: string;
  diff?: RegisterDiff;
  registryVersion?: number;
  errors?: ValidationItem[];
  /** The whole `error` object as received (extra members such as `method`, `op`, `limit`). */
  detail?: Record<string, unknown>;
  cause?: unknown;
}

/** Longest raw body kept in `reason` of an unparseable_error (bodies can be whole HTML pages). */
export const UNPARSEABLE_BODY_CHARS_MAX = 512;

export class StreamfeatError extends Error {
  readonly code: StreamfeatErrorCode;
  /** HTTP status; over TCP the status the code table gives as a hint; 0 when no response arrived. */
  readonly status: number;
  readonly path: string | undefined;
  readonly reason: string | undefined;
  readonly diff: RegisterDiff | undefined;
  readonly registryVersion: number | undefined;
  /** Validation failures of spec 2.7 (empty when the server sent none). */
  readonly errors: ValidationItem[];
  readonly detail: Record<string, unknown>;

  constructor(code: StreamfeatErrorCode, message?: string, init: StreamfeatErrorInit = {}) {
    super(message ?? init.reason ?? defaultMessage(code), init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'StreamfeatError';
    this.code = code;
    this.status = init.status ?? 0;
    this.path = init.path;
    this.reason = init.reason;
    this.diff = init.diff;
    this.registryVersion = init.registryVersion;
    this.errors = init.errors ?? [];
    this.detail = init.detail ?? {};
  }

  /** True for the client-side codes of spec 7.2. */
  get isClientSide(): boolean {
    return (CLIENT_ERROR_CODES as readonly string[]).includes(this.code);
  }

  /** True when no response arrived (connection refused/reset, timeout). */
  get isConnectionError(): boolean {
    return this.status === 0 && (CONNECTION_ERROR_CODES as readonly string[]).includes(this.code);
  }

  /** "code (status): message" — the line the CLI prints. */
  describe(): string {
    const status = this.status > 0 ? ` (${this.status})` : '';
    const path = this.path === undefined ? '' : ` at ${this.path}`;
    return `${this.code}${status}: ${this.message}${path}`;
  }
}

function defaultMessage(code: string): string {
  const info = (ERRORS as Record<string, { message: string } | undefined>)[code];
  return info === undefined ? code : info.message;
}

/** The HTTP status the code table of src/errors.ts gives for a code (TCP replies carry none). */
export function statusHint(code: string): number {
  const info = (ERRORS as Record<string, { status: number } | undefined>)[code];
  return info === undefined ? 0 : info.status;
}

/**
 * Builds the error for a failed response body (HTTP non-2xx or a TCP 0xFFFF frame).
 * A body that is not the JSON envelope of spec 2.7 gives `unparseable_error`.
 */
export function errorFromBody(body: string, status: number | null): StreamfeatError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return unparseable(body, status ?? 0, 'error body is not JSON');
  }
  const envelope = asObject(parsed);
  const error = envelope === null ? null : asObject(envelope.error);
  if (envelope === null || error === null || typeof error.code !== 'string') {
    return unparseable(body, status ?? 0, 'error body has no error.code');
  }
  return errorFromEnvelope(envelope, error, error.code, status);
}

/** Turns one `{"error":{...}}` object (also a batch_get entry) into a StreamfeatError. */
export function errorFromEnvelope(
  envelope: Record<string, unknown>,
  error: Record<string, unknown>,
  code: string,
  status: number | null,
): StreamfeatError {
  const message = typeof error.message === 'string' ? error.message : undefined;
  const reason = typeof error.reason === 'string' ? error.reason : undefined;
  const rv = envelope.registry_version;
  return new StreamfeatError(code, message, {
    status: status ?? statusHint(code),
    path: typeof error.path === 'string' ? error.path : undefined,
    reason,
    diff: asObject(error.diff) === null ? undefined : (error.diff as RegisterDiff),
    registryVersion: typeof rv === 'number' ? rv : undefined,
    errors: Array.isArray(envelope.errors) ? (envelope.errors as ValidationItem[]) : undefined,
    detail: error,
  });
}

export function unparseable(body: string, status: number, why: string): StreamfeatError {
  const text = body.length > UNPARSEABLE_BODY_CHARS_MAX ? `${body.slice(0, UNPARSEABLE_BODY_CHARS_MAX)}...` : body;
  const shown = status > 0 ? ` (status ${status})` : '';
  return new StreamfeatError('unparseable_error', `server response could not be read${shown}: ${why}`, {
    status,
    reason: text,
  });
}

/** Wraps a Node socket/http error (ECONNREFUSED, ...) as a transport StreamfeatError. */
export function transportError(err: unknown): StreamfeatError {
  if (err instanceof StreamfeatError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' && e.code.length > 0 ? e.code : 'ECONNRESET';
  const text = e instanceof Error ? e.message : String(err);
  return new StreamfeatError(code, text, { status: 0, cause: err });
}

export function timeoutError(timeoutMs: number): StreamfeatError {
  return new StreamfeatError('ETIMEDOUT', `request timed out after ${timeoutMs} ms`, { status: 0 });
}

export function asObject(v: unknown): Record<string, unknown> | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}
