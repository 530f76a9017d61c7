#!/usr/bin/env bash
# Makes sure Redis's own test suite, of the version of the installed
# redis-server, is extracted in a cache outside the repository, and prints
# the source tree's path. It comes from Debian's source package
# (`apt-get source redis`); when no deb-src entry exists, one is derived
# from the machine's Debian sources (/etc/apt/sources.list.d/debian.sources)
# in a sibling file. Also installs tcl (the suite's tclsh) when missing.
# Needs root (apt-get) the first time only.
#
# Cache: $SPILLWAY_COMPAT_CACHE, else $XDG_CACHE_HOME/spillway-compat, else
# /var/cache/spillway-compat as root, else ~/.cache/spillway-compat.
set -euo pipefail

if [ -n "${SPILLWAY_COMPAT_CACHE:-}" ]; then cache=$SPILLWAY_COMPAT_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ]; then cache=$XDG_CACHE_HOME/spillway-compat
elif [ "$(id -u)" = 0 ]; then cache=/var/cache/spillway-compat
else cache=$HOME/.cache/spillway-compat
fi

say() { echo "ensure-compat-suite: $*" >&2; }
need_root() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "$1 (run once as root on Debian, or install it yourself)"
    exit 1
  fi
}
export DEBIAN_FRONTEND=noninteractive

if ! command -v tclsh8.6 >/dev/null && ! command -v tclsh8.7 >/dev/null && ! command -v tclsh8.5 >/dev/null; then
  need_root "the suite needs tclsh 8.5 or later"
  say "installing tcl..."
  apt-get install -y -qq tcl >/dev/null
fi

# The version of the installed redis-server: the suite must match it.
version=$(dpkg-query -W -f '${Version}' redis-server 2>/dev/null || true)
if [ -z "$version" ]; then
  say "redis-server is not installed from Debian's package (make deps installs it)"
  exit 1
fi
dir=$cache/redis-${version#*:}
if [ -f "$dir/.complete" ]; then
  echo "$dir/src"
  exit 0
fi

need_root "the suite is not cached in $dir"
if ! command -v dpkg-source >/dev/null; then
  say "installing dpkg-dev (dpkg-source extracts the package)..."
  apt-get install -y -qq dpkg-dev >/dev/null
fi

# A deb-src entry for every Debian deb entry, if none exists yet.
has_src() {
  grep -rqsE '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/ ||
    grep -qsE '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list
}
if ! has_src; then
  src=/etc/apt/sources.list.d/debian.sources
  if [ ! -f "$src" ]; then
    say "no deb-src entry and no $src to derive one from; add a deb-src line for Debian's main archive"
    exit 1
  fi
  say "adding deb-src entries (derived from $src) in /etc/apt/sources.list.d/spillway-deb-src.sources"
  sed -E 's/^Types:.*$/Types: deb-src/' "$src" > /etc/apt/sources.list.d/spillway-deb-src.sources
  apt-get update -qq
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "fetching Debian's redis $version source package into $dir..."
# The source version of the installed package: the binary's version, since
# redis-server is built from the source package of the same version.
if ! (cd "$tmp" && apt-get source -qq --download-only "redis=$version" >/dev/null 2>&1); then
  apt-get update -qq
  (cd "$tmp" && apt-get source -qq --download-only "redis=$version" >/dev/null)
fi
# Debian's patches are applied (some fix tests along with the server).
(cd "$tmp" && dpkg-source -x ./*.dsc src >/dev/null)
test -f "$tmp/src/tests/test_helper.tcl" || { say "the source package has no tests/test_helper.tcl"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
mv "$tmp/src" "$dir/src"
cp "$tmp"/*.dsc "$dir/"
touch "$dir/.complete"
echo "$dir/src"
