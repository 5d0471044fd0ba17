/** How a request handler answers, whatever the transport (HTTP response or TCP frame slot). */
import type { ErrorCode, ErrorDetail } from '../errors';

/** Index of a transport in per-transport metrics (admin/metrics.ts); the name is its `transport` label. */
export const TRANSPORT_HTTP = 0;
export const TRANSPORT_TCP = 1;
export const TRANSPORTS = ['http', 'tcp'] as const;
export type Transport = typeof TRANSPORT_HTTP | typeof TRANSPORT_TCP;

export interface Reply {
  readonly transport: Transport;
  /** 200 with a JSON body; `replay` marks a dedupe replay (HTTP header X-Service-Idempotent-Replay: 1). */
  ok(body: string, replay?: boolean): void;
  /** 200 with a push's ack, ackBody(lsn, version, false); a transport may write it as bytes (push.ts ackBytes). */
  ack(lsn: number, version: number): void;
  error(code: ErrorCode, detail?: ErrorDetail, registryVersion?: number): void;
}
