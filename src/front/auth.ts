/**
 * Optional shared-token authentication (docs/security.md), off unless the server
 * is started with --auth-token-file / SERVICE_AUTH_TOKEN_FILE. Transport-agnostic:
 * the HTTP engines check the `Authorization` header of every data-plane request
 * with allowsHeader(); the TCP front checks the first frame (OP_AUTH) with matches().
 *
 * Comparison is constant-time over SHA-256 digests: timingSafeEqual needs equal
 * lengths, and hashing first means neither the token's length nor a matching
 * prefix shows in the time an answer takes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AUTH_TOKEN_BYTES_MIN } from '../limits';
import { StartupError } from '../startup_error';

const BEARER = /^Bearer +(\S+) *$/i;

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export class Auth {
  readonly #digest: Buffer;

  constructor(token: string) {
    this.#digest = digest(token);
  }

  matches(presented: unknown): boolean {
    return typeof presented === 'string' && timingSafeEqual(digest(presented), this.#digest);
  }

  /** An `Authorization` header value (`''` when absent): `Bearer <token>`, scheme case-insensitive. */
  allowsHeader(header: string): boolean {
    const m = BEARER.exec(header);
    // A wrong scheme still costs a digest, so a bad header is not answered faster than a bad token.
    return this.matches(m === null ? '' : m[1]) && m !== null;
  }
}

/** Reads the token file (one line; surrounding whitespace ignored). Null path = auth off. */
export function loadAuth(file: string | null): Auth | null {
  if (file === null) return null;
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new StartupError(`cannot read the auth token file ${file}: ${(err as Error).message}`);
  }
  if (Buffer.byteLength(token) < AUTH_TOKEN_BYTES_MIN) {
    throw new StartupError(`the auth token in ${file} is shorter than ${AUTH_TOKEN_BYTES_MIN} bytes; use a random one (e.g. openssl rand -hex 32)`);
  }
  if (/\s/.test(token)) throw new StartupError(`the auth token in ${file} contains whitespace; it travels in an HTTP header`);
  return new Auth(token);
}

/** Whether `host` (a configured listen address) is reachable only from this machine. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
