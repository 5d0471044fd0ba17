/**
 * HTTP data plane on uWebSockets.js, the default engine (`--http-engine uws`).
 * Routes live in http_routes.ts (shared with the node:net engine); this file
 * adapts uWS: it reads the whole body (bounded by HTTP_BODY_BYTES_MAX) and
 * writes each response corked. uWS closes a connection on which a pipelined
 * request arrives while an earlier one is still answered asynchronously
 * (uNetworking/uWebSockets.js#277); pipelining clients use `--http-engine net`.
 */
import uWS from 'uWebSockets.js';
import { HTTP_BODY_BYTES_MAX } from '../limits';
import type { Metrics } from '../admin/metrics';
import type { Front } from './front';
import { bodyTooLarge, HttpReply, resolveRoute, runRoute, statusLine, type Header } from './http_routes';

class UwsReply extends HttpReply {
  aborted = false;
  constructor(readonly res: uWS.HttpResponse, metrics: Metrics) {
    super(metrics);
  }

  write(status: number, body: string, header: Header | null, close: boolean): void {
    if (this.aborted) return;
    this.aborted = true; // a response is written once
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('Content-Type', 'application/json');
      if (header !== null) this.res.writeHeader(header[0], header[1]);
      this.res.end(body, close);
    });
  }
}

export function buildHttpApp(front: Front): uWS.TemplatedApp {
  const app = uWS.App();
  app.any('/*', (res, req) => {
    const reply = new UwsReply(res, front.metrics);
    res.onAborted(() => { reply.aborted = true; });
    const route = resolveRoute(front, req.getCaseSensitiveMethod(), req.getUrl(), reply, req.getHeader('authorization'));
    if (route === null) return;
    const contentType = req.getHeader('content-type');
    if (!route.readsBody) { runRoute(front, route, '', reply, contentType); return; }
    const declared = Number(req.getHeader('content-length') || '0');
    if (declared > HTTP_BODY_BYTES_MAX) { bodyTooLarge(reply, declared); return; }
    let chunks: Buffer[] | null = null;
    let size = 0;
    res.onData((ab, isLast) => {
      if (reply.aborted) return;
      size += ab.byteLength;
      if (size > HTTP_BODY_BYTES_MAX) { bodyTooLarge(reply, null); return; }
      // uWS reuses the ArrayBuffer after this callback. A body in one chunk (the
      // common case) is decoded straight from it; earlier chunks are copied.
      if (!isLast) { (chunks ??= []).push(Buffer.from(ab.slice(0))); return; }
      const body = chunks === null ? Buffer.from(ab).toString('utf8') : Buffer.concat([...chunks, Buffer.from(ab)]).toString('utf8');
      runRoute(front, route, body, reply, contentType);
    });
  });
  return app;
}
