/** Admin sidecar (spec 4.7): /health, /ready, /metrics, /registry on their own address. */
import uWS from 'uWebSockets.js';
import { errorJson } from '../errors';
import type { Front } from '../front/front';

export function buildAdminApp(front: Front, gauges: () => Record<string, number>, isReady: () => boolean): uWS.TemplatedApp {
  const app = uWS.App();
  app.get('/health', (res) => { res.writeHeader('Content-Type', 'application/json').end('{"status":"ok"}'); });
  app.get('/ready', (res) => {
    if (isReady()) res.writeHeader('Content-Type', 'application/json').end('{"status":"ready"}');
    else res.writeStatus('503 Service Unavailable').writeHeader('Content-Type', 'application/json').end('{"status":"starting"}');
  });
  app.get('/metrics', (res) => {
    res.writeHeader('Content-Type', 'text/plain; version=0.0.4; charset=utf-8').end(front.metrics.render(gauges()));
  });
  app.get('/registry', (res) => { res.writeHeader('Content-Type', 'application/json').end(front.registryBody()); });
  app.any('/*', (res, req) => {
    const path = req.getUrl();
    res.writeStatus('404 Not Found').writeHeader('Content-Type', 'application/json').end(errorJson('not_found', { message: `no admin route ${path}`, path }));
  });
  return app;
}
