/**
 * The bounded fuzz run of `npm test`: seeded HTTP bodies and TCP
 * frames against the real server (--memory-only --test-mode, 2 shards). Every
 * input gets a coded answer or a closed connection, the server answers /ping
 * after every chunk, and every aggregate equals what the acked pushes imply.
 * SF_FUZZ_SECONDS / SF_FUZZ_SEED change the budget and the seed; the long run
 * is `npm run fuzz -- --seconds N [--seed S]` (bench/fuzz.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverForFile } from '../harness/server';
import { formatReport, runFuzz } from './engine';

/** Well inside the suite's budget: the file runs next to another one on 2 cores. */
const SECONDS = Number(process.env.SF_FUZZ_SECONDS ?? 20);
const SEED = Number(process.env.SF_FUZZ_SEED ?? 11);

const srv = serverForFile({ memoryOnly: true, shards: 2 });

test(`fuzz: ${SECONDS} s of seeded HTTP and TCP inputs (seed ${SEED}) get coded answers and change nothing but acked pushes`, { timeout: (SECONDS + 120) * 1000 }, async () => {
  const report = await runFuzz(
    { httpPort: srv.httpPort, tcpPort: srv.tcpPort, alive: () => srv.proc.exitCode === null && srv.proc.signalCode === null },
    { seed: SEED, seconds: SECONDS, concurrency: 8 },
  );
  const text = formatReport(report);
  console.log(text);
  assert.equal(srv.proc.exitCode, null, `server exited\n${text}`);
  assert.deepEqual(report.failures, [], text);
  // The run really exercised the server (the first 200 inputs of seed 11 hold each family
  // below; a loaded machine still gets through them): pushes acked and read back.
  assert.ok(report.inputs >= 200, text);
  assert.ok(report.pushesAcked >= 10, text);
  assert.ok(report.keysChecked >= 10, text);
  const families = SEED === 11
    ? ['http_push_valid', 'tcp_push_valid', 'http_get_text_mutation', 'tcp_random_bytes', 'tcp_stream_mutation', 'http_register_tree_mutation', 'http_odd_method', 'tcp_odd_op']
    : [];
  for (const fam of families) {
    assert.ok((report.categories[fam] ?? 0) > 0, `category ${fam} tried\n${text}`);
  }
});
