/**
 * The hardening review's findings 1, 2, 3, 4 and 8 (huge names and answers, "did you
 * mean" hints, dry-run memory, registries that stall the data plane, deep derivation
 * chains), measured against any build of the server:
 *
 *   node dist/bench/hardening.js [--cli path/to/dist/src/cli.js] [--only compile,transfer,finding4,finding4big,finding8]
 *
 * Starts `serve --memory-only --test-mode --shards 2` on free 127.0.0.1 ports and
 * prints one line per finding: whether the server survived finding 1, register
 * times (2, 8), RSS growth over 120 dry runs (3), the slowest /ping during a
 * register (4, 8), with the slowest /push during re-registers and the same loops'
 * noise floor without a register (4), and the server's CPU per push through a
 * 150-deep chain (8). `compile` (in-process, this build only) prints what
 * compiling the finding 4 and 8 registries costs a front and a shard thread.
 * Run it with the --cli of a build before the fix for the baseline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { cpuTimes } from './procstat';
import { median } from './report';

const args = process.argv.slice(2);
const cli = args.includes('--cli') ? args[args.indexOf('--cli') + 1] : join(__dirname, '..', 'src', 'cli.js');

interface Srv { proc: ChildProcess; base: string }

async function start(): Promise<Srv> {
  const proc = spawn(process.execPath, [cli, 'serve', '--memory-only', '--test-mode', '--shards', '2', '--http-addr', '127.0.0.1:0', '--tcp-addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stderr!.resume();
  const rl = createInterface({ input: proc.stdout! });
  const addr = await new Promise<string>((resolve, reject) => {
    rl.on('line', (l) => {
      try {
        const j = JSON.parse(l) as { kind?: string; addr?: string };
        if (j.kind === 'server.http_bound' && j.addr !== undefined) resolve(j.addr);
      } catch { /* not JSON */ }
    });
    proc.on('exit', () => reject(new Error('server exited before binding')));
  });
  return { proc, base: `http://${addr}` };
}

async function post(s: Srv, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(s.base + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: res.status, text: await res.text() };
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) / 1024;
}

/** utime + stime of the process (or, with `tid`, of that thread), ms. */
function cpuMs(pid: number, tid: number | null = null): number {
  const c = cpuTimes(pid, tid);
  return c === null ? 0 : (c.user + c.sys) * 1000;
}

/**
 * Runs `work` while a /ping loop (every 10 ms) and, with `push`, a /push loop run
 * beside it; returns the slowest ping and push seen while `work` ran.
 */
async function slowestPing<T>(s: Srv, work: () => Promise<T>, push: unknown = null): Promise<{ result: T; ms: number; pushMs: number; workMs: number }> {
  let done = false;
  let slowest = 0;
  let slowestPush = 0;
  const loop = async (path: string, body: unknown, record: (ms: number) => void): Promise<void> => {
    while (!done) {
      const t0 = performance.now();
      try { await post(s, path, body); } catch { return; }
      record(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const loops = [loop('/ping', '', (ms) => { slowest = Math.max(slowest, ms); })];
  if (push !== null) loops.push(loop('/push', push, (ms) => { slowestPush = Math.max(slowestPush, ms); }));
  const t0 = performance.now();
  const result = await work();
  const workMs = performance.now() - t0;
  done = true;
  await Promise.all(loops);
  return { result, ms: slowest, pushMs: slowestPush, workMs };
}


const line = (s: string): void => { process.stdout.write(`${s}\n`); };

async function finding1(s: Srv): Promise<void> {
  const name = 'f'.repeat(60_000);
  const r = await post(s, '/register', { nodes: [
    { kind: 'event', name: 'Big', schema: { fields: { user: 'str' } } },
    { kind: 'table', name: 'BigT', upstreams: ['Big'], key: ['user'], agg: { [name]: { op: 'count' } } },
  ] });
  if (r.status !== 200) { line(`finding 1: register of a 60,000-char feature name -> ${r.status} ${r.text.slice(0, 120)}`); return; }
  await post(s, '/push', { event: 'Big', data: { user: 'u' } });
  let answer = '';
  try {
    const b = await post(s, '/batch_get', { requests: Array.from({ length: 10_000 }, () => ({ table: 'BigT', key: 'u' })) });
    answer = `${b.status} ${b.text.length} bytes`;
  } catch (err) { answer = String(err); }
  await new Promise((r) => setTimeout(r, 500));
  line(`finding 1: batch_get 10,000 entries -> ${answer}; server ${s.proc.exitCode === null ? 'alive' : `EXITED (code ${s.proc.exitCode})`}`);
}

async function finding2(s: Srv): Promise<void> {
  // Five 4,000-char names were refused outright after the fix; the longest allowed names show the hint cost.
  const before = await post(s, '/register', { nodes: [
    { kind: 'event', name: 'H', schema: { fields: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`${'a'.repeat(4000)}${i}`, 'str'])) } },
    { kind: 'table', name: 'HT', upstreams: ['H'], key: [`${'a'.repeat(4000)}0`], agg: { c: { op: 'count', params: { where: `${'a'.repeat(3990)}zz == 'x'` } } } },
  ] });
  const t0 = performance.now();
  const r = await post(s, '/register', { nodes: [
    { kind: 'event', name: 'H', schema: { fields: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`${'a'.repeat(4000)}${i}`, 'str'])) } },
    { kind: 'table', name: 'HT', upstreams: ['H'], key: [`${'a'.repeat(4000)}0`], agg: { c: { op: 'count', params: { where: `${'a'.repeat(3990)}zz == 'x'` } } } },
  ] });
  const ms = performance.now() - t0;
  line(`finding 2: register of five 4,000-char fields + unknown where field: ${ms.toFixed(0)} ms -> ${r.status} ${JSON.parse(r.text).error?.code ?? ''} (first call ${before.status})`);
  const fields = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`${'b'.repeat(124)}${String(i).padStart(4, '0')}`, 'str']));
  const t1 = performance.now();
  const r2 = await post(s, '/register', { nodes: [
    { kind: 'event', name: 'H2', schema: { fields } },
    { kind: 'table', name: 'HT2', upstreams: ['H2'], key: [Object.keys(fields)[0]], agg: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`c${i}`, { op: 'count', params: { where: `${'b'.repeat(128)} == 'x'` } }])) },
  ] });
  line(`finding 2: register of 1,000 128-char fields + 200 where clauses naming an unknown 128-char field: ${(performance.now() - t1).toFixed(0)} ms -> ${r2.status}`);
}

async function finding3(s: Srv): Promise<void> {
  const fields = Object.fromEntries(Array.from({ length: 999 }, (_, i) => [`field_${i}`, i % 3 === 0 ? 'bytes' : i % 3 === 1 ? 'f64' : 'str']));
  const dry = (i: number) => post(s, '/register', { dry_run: true, nodes: [{ kind: 'event', name: 'Wide', schema: { fields: { ...fields, [`extra_${i}`]: 'i64' } } }] });
  for (let i = 0; i < 5; i++) await dry(i);
  const r0 = rssMb(s.proc.pid!);
  const t0 = performance.now();
  for (let i = 5; i < 125; i++) await dry(i);
  const ms = performance.now() - t0;
  line(`finding 3: 120 dry-run registers of a 1,000-field event: RSS ${r0.toFixed(0)} -> ${rssMb(s.proc.pid!).toFixed(0)} MB, ${(ms / 120).toFixed(1)} ms per register`);
}

type Nodes = Array<Record<string, unknown>>;

/** Finding 4's registry: 40 tables x 100 where-features, 40 derived events x 20 with_columns. */
function expressionHeavy(): Nodes {
  const nodes: Nodes = [{ kind: 'event', name: 'Ev', schema: { fields: { user: 'str', a: 'f64', b: 'f64', s: 'str' } } }];
  for (let t = 0; t < 40; t++) {
    const agg = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${t}_${i}`, { op: 'sum', params: { field: 'a', window: '1h', where: `a * ${i} + b > ${t} and s != 'q${i}' or lower(s) == 'z'` } }]));
    nodes.push({ kind: 'derivation', name: `D${t}`, output_kind: 'event', upstreams: ['Ev'], ops: [{ op: 'with_columns', exprs: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x${i}`, `a * ${i} + b`])) }] });
    nodes.push({ kind: 'table', name: `T${t}`, upstreams: [`D${t}`], key: ['user'], agg });
  }
  return nodes;
}

/** Finding 8's registry: a 150-deep with_columns chain, each level feeding a table. */
function deepChain(): Nodes {
  const nodes: Nodes = [{ kind: 'event', name: 'Root', schema: { fields: { user: 'str', c0: 'i64' } } }];
  for (let i = 1; i <= 150; i++) {
    nodes.push({ kind: 'derivation', name: `D${i}`, output_kind: 'event', upstreams: [i === 1 ? 'Root' : `D${i - 1}`], ops: [{ op: 'with_columns', exprs: { [`c${i}`]: `c${i - 1} + 1` } }] });
    nodes.push({ kind: 'table', name: `T${i}`, upstreams: [`D${i}`], key: ['user'], agg: { s: { op: 'sum', params: { field: `c${i}`, window: '1h' } } } });
  }
  return nodes;
}

/**
 * In-process, this thread's CPU time (so a loaded machine inflates it far less
 * than wall time): what compiling each registry costs a thread, whole and
 * incrementally, and the longest slice of a sliced compile (what a request can
 * wait behind). Uses this build's compiler (not --cli).
 */
async function compileCost(): Promise<void> {
  const { compileRegistry, SlicedCompile } = await import('../src/registry/compile');
  const { ShardState } = await import('../src/shard/state/state');
  const REGISTRY_COMPILE_SLICE_MS = (await import('../src/limits')).REGISTRY_COMPILE_SLICE_MS;
  // This thread's run time in ns (Linux schedstat): V8's helper threads (GC, compiler) are not counted.
  const cpu = (): number => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  /** Runs a sliced job to the end, one slice per event-loop turn; its longest slice (CPU ms). */
  const longestSlice = async (job: { step(ms: number): boolean }): Promise<number> => {
    let slowest = 0;
    for (;;) {
      const c = cpu();
      const done = job.step(REGISTRY_COMPILE_SLICE_MS);
      slowest = Math.max(slowest, cpu() - c);
      if (done) return slowest;
      await new Promise((r) => setImmediate(r));
    }
  };
  const threads = { front: { memoryGovEnforce: false, pushValidators: true, features: false }, shard: { memoryGovEnforce: false, pushValidators: false } } as const;
  for (const [label, make] of [['finding 4 registry', expressionHeavy], ['finding 8 registry', deepChain]] as const) {
    for (const [thread, opts] of Object.entries(threads)) {
      const nodes = make();
      const whole: number[] = [];
      const again: number[] = [];
      const longest: number[] = [];
      for (let k = 0; k < 5; k++) {
        let c = cpu();
        const first = compileRegistry({ version: 1, nodes }, opts);
        whole.push(cpu() - c);
        c = cpu();
        compileRegistry({ version: 2, nodes: [...nodes, { kind: 'table', name: 'Extra', upstreams: [String(nodes[0].name)], key: ['user'], agg: { n: { op: 'count', params: { window: 'forever' } } } }] }, { ...opts, previous: first });
        again.push(cpu() - c);
        longest.push(await longestSlice(new SlicedCompile({ version: 3, nodes }, opts)));
      }
      line(`compile, ${label}, ${thread} thread (CPU, median of 5): whole ${median(whole).toFixed(0)} ms, again with one table more ${median(again).toFixed(1)} ms, longest ${REGISTRY_COMPILE_SLICE_MS} ms slice ${median(longest).toFixed(1)} ms`);
    }
    // A shard installing the registry from empty: inline (compile + new tables' storage in
    // one go, as every install did before) vs prepared in slices, then swapped.
    const inline: number[] = [];
    const swap: number[] = [];
    const longest: number[] = [];
    for (let k = 0; k < 5; k++) {
      const state = { version: 1, nodes: make() };
      const a = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: false });
      let c = cpu();
      a.install(state);
      inline.push(cpu() - c);
      const b = new ShardState({ shardId: 0, shardCount: 1, memoryGovEnforce: false });
      longest.push(await longestSlice(b.prepare(state)));
      c = cpu();
      b.install(state);
      swap.push(cpu() - c);
    }
    line(`install, ${label}, shard thread (CPU, median of 5): inline ${median(inline).toFixed(0)} ms; prepared: longest slice ${median(longest).toFixed(1)} ms, then the swap ${median(swap).toFixed(1)} ms`);
  }
}

/**
 * In-process, this thread's CPU: what one register of the ~10 MB limits registry
 * (one more table) costs the front in moving the registry between threads, as
 * before (the state structured-cloned: received once from the coordinator, sent
 * twice to each shard, PREPARE and INSTALL) and now (a wire: registry/wire.ts),
 * and the longest slice of the front's sliced compile from the wire.
 */
async function transferCost(): Promise<void> {
  const { MessageChannel, receiveMessageOnPort } = await import('node:worker_threads');
  const { compileRegistry, SlicedCompile, wireOf } = await import('../src/registry/compile');
  const REGISTRY_COMPILE_SLICE_MS = (await import('../src/limits')).REGISTRY_COMPILE_SLICE_MS;
  const cpu = (): number => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  const nodes = limitsRegistry();
  const front = { memoryGovEnforce: false, pushValidators: true, features: false } as const;
  const v1 = compileRegistry({ version: 1, nodes }, front);
  const v2state = { version: 2, nodes: [...nodes, { kind: 'table', name: 'Extra', upstreams: ['Ev'], key: ['user'], agg: { n: { op: 'count' } } }] };
  const { port1, port2 } = new MessageChannel();
  /** This thread's CPU to post `v` on a MessageChannel and to receive it. */
  const sendAndReceive = (v: unknown): { send: number; recv: number } => {
    let c = cpu();
    port1.postMessage(v);
    const send = cpu() - c;
    c = cpu();
    receiveMessageOnPort(port2);
    return { send, recv: cpu() - c };
  };
  const cloned: number[] = [];
  const shared: number[] = [];
  const longest: number[] = [];
  for (let k = 0; k < 5; k++) {
    const a = sendAndReceive(v2state);
    const wire = wireOf(compileRegistry(v2state, front));
    const b = sendAndReceive(wire);
    // The front: one receive (from the coordinator) + 2 sends per shard (2 shards).
    cloned.push(a.recv + 4 * a.send);
    shared.push(b.recv + 4 * b.send);
    const job = new SlicedCompile(wire, { ...front, previous: v1 });
    let slowest = 0;
    for (;;) {
      const c = cpu();
      const done = job.step(REGISTRY_COMPILE_SLICE_MS);
      slowest = Math.max(slowest, cpu() - c);
      if (done) break;
      await new Promise((r) => setImmediate(r));
    }
    longest.push(slowest);
  }
  port1.close();
  line(`transfer, ${(JSON.stringify(v2state.nodes).length / 1e6).toFixed(1)} MB registry, front thread (CPU, median of 5): structured clone (1 receive + 4 sends) ${median(cloned).toFixed(1)} ms, wire ${median(shared).toFixed(2)} ms; sliced compile from the wire: longest ${REGISTRY_COMPILE_SLICE_MS} ms slice ${median(longest).toFixed(1)} ms`);
}

async function finding4(s: Srv): Promise<void> {
  const nodes = expressionHeavy();
  const push = { event: 'Ev', data: { user: 'u1', a: 1, b: 2, s: 'x' } };
  // The noise floor of this run: the same loops with no register.
  const idle = await slowestPing(s, () => new Promise((r) => setTimeout(r, 1000)), push);
  line(`finding 4: no register (1 s): slowest /ping ${idle.ms.toFixed(0)} ms, slowest /push ${idle.pushMs.toFixed(0)} ms`);
  const first = await slowestPing(s, () => post(s, '/register', { nodes }), push);
  line(`finding 4: register of 40 tables x 100 where-features + 800 with_columns: ${first.workMs.toFixed(0)} ms, slowest concurrent /ping ${first.ms.toFixed(0)} ms, /push ${first.pushMs.toFixed(0)} ms (${first.result.status})`);
  // Each push now updates 4,000 features: the floor for the re-registers below.
  const floor = await slowestPing(s, () => new Promise((r) => setTimeout(r, 1000)), push);
  line(`finding 4: no register (1 s) with that registry in place: slowest /ping ${floor.ms.toFixed(0)} ms, slowest /push ${floor.pushMs.toFixed(0)} ms`);
  const runs: Array<{ ms: number; pushMs: number; workMs: number }> = [];
  for (let k = 0; k < 7; k++) {
    nodes.push({ kind: 'table', name: `Extra${k}`, upstreams: ['Ev'], key: ['user'], agg: { c: { op: 'count', params: { window: 'forever' } } } });
    const again = await slowestPing(s, () => post(s, '/register', { nodes }), push);
    if (again.result.status !== 200) throw new Error(`re-register: ${again.result.status} ${again.result.text.slice(0, 200)}`);
    runs.push(again);
  }
  const f = (xs: number[]): string => `median ${median(xs).toFixed(0)} / max ${Math.max(...xs).toFixed(0)} ms`;
  line(`finding 4: 7 re-registers of the same registry + one more table each: register ${f(runs.map((r) => r.workMs))}, slowest concurrent /ping ${f(runs.map((r) => r.ms))}, /push ${f(runs.map((r) => r.pushMs))}`);
}

/** ~10 MB of registry JSON: 200 tables x 100 where-features (REGISTRY_EXPRESSIONS_MAX) and a 40 KB description each. */
function limitsRegistry(): Nodes {
  const nodes: Nodes = [{ kind: 'event', name: 'Ev', schema: { fields: { user: 'str', a: 'f64', b: 'f64', s: 'str' } } }];
  const pad = 'd'.repeat(40 * 1024);
  for (let t = 0; t < 200; t++) {
    const agg = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`f${i}`, { op: 'sum', params: { field: 'a', window: '1h', where: `a * ${i} + b > ${t} and s != 'q${i}'` } }]));
    nodes.push({ kind: 'table', name: `T${t}`, description: pad, upstreams: ['Ev'], key: ['user'], agg });
  }
  return nodes;
}

/**
 * Finding 4 at the registry limits: ~10 MB of registry JSON (200 tables x 100
 * where-features = 20,000 expressions, REGISTRY_EXPRESSIONS_MAX, plus a 40 KB
 * description per table), registered in bodies under the 4 MiB cap, then
 * re-registered with one more table at a time while /ping and /push loop.
 */
async function finding4big(s: Srv): Promise<void> {
  const [ev, ...tables] = limitsRegistry();
  const bytes = JSON.stringify([ev, ...tables]).length;
  // The loops push another event (one count): a push to Ev would update 20,000 features.
  const other = [{ kind: 'event', name: 'P', schema: { fields: { user: 'str' } } }, { kind: 'table', name: 'PT', upstreams: ['P'], key: ['user'], agg: { n: { op: 'count' } } }];
  await post(s, '/register', { nodes: other });
  const t0 = performance.now();
  for (let i = 0; i < tables.length; i += 50) {
    const r = await post(s, '/register', { nodes: [ev, ...tables.slice(i, i + 50)] });
    if (r.status !== 200) throw new Error(`register: ${r.status} ${r.text.slice(0, 200)}`);
  }
  line(`finding 4 (limits): ${(bytes / 1e6).toFixed(1)} MB registry (200 tables x 100 where-features) registered in 4 bodies in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const push = { event: 'P', data: { user: 'u1' } };
  const floor = await slowestPing(s, () => new Promise((r) => setTimeout(r, 1000)), push);
  line(`finding 4 (limits): no register (1 s) with that registry in place: slowest /ping ${floor.ms.toFixed(0)} ms, slowest /push ${floor.pushMs.toFixed(0)} ms`);
  const runs: Array<{ ms: number; pushMs: number; workMs: number }> = [];
  for (let k = 0; k < 7; k++) {
    const extra = { kind: 'table', name: `Extra${k}`, upstreams: ['Ev'], key: ['user'], agg: { c: { op: 'count', params: { window: 'forever' } } } };
    const again = await slowestPing(s, () => post(s, '/register', { nodes: [ev, extra] }), push);
    if (again.result.status !== 200) throw new Error(`re-register: ${again.result.status} ${again.result.text.slice(0, 200)}`);
    runs.push(again);
  }
  const f = (xs: number[]): string => `median ${median(xs).toFixed(0)} / max ${Math.max(...xs).toFixed(0)} ms`;
  line(`finding 4 (limits): 7 registers of one more table: register ${f(runs.map((r) => r.workMs))}, slowest concurrent /ping ${f(runs.map((r) => r.ms))}, /push ${f(runs.map((r) => r.pushMs))}`);
}

async function finding8(s: Srv): Promise<void> {
  const nodes = deepChain();
  const reg = await slowestPing(s, () => post(s, '/register', { nodes }));
  if (reg.result.status !== 200) throw new Error(`register: ${reg.result.status} ${reg.result.text.slice(0, 200)}`);
  line(`finding 8: register of a 150-deep chain feeding 150 tables: ${reg.workMs.toFixed(0)} ms, slowest concurrent /ping ${reg.ms.toFixed(0)} ms (${reg.result.status})`);
  for (let i = 0; i < 50; i++) await post(s, '/push', { event: 'Root', data: { user: `u${i}`, c0: 1 } });
  const n = 2000;
  const c0 = cpuMs(s.proc.pid!);
  const f0 = cpuMs(s.proc.pid!, s.proc.pid!);
  const t0 = performance.now();
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => post(s, '/push', { event: 'Root', data: { user: `u${(i + j) % 100}`, c0: 1 } })));
  const cpu = cpuMs(s.proc.pid!) - c0;
  const front = cpuMs(s.proc.pid!, s.proc.pid!) - f0;
  line(`finding 8: ${n} pushes through the chain: server CPU ${(cpu / n).toFixed(2)} ms per push (front thread ${(front / n).toFixed(2)}, shards and the rest ${((cpu - front) / n).toFixed(2)}), ${(n / ((performance.now() - t0) / 1000)).toFixed(0)} pushes/s`);
}

async function main(): Promise<void> {
  line(`server: ${cli}`);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1].split(',') : null;
  if (only === null || only.includes('compile')) await compileCost();
  if (only === null || only.includes('transfer')) await transferCost();
  for (const f of [finding1, finding2, finding3, finding4, finding4big, finding8]) {
    if (only !== null && !only.includes(f.name)) continue;
    const s = await start();
    try {
      await f(s);
    } catch (err) {
      line(`${f.name}: failed: ${String(err)}`);
    } finally {
      s.proc.kill('SIGKILL');
    }
  }
}

void main();
