#!/bin/bash
# The target table (bench/CURRENT.md): every command its rows are read from, in the
# table's order (~12 minutes on a quiet 2-core machine), then bench/current_table.js,
# which writes the page from their output, so the page is never copied by hand.
# Run it from the repository root after `npm run build`, alone on the machine (other
# jobs' load makes the figures low and spread; the page says how busy it was):
#
#   bash bench/target_table.sh             # writes bench/CURRENT.md; raw output in a temp dir
#   bash bench/target_table.sh DIR         # keeps the raw output in DIR
#   bash bench/target_table.sh --smoke DIR # every command on tiny sizes, page in DIR/CURRENT.md
#                                          # (part of `npm run bench -- smoke`: the page's reader must not rot)
set -euo pipefail
SMOKE=0
if [ "${1:-}" = --smoke ]; then SMOKE=1; shift; fi
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/streamfeat-table.XXXXXX")}
mkdir -p "$DIR"
rm -f "$DIR/results.jsonl"

# The HTTP rows are read under wrk (autocannon cannot drive the bare server on this machine):
# a fresh machine has none, so install it first (apt, as root; the fallback would make those rows void).
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; } >/dev/null 2>&1 || { echo 'wrk is required for the HTTP rows' >&2; exit 1; }

if [ "$SMOKE" = 1 ]; then
  LOAD=(--duration 1 --warmup 0 --entities 10000 --connections 4 --check)
  R5=(--rounds 1); R3=(--rounds 1); C64=()
  MEM=(2000 3); REPEAT=1
  REC1=(--events 20000 --entities 2000); REPLAY=(--events 20000 --entities 2000 --rounds 1)
  REC3=(--events 30000 --entities 10000 --load-rate 500)
  PAUSE=(--runs 1 --entities 5000); CHURN=(--rounds 4 --keys 2000 --period 0.5)
  W_MED=0; W_FRAUD=10
  OUT=(--check --out "$DIR/CURRENT.md")
else
  LOAD=(--duration 5 --warmup 1)
  R5=(--rounds 5); R3=(--rounds 3); C64=(--connections 64)
  MEM=(); REPEAT=3
  REC1=(--events 1000000 --entities 100000); REPLAY=(--events 1000000 --entities 100000 --rounds 3)
  REC3=(--events 3000000 --entities 1000000 --load-rate 2000)
  PAUSE=(--runs 3); CHURN=(--rounds 6)
  W_MED=0,5; W_FRAUD=10,15
  OUT=(--out bench/CURRENT.md)
fi

# One command's output into DIR/NAME.txt (appended: repeated commands read as one file).
# The measure runs them one at a time; the smoke, which measures nothing, two at a time.
PIDS=()
one() {
  local name=$1; shift
  if ! "$@" >> "$DIR/$name.txt" 2>&1; then
    echo "failed: $* (last lines of $DIR/$name.txt:)" >&2
    tail -20 "$DIR/$name.txt" >&2
    return 1
  fi
}
run() {
  echo "+ ${*:2}" >&2
  if [ "$SMOKE" = 1 ]; then
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 0.1; done
    one "$@" &
    PIDS+=($!)
  else
    one "$@" || exit 1
  fi
}

for f in "$DIR"/*.txt; do [ -e "$f" ] && rm -f "$f"; done
date -u '+%Y-%m-%d %H:%M UTC' > "$DIR/started.txt"
{ git rev-parse --short HEAD 2>/dev/null || echo unknown; } | tr -d '\n' > "$DIR/commit.txt"
# Uncommitted changes to what runs (Markdown pages do not change a figure).
[ -n "$(git status --porcelain --untracked-files=no -- . ':(exclude)*.md' 2>/dev/null)" ] && echo -n ' (with uncommitted changes)' >> "$DIR/commit.txt"
uptime > "$DIR/uptime_before.txt"

J=(--json "$DIR/results.jsonl")
run http_medium node dist/bench/run.js http-push --workload medium "${LOAD[@]}" "${R5[@]}" "${J[@]}"
run tcp_medium node dist/bench/run.js tcp-push --workload medium "${C64[@]}" "${LOAD[@]}" "${R5[@]}" "${J[@]}"
run http_fraud node dist/bench/run.js http-push --workload fraud "${LOAD[@]}" "${R5[@]}" "${J[@]}"
run p99_fraud node dist/bench/run.js push-latency --workload fraud "${LOAD[@]}" "${R3[@]}" "${J[@]}"
run p99_medium node dist/bench/run.js push-latency --workload medium "${LOAD[@]}" "${R3[@]}" "${J[@]}"
run memory node --expose-gc dist/bench/memory.js "${MEM[@]}"
run memory_lifetime node --expose-gc dist/bench/memory.js "${MEM[@]}" --lifetime
for _ in $(seq "$REPEAT"); do run recovery_1m node dist/bench/recovery.js "${REC1[@]}"; done
run replay_cpu node dist/bench/replay_cpu.js "${REPLAY[@]}"
for _ in $(seq "$REPEAT"); do run recovery_3m node dist/bench/recovery.js "${REC3[@]}"; done
run snapshot_pause node --expose-gc dist/bench/snapshot_pause.js "${PAUSE[@]}"
run churn node dist/bench/churn.js "${CHURN[@]}"
# The ceilings the throughput and p99 rows are read against (bench/README.md "ceiling").
run ceiling_http_medium node dist/bench/run.js ceiling --workload medium --work-us "$W_MED" "${LOAD[@]}" "${J[@]}"
run ceiling_tcp_medium node dist/bench/run.js ceiling --transport tcp --workload medium "${C64[@]}" --work-us "$W_MED" "${LOAD[@]}" "${J[@]}"
run ceiling_http_fraud node dist/bench/run.js ceiling --workload fraud --work-us "$W_FRAUD" "${LOAD[@]}" "${J[@]}"

FAILED=0
for p in "${PIDS[@]}"; do wait "$p" || FAILED=1; done
[ "$FAILED" = 0 ] || exit 1
uptime > "$DIR/uptime_after.txt"
node dist/bench/current_table.js "$DIR" "${OUT[@]}"
echo "raw output in $DIR" >&2
