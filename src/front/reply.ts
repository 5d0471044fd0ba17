/** How a request handler answers, whatever the transport (HTTP response or TCP frame slot). */
import type { ErrorCode, ErrorDetail } from '../errors';

export interface Reply {
  /** 200 with a JSON body; `replay` marks a dedupe replay (HTTP header X-Service-Idempotent-Replay: 1). */
  ok(body: string, replay?: boolean): void;
  error(code: ErrorCode, detail?: ErrorDetail, registryVersion?: number): void;
}
