/**
 * Coordinator thread (a one-thread piscina pool): the only writer of the registry.
 * Serializes /register and /reset, persists each new registry version to the
 * registry log before anyone sees it (apply-after-persist), and answers with the
 * new version (a wire: registry/wire.ts) for the front to install on every shard channel.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { asSfError, SfError } from '../errors';
import { createLogger } from '../log';
import { EMPTY_REGISTRY, type RegistryState } from '../registry/model';
import { wireOf, type CompiledRegistry } from '../registry/compile';
import { stateWire, type RegistryWire } from '../registry/wire';
import type { CoordinatorAnswers, CoordinatorResult, CoordinatorTask } from '../protocol/messages';
import { coordinatorInit } from '../protocol/coordinator_calls';
import { RegistryLog, readRegistryLogFacts, registryStatesOf, type RegistryLogFacts } from '../wal';
import { register } from './register';
import { parseJsonBody } from '../util/json_body';
import { encodeRegistryValue, parseRegistryValue } from '../cluster/registry_value';
import { ThreadSampler } from '../admin/thread_stats';
import { ClockFault } from '../clock';

const init = coordinatorInit();
ClockFault.install(init.clockFaultFile ?? null); // test hook only (SERVICE_FAULT_CLOCK_FILE)
const log = createLogger(init.logLevel, { thread: 'coordinator' });
const sampler = new ThreadSampler('coordinator');

let state: RegistryState = EMPTY_REGISTRY;
/** Every version since the last reset: shards replay WAL records under the version they were validated with. */
let history: RegistryState[] = [];
/** The current state compiled: a register compiles only the nodes it changes (compile.ts `previous`). */
let compiled: CompiledRegistry | null = null;
let registryLog: RegistryLog | null = null;
const logPath = join(init.dataDir, 'registry', 'registry.log');
/**
 * What the log holds, read without changing it: boot judges it with what the shards
 * recovered (wal/loss.ts) before `open` cuts a torn tail or skips damage, so a
 * refused boot leaves the file as it found it.
 */
let logFacts: RegistryLogFacts | null = null;

if (!init.memoryOnly) {
  const read = readRegistryLogFacts(logPath);
  history = read.states;
  if (history.length > 0) state = history[history.length - 1];
  logFacts = read.facts;
  log.info({ kind: 'registry.recovered', registry_version: state.version, versions: history.length, nodes: state.nodes.length });
}

/** The `open` task (messages.ts): the log for appends, and the version floor kept. */
function openLog(acceptDataLoss: boolean, versionFloor: number): { registryVersion: number; wire: RegistryWire | null } {
  if (init.memoryOnly || registryLog !== null) return { registryVersion: state.version, wire: null };
  mkdirSync(join(init.dataDir, 'registry'), { recursive: true });
  const opened = RegistryLog.open(logPath, { acceptDamage: acceptDataLoss });
  registryLog = opened.log;
  if (opened.truncatedBytes > 0) log.warn({ kind: 'registry.torn_tail', path: logPath, bytes: opened.truncatedBytes, action: 'truncated' });
  if (opened.damage.length > 0) log.error({ kind: 'registry.damage_skipped', path: logPath, damage: opened.damage, entries: opened.entries.length });
  history = registryStatesOf<RegistryState>(opened.entries);
  state = history.length > 0 ? history[history.length - 1] : EMPTY_REGISTRY;
  if (versionFloor <= state.version) return { registryVersion: state.version, wire: null };
  // The WAL or a snapshot named versions the log lost: what it still defines becomes a
  // version above all of them, so a new register never reuses a lost version number.
  const next: RegistryState = { version: versionFloor + 1, nodes: state.nodes };
  registryLog.append(next);
  log.error({ kind: 'registry.version_raised', from: state.version, to: next.version, lost_up_to: versionFloor, nodes: next.nodes.length },
    `registry versions up to ${versionFloor} named by the WAL or snapshots are not in the registry log; the registry it still holds is now version ${next.version}`);
  state = next;
  compiled = null;
  history.push(state);
  return { registryVersion: state.version, wire: stateWire(state) };
}

function persist(next: RegistryState): void {
  if (init.memoryOnly) return;
  // Boot opens the log (`open`) before any listener accepts a register.
  if (registryLog === null) throw new Error('registry log not open: a registry change before boot finished');
  try {
    registryLog.append(next);
  } catch (err) {
    log.error({ kind: 'registry.persist_failed', err });
    throw new SfError('wal_unavailable', 'registry log write failed; the registry is unchanged', { reason: String((err as Error).message ?? err) });
  }
}

/** The answer of a registry task; a new version goes out as a wire of the current state. */
function ok(body: Record<string, unknown> | null, renames: Array<[string, string]>, changed: boolean): CoordinatorResult {
  return { ok: true, wire: changed ? currentWire() : null, body, renames, changed };
}

/** The current state as a wire (from its compile's texts; a reset's empty state has no compile). */
function currentWire(): RegistryWire {
  return compiled !== null && compiled.version === state.version ? wireOf(compiled) : stateWire(state);
}

/** The thread's one entry: each task kind answers its CoordinatorAnswers type (runCoordinator on the main thread). */
export default function handle<T extends CoordinatorTask>(task: T): CoordinatorAnswers[T['kind']];
export default function handle(task: CoordinatorTask): CoordinatorAnswers[CoordinatorTask['kind']] {
  if (task.kind === 'stats') return { runtime: sampler.sample(), registryVersion: state.version, versions: history.length };
  if (task.kind === 'decode_value') {
    const v = parseRegistryValue(task.bytes);
    return { wire: stateWire(v.state), renames: v.renames, epoch: v.epoch, purgedSeq: v.purgedSeq };
  }
  try {
    switch (task.kind) {
      case 'state':
        return { ok: true, state, history, log: logFacts };
      case 'open':
        return { ok: true, ...openLog(task.acceptDataLoss, task.versionFloor) };
      case 'register': {
        const out = register(state, parseJsonBody(task.text), { memoryGovEnforce: init.memoryGovEnforce, previous: compiled });
        if (out.next === null) return ok(out.body, [], false);
        persist(out.next);
        state = out.next;
        compiled = out.compiled;
        history.push(state);
        log.info({ kind: 'registry.registered', registry_version: state.version, added: out.body.added, changed: out.body.changed });
        return ok(out.body, out.renames, true);
      }
      case 'register_on': {
        // Cluster mode: the registry lives in a JetStream KV bucket; the caller
        // compare-and-sets `value` there (src/cluster/registry.ts).
        const base = parseRegistryValue(task.base);
        const out = register(base.state, parseJsonBody(task.text), { memoryGovEnforce: init.memoryGovEnforce, previous: compiled });
        const { epoch, purgedSeq } = base;
        if (out.next === null) return { ok: true, wire: null, value: null, epoch, purgedSeq, body: out.body, renames: out.renames, changed: false };
        compiled = out.compiled;
        const value = encodeRegistryValue({ state: out.next, renames: out.renames, epoch, purgedSeq });
        return { ok: true, wire: wireOf(out.compiled), value, epoch, purgedSeq, body: out.body, renames: out.renames, changed: true };
      }
      case 'reset': {
        const next: RegistryState = { version: state.version + 1, nodes: [] };
        if (!init.memoryOnly) {
          if (registryLog === null) throw new Error('registry log not open: a registry change before boot finished');
          try {
            registryLog.rewrite([next]);
          } catch (err) {
            throw new SfError('wal_truncate_failed', 'registry log truncation failed; server state is undefined', { reason: String(err) });
          }
        }
        state = next;
        history = [next];
        compiled = null;
        log.info({ kind: 'registry.reset', registry_version: state.version });
        return ok({ status: 'ok', reset: true, registry_version: state.version }, [], true);
      }
    }
  } catch (err) {
    const e = asSfError(err);
    if (e.code === 'internal_error') log.error({ kind: 'registry.internal_error', err });
    return { ok: false, error: { code: e.code, detail: e.detail }, version: state.version };
  }
}
