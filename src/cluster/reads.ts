/**
 * Reads in cluster mode (docs/cluster.md "Reads"): any node answers a get or
 * batch_get. A key of a partition this node owns is read from its local shard
 * (or answered partition_unavailable while the partition replays after a
 * takeover); a key owned elsewhere is forwarded to the owner's peer listener.
 * Forwarded items are gathered per owner per event-loop turn, so a batch_get
 * costs one internal request per owner, over pooled keep-alive connections.
 *
 * Peer protocol (internal, between nodes of one version):
 *   POST /cluster/read   body: JSON [[table, canonicalKey, features|null], ...]
 *   200, one line per item in order: "r" + row JSON, or "e" + {"code","message"}.
 * The owner answers only partitions it owns and has replayed; it never forwards
 * again, so a view that differs between two nodes cannot loop a read.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sink } from '../front/channel';
import type { Front } from '../front/front';
import type { ErrorCode } from '../errors';
import type { Logger } from '../log';
import type { ErrorPayload } from '../protocol/messages';
import type { ResolvedGet } from '../front/cluster_hooks';
import { asSfError } from '../errors';
import { CLUSTER_FORWARD_SOCKETS_MAX, CLUSTER_FORWARD_TIMEOUT_MS, CLUSTER_PEER_BODY_BYTES_MAX } from '../limits';
import { partitionOf } from '../registry/key';
import type { Feeder } from './feed';
import type { Membership } from './membership';

const PEER_READ_PATH = '/cluster/read';

function unavailable(message: string): ErrorPayload {
  return { code: 'partition_unavailable', detail: { message } };
}

interface Pending {
  items: ResolvedGet[];
  sinks: Sink[];
  tags: number[];
}

export class ReadRouter {
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: CLUSTER_FORWARD_SOCKETS_MAX });
  #pending = new Map<string, Pending>();
  #flushScheduled = false;

  constructor(readonly front: Front, readonly feeder: Feeder, readonly membership: Membership, readonly selfId: string, readonly log: Logger) {}

  read(item: ResolvedGet, sink: Sink, tag: number): void {
    const p = partitionOf(item.item.key, this.membership.partitions);
    const owner = this.membership.ownerOf(p);
    if (owner === this.selfId) { this.readLocal(item, p, sink, tag); return; }
    const peer = owner === undefined ? undefined : this.membership.live.get(owner)?.peer;
    if (peer === undefined) { sink.done(unavailable(`partition ${p} has no live owner yet; retry`), tag); return; }
    let q = this.#pending.get(peer);
    if (q === undefined) { q = { items: [], sinks: [], tags: [] }; this.#pending.set(peer, q); }
    q.items.push(item);
    q.sinks.push(sink);
    q.tags.push(tag);
    if (!this.#flushScheduled) { this.#flushScheduled = true; setImmediate(() => this.#flush()); }
  }

  /** A read of a partition this node should own: answered only once it has replayed. */
  readLocal(get: ResolvedGet, partition: number, sink: Sink, tag: number): void {
    if (!this.feeder.isReady(partition)) {
      const owned = this.membership.ownerOf(partition) === this.selfId;
      sink.done(unavailable(owned ? `partition ${partition} is replaying after a takeover; retry` : `partition ${partition} is moving between nodes; retry`), tag);
      return;
    }
    this.front.enqueue(get.shard, get.item, sink, tag);
  }

  #flush(): void {
    this.#flushScheduled = false;
    const pending = this.#pending;
    this.#pending = new Map();
    for (const [peer, q] of pending) this.#forward(peer, q);
  }

  #forward(peer: string, q: Pending): void {
    const body = JSON.stringify(q.items.map((it) => [it.table, it.item.key, it.features]));
    const [host, port] = splitHostPort(peer);
    let answered = false;
    const failAll = (why: string): void => {
      if (answered) return;
      answered = true;
      const e = unavailable(`the owner of this key (${peer}) did not answer: ${why}; retry`);
      for (let i = 0; i < q.sinks.length; i++) q.sinks[i].done(e, q.tags[i]);
    };
    const req = http.request({ host, port, path: PEER_READ_PATH, method: 'POST', agent: this.#agent, timeout: CLUSTER_FORWARD_TIMEOUT_MS,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (err) => failAll(String(err)));
      res.on('end', () => {
        if (answered) return;
        const lines = Buffer.concat(chunks).toString('utf8').split('\n');
        if (res.statusCode !== 200 || lines.length !== q.items.length) { failAll(`status ${res.statusCode}`); return; }
        answered = true;
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i];
          if (line.charCodeAt(0) === 0x72 /* r */) { q.sinks[i].done(line.slice(1), q.tags[i]); continue; }
          let e: ErrorPayload;
          try {
            const j = JSON.parse(line.slice(1)) as { code: ErrorCode; message: string };
            e = { code: j.code, detail: { message: j.message } };
          } catch {
            e = unavailable('malformed answer from the owner; retry');
          }
          q.sinks[i].done(e, q.tags[i]);
        }
      });
    });
    req.on('timeout', () => { req.destroy(new Error('timeout')); });
    req.on('error', (err) => failAll(String(err.message)));
    req.end(body);
  }

  /** The peer listener's handler: answers reads forwarded by other nodes from this node's own partitions. */
  handlePeer(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (req.method !== 'POST' || req.url !== PEER_READ_PATH) { res.writeHead(404).end(); return; }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > CLUSTER_PEER_BODY_BYTES_MAX) { res.writeHead(413).end(); req.destroy(); return; }
      chunks.push(c);
    });
    req.on('end', () => this.#answerPeer(Buffer.concat(chunks).toString('utf8'), res));
  }

  #answerPeer(body: string, res: http.ServerResponse): void {
    let list: Array<[string, string, string[] | null]>;
    try {
      list = JSON.parse(body);
      if (!Array.isArray(list)) throw new Error('not a list');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const lines: string[] = new Array(list.length);
    let remaining = list.length;
    const finish = (): void => { res.writeHead(200, { 'content-type': 'text/plain' }).end(lines.join('\n')); };
    if (remaining === 0) { finish(); return; }
    const sink: Sink = {
      done: (out: string | ErrorPayload | null, tag: number) => { // never an EXPORT answer here
        lines[tag] = typeof out === 'string' ? `r${out}` : `e${JSON.stringify({ code: out?.code ?? 'internal_error', message: out?.detail.message ?? 'no row from shard' })}`;
        if (--remaining === 0) finish();
      },
    };
    const P = this.membership.partitions;
    list.forEach(([table, key, features], i) => {
      const p = partitionOf(String(key), P);
      if (this.membership.ownerOf(p) !== this.selfId) { sink.done(unavailable(`partition ${p} is moving between nodes; retry`), i); return; }
      let get: ResolvedGet;
      try {
        // Resolved under this node's registry (the one its shards have).
        get = this.front.resolveGet(String(table), String(key), features);
      } catch (err) {
        const e = asSfError(err);
        sink.done({ code: e.code, detail: e.detail }, i);
        return;
      }
      this.readLocal(get, p, sink, i);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** Binds the internal peer listener (its address is advertised in the membership entry). */
export function listenPeer(host: string, port: number, handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => { server.off('error', reject); resolve({ server, port: (server.address() as AddressInfo).port }); });
  });
}

function splitHostPort(s: string): [string, number] {
  const i = s.lastIndexOf(':');
  return [s.slice(0, i).replace(/^\[|\]$/g, ''), Number(s.slice(i + 1))];
}
