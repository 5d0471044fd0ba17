/**
 * Baseline: the least a uWebSockets.js JSON endpoint can do. Reads the body
 * the way streamfeat's front does (copy each chunk: uWS reuses the buffer),
 * parses it as JSON and answers a small JSON the size of a push ack. Every
 * HTTP ratio in the bench is streamfeat's number over this one's, measured in
 * the same run with the same load generator and the same request bodies.
 *
 * Usage: node uws_bare.js --http-addr 127.0.0.1:0   (logs server.http_bound)
 */
import uWS from 'uWebSockets.js';
import { parseBaselineArgs } from '../args';
import { listenAndAnnounce, readBody } from './uws_common';

const { host, port } = parseBaselineArgs('uws_bare', 'http-addr', process.argv.slice(2));
let seq = 0;

const app = uWS.App();
app.any('/*', (res) => {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  readBody(res, () => aborted, (body) => {
    let status = '200 OK';
    let reply: string;
    try {
      JSON.parse(body.toString('utf8'));
      reply = `{"ack_lsn":${++seq},"registry_version":1,"idempotent_replay":false}`;
    } catch {
      status = '400 Bad Request';
      reply = '{"error":{"code":"invalid_json_body","message":"body is not valid JSON"}}';
    }
    res.cork(() => {
      res.writeStatus(status).writeHeader('Content-Type', 'application/json').end(reply);
    });
  });
});
listenAndAnnounce(app, 'uws_bare', host, port);
