/**
 * The fuzz loop shared by test/fuzz/fuzz.test.ts (a bounded run in `npm test`)
 * and bench/fuzz.ts (`npm run fuzz -- --seconds N`): sends generated inputs to
 * a running server over real sockets and checks, for every one of them, that it
 * got a coded answer (an HTTP status with the spec 2.7 envelope of a code in
 * src/errors.ts, or a reply frame) or a closed connection; after each chunk that
 * the server still answers /ping on both transports; at the end that every
 * aggregate equals a shadow model fed only by the pushes the server acked.
 *
 * Input i of seed S is generated from its own PRNG (inputSeed(S, i)), so any
 * failure replays alone from (S, i).
 */
import http from 'node:http';
import net from 'node:net';
import { isDeepStrictEqual } from 'node:util';
import { ERRORS } from '../../src/errors';
import { TCP_FRAME_BYTES_MAX_DEFAULT } from '../../src/limits';
import { FrameDecoder, OP_ERROR_RESPONSE, OP_PING, OP_PUSH, OP_RESET, successOpcode, encodeFrame, CT_JSON, type Frame } from '../../src/protocol/frame';
import { prng } from '../harness/prng';
import { FUZZ_EVENT, FUZZ_KEYS, FUZZ_NODES, FUZZ_TABLE, fuzzInput, type FuzzInput, type HttpInput, type TcpInput } from './gen';

export interface FuzzTarget {
  httpPort: number;
  tcpPort: number;
  /** True while the server process runs (checked with every liveness probe). */
  alive(): boolean;
}

export interface FuzzOptions {
  seed: number;
  /** Wall-clock budget of the input loop (the final check comes after it). */
  seconds: number;
  /** Inputs in flight at once. */
  concurrency?: number;
  /** Inputs between two liveness probes. */
  chunk?: number;
  /** Stop after this many inputs (replay of a prefix); default unbounded. */
  maxInputs?: number;
  /** Only these input indices (replay of single inputs). */
  only?: number[];
  /** Progress line after each chunk. */
  onChunk?(report: FuzzReport): void;
}

export interface FuzzFailure {
  kind: 'bad_answer' | 'hang' | 'server_down' | 'lost_reply' | 'unexplained_ack' | 'aggregate_mismatch' | 'registry_changed';
  seed: number;
  /** Input index (-1 for end-of-run checks). */
  index: number;
  detail: string;
  /** The input, replayable: transport, method/path, base64 bytes (first 4 KiB). */
  input?: string;
}

export interface FuzzReport {
  seed: number;
  inputs: number;
  seconds: number;
  /** Inputs per generator category. */
  categories: Record<string, number>;
  /** Milliseconds spent per category (where the time of a run goes). */
  categoryMs: Record<string, number>;
  /** Outcomes: answers by status or error code, closed connections. */
  outcomes: Record<string, number>;
  pushesAcked: number;
  resetsApplied: number;
  keysChecked: number;
  /** Keys whose pushes had an unknown outcome (connection closed before the answer): not compared. */
  keysAmbiguous: number;
  failures: FuzzFailure[];
}

const ANSWER_TIMEOUT_MS = 20_000;
const PROBE_TIMEOUT_MS = 10_000;
const FAILURES_KEPT = 50;

export function inputSeed(seed: number, index: number): number {
  return (Math.imul(seed >>> 0, 0x9e3779b1) ^ Math.imul(index + 1, 0x85ebca6b)) >>> 0;
}

export function generate(seed: number, index: number): FuzzInput {
  return fuzzInput(prng(inputSeed(seed, index)));
}

export function describeInput(inp: FuzzInput): string {
  const b = inp.t === 'http' ? inp.body : inp.bytes;
  const head = inp.t === 'http' ? `http ${inp.method} ${inp.path} content-type=${inp.contentType}` : 'tcp';
  return `${head} [${inp.cat}] ${b.length} bytes base64:${b.subarray(0, 4096).toString('base64')}${b.length > 4096 ? '...' : ''}`;
}

/** Acked pushes per key: what /get must show at the end. */
class Shadow {
  readonly rows = new Map<string, { cnt: number; total: number; abs: number; inputs: number[] }>();
  readonly ambiguous = new Set<string>();
  acked = 0;

  add(k: string, v: number, index: number): void {
    let r = this.rows.get(k);
    if (r === undefined) this.rows.set(k, (r = { cnt: 0, total: 0, abs: 0, inputs: [] }));
    if (r.inputs.length < 8) r.inputs.push(index);
    r.cnt++;
    r.total += v;
    r.abs += Math.abs(v);
    this.acked++;
  }

  clear(): void {
    this.rows.clear();
    this.ambiguous.clear();
  }
}

/** The (event, data) a push body names, as the server reads it (JSON.parse), or null. */
function pushOf(body: Buffer, pathEvent: string | null): { event: unknown; data: any } | null {
  let j: any;
  try { j = JSON.parse(body.toString('utf8')); } catch { return null; }
  if (pathEvent !== null) return { event: pathEvent, data: j };
  if (j === null || typeof j !== 'object') return null;
  return { event: j.event, data: j.data ?? j.body };
}

function isEnvelope(j: any): boolean {
  return j !== null && typeof j === 'object' && j.error !== null && typeof j.error === 'object'
    && typeof j.error.code === 'string' && Object.prototype.hasOwnProperty.call(ERRORS, j.error.code);
}

function parse(b: Buffer): any {
  try { return JSON.parse(b.toString('utf8')); } catch { return undefined; }
}

type HttpOutcome = { kind: 'answer'; status: number; body: Buffer } | { kind: 'closed'; err: string } | { kind: 'hang' } | { kind: 'refused'; err: string };

function httpSend(agent: http.Agent, port: number, method: string, path: string, body: Buffer, contentType: string | null): Promise<HttpOutcome> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: HttpOutcome): void => { if (!done) { done = true; clearTimeout(timer); resolve(o); } };
    const headers: Record<string, string | number> = { 'content-length': body.length };
    if (contentType !== null) headers['content-type'] = contentType;
    let req: http.ClientRequest;
    try {
      req = http.request({ host: '127.0.0.1', port, method, path, agent, headers });
    } catch (err) {
      resolve({ kind: 'refused', err: String(err) });
      return;
    }
    const timer = setTimeout(() => { req.destroy(); finish({ kind: 'hang' }); }, ANSWER_TIMEOUT_MS);
    req.on('error', (err) => finish({ kind: 'closed', err: err.message }));
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => finish({ kind: 'answer', status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
      res.on('error', (err) => finish({ kind: 'closed', err: err.message }));
    });
    req.end(body);
  });
}

type TcpOutcome = { kind: 'closed'; replies: Frame[] } | { kind: 'hang'; replies: Frame[] };

/** Writes the bytes, half-closes, and reads reply frames until the server closes. */
function tcpSend(port: number, bytes: Buffer): Promise<TcpOutcome> {
  return new Promise((resolve) => {
    const replies: Frame[] = [];
    const dec = new FrameDecoder(64 * 1024 * 1024);
    let done = false;
    const s = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const finish = (o: TcpOutcome): void => { if (!done) { done = true; clearTimeout(timer); s.destroy(); resolve(o); } };
    const timer = setTimeout(() => finish({ kind: 'hang', replies }), ANSWER_TIMEOUT_MS);
    s.on('connect', () => { s.write(bytes); s.end(); });
    s.on('data', (d: Buffer) => {
      dec.push(d);
      for (let r = dec.next(); r.kind === 'frame'; r = dec.next()) replies.push(r.frame);
    });
    s.on('error', () => finish({ kind: 'closed', replies }));
    s.on('close', () => finish({ kind: 'closed', replies }));
  });
}

/** The frames the server will see in `bytes`, and whether a framing error follows them. */
function framesOf(bytes: Buffer): { frames: Frame[]; trailingError: boolean } {
  const dec = new FrameDecoder(TCP_FRAME_BYTES_MAX_DEFAULT);
  dec.push(bytes);
  const frames: Frame[] = [];
  for (;;) {
    const r = dec.next();
    if (r.kind === 'frame') { frames.push(r.frame); continue; }
    // A partial frame left at the half-close, a bad or too large length: one error frame, then close.
    return { frames, trailingError: r.kind !== 'need_more' || dec.pendingBytes > 0 };
  }
}

function isResetInput(inp: FuzzInput): boolean {
  if (inp.t === 'http') return inp.path.replace(/[?#].*$/, '').replace(/\/+$/, '') === '/reset';
  return framesOf(inp.bytes).frames.some((f) => f.op === OP_RESET);
}

export class Fuzzer {
  readonly report: FuzzReport;
  readonly #shadow = new Shadow();
  readonly #agent: http.Agent;
  #baseline: unknown = null;

  constructor(readonly target: FuzzTarget, readonly opts: FuzzOptions) {
    this.report = {
      seed: opts.seed, inputs: 0, seconds: 0, categories: {}, categoryMs: {}, outcomes: {}, pushesAcked: 0, resetsApplied: 0,
      keysChecked: 0, keysAmbiguous: 0, failures: [],
    };
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency ?? 8 });
  }

  #fail(f: Omit<FuzzFailure, 'seed'>): void {
    if (this.report.failures.length < FAILURES_KEPT) this.report.failures.push({ seed: this.opts.seed, ...f });
  }

  #count(table: Record<string, number>, k: string): void {
    table[k] = (table[k] ?? 0) + 1;
  }

  /** Registers the fuzz registry and remembers how the server describes it. */
  async setup(): Promise<void> {
    const r = await httpSend(this.#agent, this.target.httpPort, 'POST', '/register', Buffer.from(JSON.stringify({ nodes: FUZZ_NODES })), 'application/json');
    if (r.kind !== 'answer' || r.status !== 200) throw new Error(`fuzz registry not accepted: ${JSON.stringify(r.kind === 'answer' ? r.body.toString() : r)}`);
    this.#baseline = await this.#registryNodes();
  }

  async #registryNodes(): Promise<unknown> {
    const r = await httpSend(this.#agent, this.target.httpPort, 'GET', '/registry', Buffer.alloc(0), null);
    if (r.kind !== 'answer' || r.status !== 200) return null;
    const nodes = (parse(r.body)?.nodes ?? []) as Array<{ name?: string }>;
    return nodes.filter((n) => n.name === FUZZ_EVENT || n.name === FUZZ_TABLE);
  }

  async run(): Promise<FuzzReport> {
    const t0 = Date.now();
    const deadline = t0 + this.opts.seconds * 1000;
    const chunk = this.opts.chunk ?? 200;
    const conc = this.opts.concurrency ?? 8;
    const indices = this.opts.only;
    let next = 0;
    let stop = false;
    while (!stop) {
      const batch: number[] = [];
      while (batch.length < chunk) {
        if (indices !== undefined) { if (next >= indices.length) break; batch.push(indices[next++]); continue; }
        if (this.opts.maxInputs !== undefined && next >= this.opts.maxInputs) break;
        batch.push(next++);
      }
      if (batch.length === 0) break;
      const serial: Array<[number, FuzzInput]> = [];
      const parallel: Array<[number, FuzzInput]> = [];
      for (const i of batch) {
        const inp = generate(this.opts.seed, i);
        (isResetInput(inp) ? serial : parallel).push([i, inp]);
      }
      let p = 0;
      await Promise.all(Array.from({ length: conc }, async () => {
        while (p < parallel.length) {
          const [i, inp] = parallel[p++];
          await this.#one(i, inp);
        }
      }));
      // Resets change every aggregate: they run alone, so that the shadow can follow.
      for (const [i, inp] of serial) await this.#one(i, inp);
      if (!(await this.#probe())) {
        this.#fail({ kind: 'server_down', index: batch[batch.length - 1], detail: `server did not answer /ping after inputs ${batch[0]}..${batch[batch.length - 1]}` });
        break;
      }
      this.report.seconds = (Date.now() - t0) / 1000;
      this.opts.onChunk?.(this.report);
      if (Date.now() >= deadline) stop = true;
    }
    this.report.seconds = (Date.now() - t0) / 1000;
    if (this.target.alive()) await this.#finalCheck();
    this.#agent.destroy();
    return this.report;
  }

  async #one(index: number, inp: FuzzInput): Promise<void> {
    this.report.inputs++;
    this.#count(this.report.categories, inp.cat);
    const t0 = performance.now();
    if (inp.t === 'http') await this.#http(index, inp);
    else await this.#tcp(index, inp);
    this.report.categoryMs[inp.cat] = (this.report.categoryMs[inp.cat] ?? 0) + performance.now() - t0;
  }

  async #http(index: number, inp: HttpInput): Promise<void> {
    const o = await httpSend(this.#agent, this.target.httpPort, inp.method, inp.path, inp.body, inp.contentType);
    const path = inp.path.replace(/[?#].*$/, '').replace(/\/+$/, '');
    const m = /^\/push\/([^/]+)$/.exec(path);
    const pathEvent = m ? m[1] : null;
    if (o.kind === 'refused') { this.#count(this.report.outcomes, 'http:client_refused'); return; }
    if (o.kind === 'hang' || o.kind === 'closed') {
      this.#count(this.report.outcomes, `http:${o.kind}`);
      if (o.kind === 'hang') this.#fail({ kind: 'hang', index, detail: `no HTTP answer within ${ANSWER_TIMEOUT_MS} ms`, input: describeInput(inp) });
      const p = pushOf(inp.body, pathEvent);
      if (p !== null && p.event === FUZZ_EVENT && typeof p.data?.k === 'string') this.#shadow.ambiguous.add(p.data.k);
      if (path === '/reset') await this.#afterReset(true);
      return;
    }
    const j = parse(o.body);
    if (o.status === 200) {
      this.#count(this.report.outcomes, 'http:200');
      if (inp.method !== 'HEAD' && (j === undefined || j === null || typeof j !== 'object')) {
        this.#fail({ kind: 'bad_answer', index, detail: `200 with a body that is not a JSON object: ${o.body.subarray(0, 200).toString()}`, input: describeInput(inp) });
      }
      if (j?.ack_lsn !== undefined) this.#acked(index, inp, inp.body, pathEvent, j);
      if (j?.reset === true) await this.#afterReset(false);
      return;
    }
    const code = isEnvelope(j) ? j.error.code as keyof typeof ERRORS : null;
    this.#count(this.report.outcomes, `http:${o.status}:${code ?? 'no_envelope'}`);
    if (code === null || o.status < 400) {
      if (!(inp.method === 'HEAD' && o.status >= 400)) {
        this.#fail({ kind: 'bad_answer', index, detail: `HTTP ${o.status} without a spec 2.7 envelope of a known code: ${o.body.subarray(0, 300).toString()}`, input: describeInput(inp) });
      }
    } else if (ERRORS[code].status !== o.status) {
      this.#fail({ kind: 'bad_answer', index, detail: `HTTP ${o.status} carries code ${code}, whose status is ${ERRORS[code].status}`, input: describeInput(inp) });
    }
    if (path === '/reset') await this.#afterReset(true);
  }

  async #tcp(index: number, inp: TcpInput): Promise<void> {
    const o = await tcpSend(this.target.tcpPort, inp.bytes);
    const { frames, trailingError } = framesOf(inp.bytes);
    if (o.kind === 'hang') {
      this.#count(this.report.outcomes, 'tcp:hang');
      this.#fail({ kind: 'hang', index, detail: `connection not closed ${ANSWER_TIMEOUT_MS} ms after the half-close (${o.replies.length} replies to ${frames.length} frames)`, input: describeInput(inp) });
    }
    let reregister = false;
    let unknownReset = false;
    let resetVersion: number | null = null;
    for (let i = 0; i < o.replies.length; i++) {
      const rep = o.replies[i];
      const f = frames[i] as Frame | undefined;
      const j = parse(rep.payload);
      if (rep.op === OP_ERROR_RESPONSE) {
        this.#count(this.report.outcomes, `tcp:error:${isEnvelope(j) ? j.error.code : 'no_envelope'}`);
        if (!isEnvelope(j) || rep.contentType !== CT_JSON) {
          this.#fail({ kind: 'bad_answer', index, detail: `error frame ${i} without a spec 2.7 envelope of a known code: ${rep.payload.subarray(0, 300).toString()}`, input: describeInput(inp) });
        }
        if (f === undefined && !trailingError) this.#fail({ kind: 'bad_answer', index, detail: `error frame ${i} answers no frame`, input: describeInput(inp) });
        continue;
      }
      this.#count(this.report.outcomes, `tcp:ok:0x${rep.op.toString(16)}`);
      if (f === undefined || rep.op !== successOpcode(f.op) || j === undefined) {
        this.#fail({ kind: 'bad_answer', index, detail: `reply ${i} op 0x${rep.op.toString(16)} to ${f === undefined ? 'no frame' : `op 0x${f.op.toString(16)}`}: ${rep.payload.subarray(0, 300).toString()}`, input: describeInput(inp) });
        continue;
      }
      if (f.op === OP_PUSH && j?.ack_lsn !== undefined) {
        // A push pipelined behind a reset on the same connection waits for it (tcp.ts holds
        // frames behind a reset/register), so its ack can never carry the pre-reset version.
        if (resetVersion !== null && typeof j.registry_version === 'number' && j.registry_version < resetVersion) {
          this.#fail({ kind: 'bad_answer', index, detail: `push ${i} pipelined behind a reset was acked under the pre-reset registry_version ${j.registry_version}`, input: describeInput(inp) });
        } else {
          this.#acked(index, inp, f.payload, null, j);
        }
      }
      // The shadow follows the server: pushes acked after the reset (same connection) count again.
      if (f.op === OP_RESET && j?.reset === true) {
        this.#shadow.clear();
        this.report.resetsApplied++;
        reregister = true;
        resetVersion = typeof j.registry_version === 'number' ? j.registry_version : null;
      }
    }
    const expected = frames.length + (trailingError ? 1 : 0);
    if (o.replies.length < expected) {
      this.#count(this.report.outcomes, 'tcp:closed_early');
      for (const f of frames.slice(o.replies.length)) {
        const p = f.op === OP_PUSH ? pushOf(f.payload, null) : null;
        if (p !== null && p.event === FUZZ_EVENT && typeof p.data?.k === 'string') this.#shadow.ambiguous.add(p.data.k);
        if (f.op === OP_RESET) unknownReset = true;
      }
      if (o.kind === 'closed') {
        this.#fail({ kind: 'lost_reply', index, detail: `${o.replies.length} replies to ${frames.length} complete frames${trailingError ? ' and a framing error' : ''}`, input: describeInput(inp) });
      }
    } else if (o.replies.length > expected) {
      this.#fail({ kind: 'bad_answer', index, detail: `${o.replies.length} replies to ${frames.length} frames`, input: describeInput(inp) });
    }
    if (unknownReset) await this.#afterReset(true);
    else if (reregister) await this.setup();
  }

  #acked(index: number, inp: FuzzInput, body: Buffer, pathEvent: string | null, ack: any): void {
    const p = pushOf(body, pathEvent);
    if (p === null) {
      this.#fail({ kind: 'unexplained_ack', index, detail: `push acked (${JSON.stringify(ack)}) though its body is not JSON`, input: describeInput(inp) });
      return;
    }
    if (p.event !== FUZZ_EVENT || ack.idempotent_replay === true) return;
    if (typeof p.data?.k !== 'string' || typeof p.data?.v !== 'number') {
      this.#fail({ kind: 'unexplained_ack', index, detail: `push acked with k=${JSON.stringify(p.data?.k)} v=${JSON.stringify(p.data?.v)}`, input: describeInput(inp) });
      return;
    }
    this.#shadow.add(p.data.k, p.data.v, index);
    this.report.pushesAcked++;
  }

  /** After a reset (or one whose outcome is unknown): reset for sure, re-register, empty shadow. */
  async #afterReset(unknown: boolean): Promise<void> {
    if (unknown) {
      await httpSend(this.#agent, this.target.httpPort, 'POST', '/reset', Buffer.from('{}'), 'application/json');
    }
    this.#shadow.clear();
    this.report.resetsApplied++;
    await this.setup();
  }

  /** The server answers /ping on HTTP and TCP. */
  async #probe(): Promise<boolean> {
    if (!this.target.alive()) return false;
    const h = await Promise.race([
      httpSend(this.#agent, this.target.httpPort, 'POST', '/ping', Buffer.alloc(0), null),
      new Promise<null>((res) => setTimeout(() => res(null), PROBE_TIMEOUT_MS)),
    ]);
    if (h === null || h.kind !== 'answer' || h.status !== 200 || parse(h.body)?.pong !== true) return false;
    const t = await tcpSend(this.target.tcpPort, encodeFrame(OP_PING, ''));
    return t.kind === 'closed' && t.replies.length === 1 && t.replies[0].op === OP_PING;
  }

  /** Every key read back: equal to the shadow (sums within float reordering error), the registry intact. */
  async #finalCheck(): Promise<void> {
    const keys = new Set<string>([...FUZZ_KEYS, ...this.#shadow.rows.keys()]);
    for (const k of keys) {
      if (this.#shadow.ambiguous.has(k)) { this.report.keysAmbiguous++; continue; }
      this.report.keysChecked++;
      const r = await httpSend(this.#agent, this.target.httpPort, 'POST', '/get', Buffer.from(JSON.stringify({ table: FUZZ_TABLE, key: k })), 'application/json');
      const want = this.#shadow.rows.get(k);
      const got = r.kind === 'answer' ? parse(r.body) : undefined;
      if (r.kind !== 'answer' || r.status !== 200 || got === undefined) {
        // A key the server cannot read (e.g. rejected at push and get alike) must never have been acked.
        if (want !== undefined) this.#fail({ kind: 'aggregate_mismatch', index: -1, detail: `key ${JSON.stringify(k)}: /get failed (${r.kind === 'answer' ? r.body.toString() : r.kind}); shadow ${JSON.stringify(want)}` });
        continue;
      }
      const cnt = typeof got.cnt === 'number' ? got.cnt : 0;
      const total = typeof got.total === 'number' ? got.total : 0;
      const wantCnt = want?.cnt ?? 0;
      const wantTotal = want?.total ?? 0;
      const tol = 1e-9 * Math.max(1, want?.abs ?? 0);
      if (cnt !== wantCnt || Math.abs(total - wantTotal) > tol) {
        this.#fail({ kind: 'aggregate_mismatch', index: -1, detail: `key ${JSON.stringify(k)}: server ${JSON.stringify(got)}, acked pushes cnt=${wantCnt} total=${wantTotal} (inputs ${want?.inputs.join(',')})` });
      }
    }
    const nodes = await this.#registryNodes();
    if (!isDeepStrictEqual(nodes, this.#baseline)) {
      this.#fail({ kind: 'registry_changed', index: -1, detail: `fuzz nodes changed: ${JSON.stringify(nodes)} vs ${JSON.stringify(this.#baseline)}` });
    }
  }
}

/** Runs setup, the loop and the final check. */
export async function runFuzz(target: FuzzTarget, opts: FuzzOptions): Promise<FuzzReport> {
  const f = new Fuzzer(target, opts);
  await f.setup();
  return f.run();
}

/** A human summary: inputs, categories, outcomes, failures with their replay line. */
export function formatReport(r: FuzzReport): string {
  const lines = [
    `fuzz seed=${r.seed} inputs=${r.inputs} in ${r.seconds.toFixed(1)} s (${(r.inputs / Math.max(r.seconds, 1e-9)).toFixed(0)}/s); pushes acked ${r.pushesAcked}, resets ${r.resetsApplied}; keys checked ${r.keysChecked}, ambiguous ${r.keysAmbiguous}`,
    'categories: ' + Object.entries(r.categories).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v}`).join(' '),
    'slowest categories (total ms): ' + Object.entries(r.categoryMs).sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, v]) => `${k}=${v.toFixed(0)}`).join(' '),
    'outcomes: ' + Object.entries(r.outcomes).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}=${v}`).join(' '),
    `failures (crashes/hangs/wrong answers): ${r.failures.length}`,
  ];
  for (const f of r.failures) {
    lines.push(`  ${f.kind} seed=${f.seed} index=${f.index}: ${f.detail}`);
    if (f.input) lines.push(`    replay: npm run fuzz -- --seed ${f.seed} --only ${f.index}   input: ${f.input.slice(0, 600)}`);
  }
  return lines.join('\n');
}
