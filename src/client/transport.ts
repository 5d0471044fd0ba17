/**
 * What the Client needs from a transport: send one JSON request, get the
 * success body back or a StreamfeatError (server error envelope, unparseable
 * body, lost connection, timeout). HTTP and TCP implement it.
 */

/** The calls of the data plane (spec 4), and forget (an extension, docs/wire.md). */
export type Operation = 'ping' | 'register' | 'push' | 'get' | 'batch_get' | 'reset' | 'registry' | 'forget';

export interface Reply {
  /** The success body (JSON text). */
  body: string;
  /** HTTP only: the X-Service-Idempotent-Replay header was set (spec 4.1 rule 8). */
  replay: boolean;
}

export interface Transport {
  /** Human name of the endpoint, for messages ("http://127.0.0.1:8080"). */
  readonly endpoint: string;
  /**
   * Sends one request. `body` is the JSON text (`{}` when the call has none).
   * Rejects with a StreamfeatError; never with anything else.
   */
  send(op: Operation, body: string, timeoutMs: number): Promise<Reply>;
  /** Closes idle connections and fails queued requests; in-flight ones are destroyed. */
  close(): Promise<void>;
}
