#!/usr/bin/env bash
# Runs `make bench`: the in-process micro-benchmarks, then the end-to-end
# benchmark of integration/bench_test.go, bench_coll_test.go and
# bench_list_test.go (redis-benchmark and redis-cli --pipe against
# redis-server, twemproxy (nutcracker, installed by `make bench`), and
# bin/spillway, embedded and in upstream mode in front of the same
# redis-server):
# strings, hot hashes and sets, a cold million-field hash and set, hot lists
# (LPUSH, RPOP, LRANGE_100), LRANGE at random offsets of a cold
# million-element list, a 1,000,000-element queue (RPUSH, then LPOP) under
# --maxmemory 32mb, bulk loads; sorted sets (bench_zset_test.go: hot ZADD,
# ZSCORE, ZRANGEBYSCORE, and pages by score and ZSCORE on a cold
# 1,000,000-member leaderboard). It prints tables and asserts nothing about
# time; it fails only when a tool or server does not work. About 11 minutes on
# 2 cores.
#
# Environment: GO (default go), SPILLWAY_BIN (default bin/spillway, built by
# `make build`), SPILLWAY_BENCH_RUNTIME (length of each redis-benchmark run,
# a Go duration, default 1.5s), SPILLWAY_BENCH_RAW (a file to write every
# throughput run's numbers to, as TSV), SPILLWAY_BENCH_FULL=1 (the queue
# benchmark with 5,000,000 elements, as TestQueueFiveMillion).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export SPILLWAY_BIN=${SPILLWAY_BIN:-$PWD/bin/spillway}
if [ ! -x "$SPILLWAY_BIN" ]; then
  echo "bench: $SPILLWAY_BIN not found: run \`make build\` first" >&2
  exit 1
fi

echo "== In-process micro-benchmarks =="
"$GO" test -run '^$' -bench . -benchtime 300ms ./codec/ ./proxy/... ./tiering/...

echo
echo "== End-to-end benchmarks (integration/bench_test.go, bench_coll_test.go, bench_list_test.go, bench_zset_test.go) =="
# -v streams the tables; the per-run subtest lines of the load section are noise.
SPILLWAY_BENCH=1 "$GO" test -count=1 -run '^TestBench' -v -timeout 15m ./integration/ |
  grep --line-buffered -v -e '^=== RUN' -e '^=== NAME' -e '^    --- PASS: TestBenchLoad/'
