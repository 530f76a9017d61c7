#!/usr/bin/env bash
# Makes sure redis-server, redis-cli and redis-sentinel (7.0, as the tests
# compare against; the Sentinel failover test runs real sentinels) are
# installed. As root it installs them from Debian's packages; otherwise
# it stops with a message saying what to install.
set -euo pipefail
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null && command -v redis-benchmark >/dev/null &&
  command -v redis-sentinel >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing redis-server, redis-tools and redis-sentinel (needed by the tests)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server redis-tools redis-sentinel >/dev/null
  # Debian starts a redis service on 6379 and a sentinel on 26379; the
  # tests start their own.
  (service redis-server stop || true) >/dev/null 2>&1
  (service redis-sentinel stop || true) >/dev/null 2>&1
  exit 0
fi
echo "The tests need redis-server, redis-cli, redis-benchmark and redis-sentinel (Redis 7.0)." >&2
echo "Install them, e.g.: sudo apt-get install redis-server redis-tools redis-sentinel" >&2
exit 1
