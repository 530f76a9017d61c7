#!/usr/bin/env bash
# Makes sure `make bench`'s references are installed: redis (see
# ensure-redis.sh) and twemproxy (Debian's nutcracker package), which the
# proxy comparison of upstream mode measures against. As root it installs
# nutcracker with apt-get; otherwise it stops with a message saying what to
# install.
set -euo pipefail
"$(dirname "$0")/ensure-redis.sh"
if command -v nutcracker >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing nutcracker (twemproxy, the benchmark's proxy reference)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq nutcracker >/dev/null
  (service nutcracker stop || true) >/dev/null 2>&1
  exit 0
fi
echo "make bench needs twemproxy: install it, e.g.: sudo apt-get install nutcracker" >&2
exit 1
