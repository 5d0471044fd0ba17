/**
 * Key-churn benchmark: does memory plateau when keys never come
 * back? A table keyed by session id (count over a 2 s window), its event with
 * `cold_after: "3s"`, fed `--keys` NEW session ids every `--period` seconds for
 * `--rounds` rounds over framed TCP (pipelined). The server's RSS is sampled at
 * the end of every round (just before the next one starts).
 *
 *   node dist/bench/churn.js [--rounds 6] [--keys 150000] [--period 6] [--shards 1]
 *                            [--cli dist/src/cli.js] [--table sessions|lifetime] [--extra "--memory-limit 256MB"]
 *
 * `--table lifetime` adds a lifetime count to the table, so cold entities are never
 * empty and go to the disk cold store instead of being dropped (the cost left per
 * cold entity is the index). `--cli` runs another build (e.g. main's, for the
 * before/after in bench/DECISIONS.md).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { encodeFrame, OP_PUSH } from '../src/protocol/frame';
import { killChildrenOnExit, SERVER_CLI, startServer } from './procs';
import { flagPairs } from './flags';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write('node dist/bench/churn.js [--rounds 6] [--keys 150000] [--period 6] [--shards 1] [--cli dist/src/cli.js] [--table sessions|lifetime] [--extra "--memory-limit 256MB"]\n');
  process.exit(0);
}
const args = flagPairs();
const ROUNDS = Number(args.get('rounds') ?? 6);
const KEYS = Number(args.get('keys') ?? 150_000);
const PERIOD_S = Number(args.get('period') ?? 6);
const SHARDS = Number(args.get('shards') ?? 1);
const CLI = args.get('cli') ?? SERVER_CLI;
const TABLE = args.get('table') ?? 'sessions';
const EXTRA = (args.get('extra') ?? '').split(' ').filter((a) => a !== '');
/** Pushes in flight on the connection. */
const WINDOW = 2_000;

const agg: Record<string, unknown> = { hits: { op: 'count', params: { window: '2s' } } };
if (TABLE === 'lifetime') agg.total = { op: 'count', params: {} };
const NODES = [
  { kind: 'event', name: 'Hit', schema: { fields: { sid: 'str' }, optional_fields: [] }, cold_after: '3s' },
  { kind: 'table', name: 'Sessions', upstreams: ['Hit'], key: ['sid'], agg },
];

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]) / 1024;
}

/** Pushes one event per key over one TCP connection with WINDOW pushes in flight; resolves when all are acked. */
function pushKeys(port: number, prefix: string, n: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1' });
    let sent = 0;
    let acked = 0;
    let errors = 0;
    let buf: Buffer = Buffer.alloc(0);
    const fill = (): void => {
      const parts: Buffer[] = [];
      while (sent < n && sent - acked < WINDOW) parts.push(encodeFrame(OP_PUSH, `{"event":"Hit","data":{"sid":"${prefix}${sent++}"}}`));
      if (parts.length > 0) sock.write(Buffer.concat(parts));
    };
    sock.on('connect', fill);
    sock.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      let at = 0;
      while (at + 4 <= buf.length) {
        const len = buf.readUInt32BE(at);
        if (at + 4 + len > buf.length) break;
        if (buf.readUInt16BE(at + 4) !== OP_PUSH) errors++;
        at += 4 + len;
        acked++;
      }
      buf = buf.subarray(at);
      if (acked === n) { sock.end(); resolve(errors); } else fill();
    });
    sock.on('error', reject);
  });
}

async function main(): Promise<void> {
  const srv = await startServer({ cli: CLI, shards: SHARDS, extraArgs: EXTRA });
  try {
    const reg = await fetch(`http://127.0.0.1:${srv.httpPort}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ nodes: NODES }) });
    if (reg.status !== 200) throw new Error(`register: ${reg.status} ${await reg.text()}`);
    const pid = srv.pid;
    console.log(`churn: ${ROUNDS} rounds x ${KEYS} new keys every ${PERIOD_S} s, table ${TABLE} (${Object.keys(agg).join(', ')}), shards ${SHARDS}, cli ${CLI} ${EXTRA.join(' ')}`);
    console.log(`start RSS ${rssMb(pid).toFixed(0)} MB`);
    const rss: number[] = [];
    const peaks: number[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      const t0 = Date.now();
      // RSS sampled every 200 ms too: the end-of-round figure rides a GC sawtooth, the round's peak shows the trend.
      let peak = 0;
      const sampler = setInterval(() => { peak = Math.max(peak, rssMb(pid)); }, 200);
      const errors = await pushKeys(srv.tcpPort!, `r${r}-s`, KEYS);
      const pushMs = Date.now() - t0;
      await new Promise((res) => setTimeout(res, Math.max(0, PERIOD_S * 1000 - (Date.now() - t0))));
      clearInterval(sampler);
      rss.push(rssMb(pid));
      peaks.push(Math.max(peak, rss[r - 1]));
      console.log(`round ${r}: pushed ${KEYS} in ${(pushMs / 1000).toFixed(1)} s (${errors} errors), RSS at round end ${rss[r - 1].toFixed(0)} MB, peak in round ${peaks[r - 1].toFixed(0)} MB`);
    }
    const d = (xs: number[], i: number): string => { const v = xs[i] - xs[0]; return `${v >= 0 ? '+' : ''}${v.toFixed(0)} MB`; };
    console.log(`RSS round 4 - round 1: ${d(rss, 3)} (peaks ${d(peaks, 3)}); last round - round 1: ${d(rss, rss.length - 1)} (peaks ${d(peaks, peaks.length - 1)})`);
    const sweep = srv.tail().split('\n').filter((l) => l.includes('shard.cold_evicted')).slice(-1)[0];
    if (sweep !== undefined) console.log(`last sweep: ${sweep}`);
  } finally {
    await srv.stop();
  }
}

killChildrenOnExit();
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
