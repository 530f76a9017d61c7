#!/usr/bin/env bash
# Runs `make bench` (quick: about 20 minutes on 2 cores) or, with
# SPILLWAY_BENCH_FULL=1, `make bench-full`. Each section starts its own
# references on loopback (redis-server, twemproxy) beside bin/spillway,
# measures alternately, prints Markdown tables with each figure beside its
# reference and the ratio, and the whole report is saved under
# bench/results/ (<UTC time>.md, .json, .png, and latest.*). It asserts
# nothing about time; it fails only when a tool or server does not work.
#
# Quick sections (integration/bench_*_test.go):
#   TestBenchHotPath   redis-benchmark's standard ops, embedded, vs redis-server
#                      with AOF everysec, then writes with appendfsync always
#   TestBenchProxy     the same ops through twemproxy and upstream mode
#   TestBenchColdReads uniform and Zipfian reads of a dataset 10x the budget
#   TestBenchMemory    RSS at 1x/5x/20x the budget, disk vs RDB
#   TestBenchBulkLoadSmallKeys  peak RSS loading 2,000,000 small keys under maxmemory 64mb
#   TestBenchRestart   time to first command with millions of cold keys
#   TestBenchStreams   XADD, XRANGE and a consumer group (XREADGROUP + XACK)
#   TestBenchStreamTenMillion  a 10,000,000-entry stream under maxmemory 64mb
#   TestBenchConsume   cold sorted sets, lists, sets, streams and expiring
#                      keys popped down: first vs last 10% of the pops
# bench-full adds larger sizes and every other section (bulk load, lists,
# queue, sorted sets, cold hashes and sets) and the in-process
# micro-benchmarks.
#
# Environment: GO (default go), SPILLWAY_BIN (default bin/spillway),
# SPILLWAY_BENCH_FULL=1, SPILLWAY_BENCH_RUNTIME (length of each
# redis-benchmark run, a Go duration), SPILLWAY_BENCH_RAW (a TSV file of
# every throughput run), SPILLWAY_BENCH_RESULTS (results directory).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export SPILLWAY_BIN=${SPILLWAY_BIN:-$PWD/bin/spillway}
if [ ! -x "$SPILLWAY_BIN" ]; then
  echo "bench: $SPILLWAY_BIN not found: run \`make build\` first" >&2
  exit 1
fi
export SPILLWAY_BENCH_RESULTS=${SPILLWAY_BENCH_RESULTS:-$PWD/bench/results}

run='^TestBench(HotPath|Proxy|ColdReads|Memory|BulkLoadSmallKeys|Restart|Streams|StreamTenMillion|Consume)$'
timeout=50m
if [ "${SPILLWAY_BENCH_FULL:-}" = 1 ]; then
  echo "== In-process micro-benchmarks =="
  "$GO" test -run '^$' -bench . -benchtime 300ms ./codec/ ./proxy/... ./tiering/...
  run='^TestBench'
  timeout=90m
fi

echo "== End-to-end benchmarks =="
# -v streams the tables as they are measured; the per-run subtest lines are noise.
SPILLWAY_BENCH=1 "$GO" test -count=1 -run "$run" -v -timeout "$timeout" ./integration/ |
  grep --line-buffered -v -e '^=== RUN' -e '^=== NAME' -e '^=== PAUSE' -e '^=== CONT' -e '^    --- PASS: TestBench[A-Za-z]*/'
