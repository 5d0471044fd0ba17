/**
 * Agent-session safety features with streamfeat.
 *
 *   node dist/examples/agent_safety.js [http://127.0.0.1:8080 | tcp://127.0.0.1:8081]
 *
 * An AI agent's tool calls are pushed as events. Per session the server keeps
 * tool calls per minute, distinct tools, the error rate, an EWMA of latency and
 * a count of risky tool calls; before each next step the agent runtime reads
 * them and decides to allow, throttle or halt the session.
 */
import { Client, StreamfeatError, agg, col, event, table } from '../src/client';
import type { FeatureRow } from '../src/client';

// ---- Feature definitions ------------------------------------------------------

export const ToolCall = event(
  'ToolCall',
  {
    call_id: String,
    session_id: String,
    agent_id: String,
    tool: String,
    status: String, // 'ok' or 'error'
    latency_ms: Number,
    tokens: 'int',
  },
  { dedupe_key: 'call_id', dedupe_window: '1h' },
);

export const RISKY_TOOLS = ['shell', 'delete_file', 'send_email', 'http_post'];

export const RiskyToolCall = ToolCall.filter(col('tool').isIn(RISKY_TOOLS)).as('RiskyToolCall');

export const SessionSafety = table('SessionSafety', {
  from: ToolCall,
  key: 'session_id',
  features: {
    calls_1m: agg.count({ window: '1m' }),
    distinct_tools_10m: agg.nUnique('tool', { window: '10m' }),
    error_rate_5m: agg.ratio(col('status').eq('error'), { window: '5m' }),
    error_streak: agg.streak({ where: col('status').eq('error') }),
    latency_ewma: agg.ewma('latency_ms', '30s'),
    latency_p90_10m: agg.quantile('latency_ms', 0.9, { window: '10m' }),
    tokens_10m: agg.sum('tokens', { window: '10m' }),
    top_tools: agg.topK('tool', { k: 3 }),
  },
});

export const SessionRisk = table('SessionRisk', {
  from: RiskyToolCall,
  key: 'session_id',
  features: {
    risky_calls_10m: agg.count({ window: '10m' }),
    risky_tools_10m: agg.nUnique('tool', { window: '10m' }),
  },
});

/** Per agent and tool (a composite key), for the end-of-run report. */
export const AgentToolUse = table('AgentToolUse', {
  from: ToolCall,
  key: ['agent_id', 'tool'],
  features: { uses_1h: agg.count({ window: '1h' }), errors_1h: agg.count({ window: '1h', where: col('status').eq('error') }) },
});

// ---- Decision rules -----------------------------------------------------------

export type Verdict = 'ALLOW' | 'THROTTLE' | 'HALT';

export interface Step {
  call_id: string;
  session_id: string;
  tool: string;
  verdict: Verdict;
  reasons: string[];
}

const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

/**
 * HALT stops the session; THROTTLE slows it down and asks a human to look.
 * (The latency rule uses the p90: an EWMA with a 30 s half-life barely moves
 * when, as in this demo, the calls arrive milliseconds apart.)
 */
export function decide(safety: FeatureRow, risk: FeatureRow): { verdict: Verdict; reasons: string[] } {
  const halt: string[] = [];
  const throttle: string[] = [];
  const calls = num(safety.calls_1m);
  const risky = num(risk.risky_calls_10m);
  if (num(safety.error_streak) >= 4) halt.push(`${num(safety.error_streak)} errors in a row`);
  if (risky >= 6) halt.push(`${risky} risky tool calls in 10m`);
  if (calls > 30) halt.push(`${calls} calls in 1m`);
  if (halt.length > 0) return { verdict: 'HALT', reasons: halt };
  if (risky >= 3) throttle.push(`${risky} risky tool calls in 10m`);
  if (calls > 15) throttle.push(`${calls} calls in 1m`);
  if (calls >= 4 && num(safety.error_rate_5m) > 0.4) throttle.push(`error rate ${(num(safety.error_rate_5m) * 100).toFixed(0)}%`);
  if (num(safety.latency_p90_10m) > 3000) throttle.push(`p90 latency ${num(safety.latency_p90_10m).toFixed(0)} ms`);
  if (throttle.length > 0) return { verdict: 'THROTTLE', reasons: throttle };
  return { verdict: 'ALLOW', reasons: [] };
}

// ---- The stream ---------------------------------------------------------------

interface Call {
  call_id: string;
  session_id: string;
  agent_id: string;
  tool: string;
  status: string;
  latency_ms: number;
  tokens: number;
}

function stream(run: string): Call[] {
  const calls: Call[] = [];
  let n = 0;
  const add = (session: string, agent: string, tool: string, status: string, latency: number, tokens: number): void => {
    calls.push({
      call_id: `${run}-c${++n}`,
      session_id: `${session}-${run}`,
      agent_id: `${agent}-${run}`,
      tool,
      status,
      latency_ms: latency,
      tokens,
    });
  };
  // A research assistant: a handful of reads and searches, quick and healthy.
  const calm = ['search', 'read_file', 'search', 'summarize', 'read_file', 'search', 'summarize', 'write_note'];
  calm.forEach((tool, i) => add('calm', 'researcher', tool, 'ok', 180 + 15 * i, 300 + 20 * i));
  // A coding agent that starts well, then loops on a failing shell command and tries to clean up.
  const runaway: Array<[string, string, number]> = [
    ['read_file', 'ok', 220], ['search', 'ok', 240], ['edit_file', 'ok', 310], ['shell', 'error', 1900],
    ['shell', 'error', 2600], ['edit_file', 'ok', 400], ['shell', 'error', 3100], ['shell', 'error', 3500],
    ['delete_file', 'ok', 150], ['shell', 'error', 4200], ['http_post', 'error', 5000], ['shell', 'error', 5200],
  ];
  runaway.forEach(([tool, status, latency]) => add('runaway', 'coder', tool, status, latency, 900));
  add('calm', 'researcher', 'search', 'ok', 190, 310);
  return calls;
}

export interface RunResult {
  steps: Step[];
  /** Final verdict per session id prefix ('calm', 'runaway'). */
  final: Record<string, Verdict>;
}

export async function run(url: string, log: (line: string) => void = console.log): Promise<RunResult> {
  const client = new Client(url);
  try {
    const reg = await client.register([SessionSafety, SessionRisk, AgentToolUse]);
    if (reg.dry_run === undefined) {
      log(`registered ${reg.added.length} new, ${reg.unchanged.length} unchanged (registry_version ${reg.registry_version})`);
    }
    const runId = Date.now().toString(36) + Math.random().toString(36).slice(2, 5);
    const steps: Step[] = [];
    const last = new Map<string, Verdict>();
    const calls = stream(runId);
    for (const call of calls) {
      await client.push(ToolCall, { ...call });
      const [safety, risk] = await client.batchGet([
        { table: SessionSafety, key: call.session_id },
        { table: SessionRisk, key: call.session_id },
      ]);
      if (safety instanceof StreamfeatError) throw safety;
      const { verdict, reasons } = decide(safety, risk instanceof StreamfeatError ? {} : risk);
      steps.push({ call_id: call.call_id, session_id: call.session_id, tool: call.tool, verdict, reasons });
      const changed = last.get(call.session_id) !== verdict;
      last.set(call.session_id, verdict);
      const why = reasons.length > 0 ? `  (${reasons.join('; ')})` : '';
      const what = `${call.session_id.padEnd(18)} ${call.tool.padEnd(11)} ${call.status.padEnd(5)} ${String(call.latency_ms).padStart(5)} ms`;
      log(`${what} -> ${verdict}${changed ? ' *' : ''}${why}`);
    }
    // End-of-run report: each session's features, then per-agent tool use through composite keys.
    const sessions = [...new Set(calls.map((c) => c.session_id))];
    for (const session of sessions) {
      const f = await client.get(SessionSafety, session);
      log(
        `${session}: calls_1m=${num(f.calls_1m)} distinct_tools=${num(f.distinct_tools_10m)} ` +
          `error_rate=${num(f.error_rate_5m).toFixed(2)} latency_ewma=${num(f.latency_ewma).toFixed(0)}ms ` +
          `tokens_10m=${num(f.tokens_10m)} top_tools=${JSON.stringify(f.top_tools)}`,
      );
    }
    const pairs = [...new Set(calls.map((c) => `${c.agent_id}\u0000${c.tool}`))].map((p) => p.split('\u0000'));
    const rows = await client.batchGet(pairs.map(([agent, tool]) => ({ table: AgentToolUse, key: [agent, tool] })));
    log('tool use per agent (1h):');
    pairs.forEach(([agent, tool], i) => {
      const r = rows[i];
      if (r instanceof StreamfeatError) log(`  ${agent} ${tool}: ${r.describe()}`);
      else log(`  ${agent.padEnd(22)} ${tool.padEnd(11)} uses=${num(r.uses_1h)} errors=${num(r.errors_1h)}`);
    });
    const final: Record<string, Verdict> = {};
    for (const [session, verdict] of last) final[session.slice(0, session.lastIndexOf('-'))] = verdict;
    return { steps, final };
  } finally {
    await client.close();
  }
}

export async function main(url: string): Promise<void> {
  await run(url);
}

if (require.main === module) {
  main(process.argv[2] ?? 'http://127.0.0.1:8080').catch((err: unknown) => {
    console.error(err instanceof StreamfeatError ? `error: ${err.describe()}` : err);
    process.exitCode = 1;
  });
}
