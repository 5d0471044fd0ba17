/**
 * A client that speaks the peer server's wire conventions (beava 0.0.6's Python
 * SDK, docs/compatibility.md), written without
 * any of our code so that it checks the server the way a migrated user's client
 * would:
 *
 *   - register payloads as the peer's SDK builds them: event nodes carry every
 *     optional setting, `null` when unset; tables are `kind: derivation` nodes
 *     with `output_kind: table`, `table_primary_key` and ops ending in
 *     `{op: group_by, keys, agg}`;
 *   - keys are JSON strings (composite keys `"a|b"`);
 *   - TCP: push sends `{event, body}`; success replies must carry the opcodes the
 *     peer's SDK checks: PING 0x0000, REGISTER 0x0001, PUSH 0x0010, and 0x0023
 *     for GET, BATCH_GET and RESET; 0xFFFF is an error whose `error.code` is read.
 *
 * Anything else is an error here, as it would be in the peer's SDK.
 */
import net from 'node:net';

export const PEER_OP = {
  PING: 0x0000,
  REGISTER: 0x0001,
  PUSH: 0x0010,
  GET: 0x0020,
  GET_RESPONSE: 0x0023,
  BATCH_GET: 0x0024,
  RESET: 0x0040,
  ERROR: 0xffff,
} as const;

/** The reply opcode the peer's SDK expects for each request opcode (0x0023 for GET, BATCH_GET and RESET). */
const EXPECTED_REPLY: Record<number, number> = {
  [PEER_OP.PING]: PEER_OP.PING,
  [PEER_OP.REGISTER]: PEER_OP.REGISTER,
  [PEER_OP.PUSH]: PEER_OP.PUSH,
  [PEER_OP.GET]: PEER_OP.GET_RESPONSE,
  [PEER_OP.BATCH_GET]: PEER_OP.GET_RESPONSE,
  [PEER_OP.RESET]: PEER_OP.GET_RESPONSE,
};

/** An error reply, dispatched on `error.code` (the peer's SDK does the same). */
export class PeerError extends Error {
  constructor(readonly code: string, readonly body: unknown, readonly status: number | null) {
    super(`${code}: ${JSON.stringify(body)}`);
  }
}

type Json = Record<string, unknown>;

/** The peer SDK's event node: every optional setting present, null when unset. */
export function peerEventNode(name: string, fields: Record<string, string>, optional: string[] = [], settings: Json = {}): Json {
  return {
    kind: 'event',
    name,
    schema: { fields, optional_fields: optional },
    dedupe_key: null,
    dedupe_window_ms: null,
    keep_events_for_ms: null,
    cold_after_ms: null,
    ...settings,
  };
}

/** The peer SDK's table: a derivation whose ops end with group_by. */
export function peerTableNode(name: string, root: string, keys: string[], agg: Json, prefixOps: Json[] = []): Json {
  return {
    kind: 'derivation',
    name,
    output_kind: 'table',
    upstreams: [root],
    ops: [...prefixOps, { op: 'group_by', keys, agg }],
    schema: null,
    table_primary_key: keys,
  };
}

/** The peer's composite key encoding: values joined by `|`. */
export function peerKey(...parts: string[]): string {
  return parts.join('|');
}

export class PeerHttp {
  constructor(readonly base: string) {}

  async #post(path: string, body: unknown): Promise<{ json: any; headers: Headers }> {
    const res = await fetch(this.base + path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    const text = await res.text();
    let json: any;
    try { json = JSON.parse(text); } catch { throw new PeerError('unparseable_error', text, res.status); }
    if (res.status !== 200) throw new PeerError(String(json?.error?.code), json, res.status);
    return { json, headers: res.headers };
  }

  async ping(): Promise<{ pong: boolean; registry_version: number; server_version: string }> {
    const { json } = await this.#post('/ping', {});
    if (json.pong !== true || typeof json.registry_version !== 'number' || typeof json.server_version !== 'string') {
      throw new PeerError('unexpected_reply', json, 200);
    }
    return json;
  }

  async register(nodes: Json[]): Promise<Json> {
    return (await this.#post('/register', { nodes, force: null, dry_run: null })).json;
  }

  async push(event: string, data: Json): Promise<{ ack_lsn: number; registry_version: number; idempotent_replay: boolean }> {
    return (await this.#post('/push', { event, data })).json;
  }

  async get(table: string, key: string, features?: string[]): Promise<Json> {
    return (await this.#post('/get', features === undefined ? { table, key } : { table, key, features })).json;
  }

  async batchGet(requests: Array<{ table: string; key: string; features?: string[] }>): Promise<Json[]> {
    const { json } = await this.#post('/batch_get', { requests });
    if (!Array.isArray(json.results)) throw new PeerError('unexpected_reply', json, 200);
    return json.results;
  }

  async reset(): Promise<{ registry_version: number; reset: boolean }> {
    return (await this.#post('/reset', {})).json;
  }
}

/** One request at a time per connection, like the peer's SDK (no request ids). */
export class PeerTcp {
  #buf = Buffer.alloc(0);
  #waiter: ((f: { op: number; ct: number; payload: Buffer }) => void) | null = null;
  #failed: Error | null = null;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.#buf = Buffer.concat([this.#buf, d]);
      this.#pump();
    });
    socket.on('error', (e) => { this.#failed = e; });
  }

  static connect(port: number): Promise<PeerTcp> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => resolve(new PeerTcp(s)));
      s.once('error', reject);
    });
  }

  #pump(): void {
    if (this.#buf.length < 4 || this.#waiter === null) return;
    const len = this.#buf.readUInt32BE(0); // counts opcode + content type + payload
    if (this.#buf.length < 4 + len) return;
    const frame = { op: this.#buf.readUInt16BE(4), ct: this.#buf.readUInt8(6), payload: this.#buf.subarray(7, 4 + len) };
    this.#buf = this.#buf.subarray(4 + len);
    const w = this.#waiter;
    this.#waiter = null;
    w(frame);
  }

  async #call(op: number, body: unknown): Promise<any> {
    if (this.#failed !== null) throw this.#failed;
    const payload = Buffer.from(JSON.stringify(body));
    const head = Buffer.alloc(7);
    head.writeUInt32BE(3 + payload.length, 0);
    head.writeUInt16BE(op, 4);
    head.writeUInt8(0x01, 6);
    const reply = new Promise<{ op: number; ct: number; payload: Buffer }>((resolve) => { this.#waiter = resolve; });
    this.socket.write(Buffer.concat([head, payload]));
    this.#pump();
    const f = await reply;
    const text = f.payload.toString('utf8');
    if (f.ct !== 0x01) throw new PeerError('unexpected_frame', `content type ${f.ct}`, null);
    const json = JSON.parse(text);
    if (f.op === PEER_OP.ERROR) throw new PeerError(String(json?.error?.code), json, null);
    if (f.op !== EXPECTED_REPLY[op]) throw new PeerError('unexpected_frame', `reply opcode 0x${f.op.toString(16)} to request 0x${op.toString(16)}: ${text}`, null);
    return json;
  }

  async ping(): Promise<{ registry_version: number; server_version: string }> {
    const json = await this.#call(PEER_OP.PING, {});
    if (typeof json.registry_version !== 'number' || typeof json.server_version !== 'string') throw new PeerError('unexpected_reply', json, null);
    return json;
  }

  register(nodes: Json[]): Promise<Json> {
    return this.#call(PEER_OP.REGISTER, { nodes, force: null, dry_run: null });
  }

  /** The peer's TCP push envelope: `body`, not `data`. */
  push(event: string, body: Json): Promise<{ ack_lsn: number; registry_version: number; idempotent_replay: boolean }> {
    return this.#call(PEER_OP.PUSH, { event, body });
  }

  get(table: string, key: string, features?: string[]): Promise<Json> {
    return this.#call(PEER_OP.GET, features === undefined ? { table, key } : { table, key, features });
  }

  async batchGet(requests: Array<Json>): Promise<Json[]> {
    const json = await this.#call(PEER_OP.BATCH_GET, { requests });
    if (!Array.isArray(json.results)) throw new PeerError('unexpected_reply', json, null);
    return json.results;
  }

  reset(): Promise<{ registry_version: number; reset: boolean }> {
    return this.#call(PEER_OP.RESET, {});
  }

  close(): void {
    this.socket.destroy();
  }
}
