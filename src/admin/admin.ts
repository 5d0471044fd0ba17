/**
 * Admin sidecar (spec 4.7) on its own address: /health, /ready, /metrics,
 * /registry, plus the operator's views: the live dashboard at / (dashboard_page.ts)
 * and the JSON it polls (/api/stats, /api/registry, /api/inspect?table=&key=),
 * which `streamfeat info` and `streamfeat inspect` read too.
 */
import uWS from 'uWebSockets.js';
import { errorJson } from '../errors';
import { inspectEntity, registryView, statsView } from './api';
import type { AdminContext } from './context';
import { DASHBOARD_HTML } from './dashboard_page';
import type { Readiness } from '../lifecycle';
import { renderMetrics } from './render_metrics';
import { statusLine } from '../front/http_routes';

function json(res: uWS.HttpResponse, body: string, status = '200 OK'): void {
  res.writeStatus(status).writeHeader('Content-Type', 'application/json').writeHeader('Cache-Control', 'no-store').end(body);
}

/**
 * The admin listener binds before recovery (lifecycle.ts), so `getCtx` is null
 * until the front exists: /health and /ready answer from the start, the other
 * routes answer 503 {"status":"recovering"} until then.
 */
export function buildAdminApp(getCtx: () => AdminContext | null, readiness: () => Readiness): uWS.TemplatedApp {
  const app = uWS.App();
  app.get('/health', (res) => { json(res, '{"status":"ok"}'); });
  app.get('/ready', (res) => {
    const r = readiness();
    json(res, JSON.stringify(r.body), r.ready ? '200 OK' : '503 Service Unavailable');
  });
  /** A route that needs the running server. */
  const live = (handler: (ctx: AdminContext, res: uWS.HttpResponse, req: uWS.HttpRequest) => void) => (res: uWS.HttpResponse, req: uWS.HttpRequest): void => {
    const ctx = getCtx();
    if (ctx === null) json(res, JSON.stringify(readiness().body), '503 Service Unavailable');
    else handler(ctx, res, req);
  };
  app.get('/metrics', live((ctx, res) => {
    res.writeHeader('Content-Type', 'text/plain; version=0.0.4; charset=utf-8').end(renderMetrics(ctx));
  }));
  app.get('/registry', live((ctx, res) => { json(res, ctx.front.registryBody()); }));
  app.get('/', (res) => {
    res.writeHeader('Content-Type', 'text/html; charset=utf-8').writeHeader('Cache-Control', 'no-store').end(DASHBOARD_HTML);
  });
  app.get('/api/stats', live((ctx, res) => { json(res, JSON.stringify(statsView(ctx))); }));
  app.get('/api/registry', live((ctx, res) => { json(res, JSON.stringify(registryView(ctx))); }));
  app.get('/api/inspect', live((ctx, res, req) => {
    const table = req.getQuery('table') ?? '';
    const key = req.getQuery('key');
    if (table === '' || key === undefined) {
      json(res, errorJson('unsupported_request_shape', { message: 'expected /api/inspect?table=TABLE&key=KEY (a composite key as a JSON array)', path: table === '' ? 'table' : 'key' }), '400 Bad Request');
      return;
    }
    let aborted = false;
    res.onAborted(() => { aborted = true; });
    void inspectEntity(ctx, table, key).then(({ status, body }) => {
      if (aborted) return;
      res.cork(() => json(res, body, statusLine(status)));
    });
  }));
  app.any('/*', (res, req) => {
    const path = req.getUrl();
    res.writeStatus('404 Not Found').writeHeader('Content-Type', 'application/json').end(errorJson('not_found', { message: `no admin route ${path}`, path }));
  });
  return app;
}
