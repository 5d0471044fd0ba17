#!/bin/bash
# The issue-12 target table (bench/RESULTS.md "Issue 12 target table, ..." sections):
# every command the table is read from, in its order, on a quiet machine (~12 minutes).
# Run from the repository root after `npm run build`; save the output and read each
# row's median / ranges from it:  bash bench/target_table.sh > /tmp/table.txt 2>&1
set -x
# The HTTP rows are read under wrk (autocannon cannot drive the bare server on this machine):
# a fresh machine has none, so install it first (apt, as root; the fallback would make those rows void).
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; } || { echo 'wrk is required for the HTTP rows' >&2; exit 1; }
uptime
node dist/bench/run.js http-push --workload medium --duration 5 --warmup 1 --rounds 5
node dist/bench/run.js tcp-push --workload medium --connections 64 --duration 5 --warmup 1 --rounds 5
node dist/bench/run.js http-push --workload fraud --duration 5 --warmup 1 --rounds 5
node dist/bench/run.js push-latency --workload fraud --duration 5 --warmup 1 --rounds 3
node dist/bench/run.js push-latency --workload medium --duration 5 --warmup 1 --rounds 3
node --expose-gc dist/bench/memory.js
node --expose-gc dist/bench/memory.js 200000 3 --lifetime
for i in 1 2 3; do node dist/bench/recovery.js --events 1000000 --entities 100000; done
node dist/bench/replay_cpu.js --events 1000000 --entities 100000 --rounds 3
for i in 1 2 3; do node dist/bench/recovery.js --events 3000000 --entities 1000000 --load-rate 2000; done
node --expose-gc dist/bench/snapshot_pause.js --runs 3
node dist/bench/churn.js --rounds 6
# The ceilings the throughput and p99 rows are read against (bench/README.md "ceiling").
node dist/bench/run.js ceiling --workload medium --work-us 0,5 --duration 5 --warmup 1
node dist/bench/run.js ceiling --transport tcp --workload medium --connections 64 --work-us 0,5 --duration 5 --warmup 1
node dist/bench/run.js ceiling --workload fraud --work-us 10,15 --duration 5 --warmup 1
uptime
