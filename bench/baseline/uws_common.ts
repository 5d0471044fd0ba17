/**
 * What the two uWS baselines (uws_bare, uws_hop) share, so that they differ only
 * in how a reply is produced: the body is read the way streamfeat's front reads it
 * (each chunk copied: uWS reuses the buffer), and the listener announces itself
 * with the same `server.http_bound` line streamfeat logs.
 */
import uWS from 'uWebSockets.js';

/** Calls onBody(body) once the whole body arrived, unless the request was aborted first. */
export function readBody(res: uWS.HttpResponse, isAborted: () => boolean, onBody: (body: Buffer) => void): void {
  let chunks: Buffer[] | null = null;
  res.onData((ab, isLast) => {
    const chunk = Buffer.from(new Uint8Array(ab).slice());
    if (!isLast) {
      (chunks ??= []).push(chunk);
      return;
    }
    if (isAborted()) return;
    onBody(chunks === null ? chunk : Buffer.concat([...chunks, chunk]));
  });
}

/** Listens, logs {"kind":"server.http_bound","addr":...} on stdout, exits on SIGTERM. */
export function listenAndAnnounce(app: uWS.TemplatedApp, name: string, host: string, port: number): void {
  app.listen(host, port, (token) => {
    if (token === false) {
      console.error(`${name}: cannot listen on ${host}:${port}`);
      process.exit(1);
    }
    const bound = uWS.us_socket_local_port(token);
    process.stdout.write(JSON.stringify({ kind: 'server.http_bound', addr: `${host}:${bound}` }) + '\n');
  });
  process.on('SIGTERM', () => process.exit(0));
}
