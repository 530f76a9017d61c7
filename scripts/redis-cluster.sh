#!/usr/bin/env bash
# redis-cluster.sh DIR BASEPORT [--replicas 1]: starts a 3-primary Redis
# Cluster on loopback with a Spillway sidecar (upstream mode) in front of
# every primary, and prints the sidecars' addresses (host:port), one a line.
# With --replicas 1, each primary also gets a replica node with a sidecar
# of its own (nodes 3, 4, 5 replicate 0, 1, 2); the primaries' sidecars are
# printed first, then the replicas', one a line.
#
# redis-cluster.sh DIR stop: stops everything it started (pid files in DIR).
#
# Ports: node i's sidecar listens on BASEPORT+i, its redis-server on
# BASEPORT+10+i and its cluster bus on BASEPORT+10010+i. Every node announces
# its sidecar's address (cluster-announce-ip/-port) and its own bus port
# (cluster-announce-bus-port), so CLUSTER SLOTS/SHARDS/NODES, -MOVED and
# -ASK name sidecars only, while the nodes gossip with each other directly.
# A replica node also tells its primary its sidecar's address
# (replica-announce-ip/-port), which the primary's INFO replication shows.
# Environment: SPILLWAY (default bin/spillway next to this script's repo),
# REDIS_SERVER, REDIS_CLI, SIDECAR_MAXMEMORY (default 4mb), CLUSTER_NODE_TIMEOUT
# (ms, default 3000).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
SPILLWAY=${SPILLWAY:-$here/bin/spillway}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
SIDECAR_MAXMEMORY=${SIDECAR_MAXMEMORY:-4mb}
CLUSTER_NODE_TIMEOUT=${CLUSTER_NODE_TIMEOUT:-3000}

usage() { echo "usage: $0 DIR BASEPORT [--replicas 0|1] | $0 DIR stop" >&2; exit 2; }
[ $# -ge 2 ] || usage
dir=$1

# stop_group stops the processes of the pid files given: SIGTERM to all,
# then SIGKILL to those still running after 10 s.
stop_group() {
	local f pid alive pids=()
	for f in "$@"; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		rm -f "$f"
		if kill "$pid" 2>/dev/null; then
			pids+=("$pid")
		fi
	done
	for _ in $(seq 1 100); do
		alive=0
		for pid in "${pids[@]}"; do
			if kill -0 "$pid" 2>/dev/null; then
				alive=1
			fi
		done
		[ "$alive" = 0 ] && return 0
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
}

stop_all() {
	# Sidecars first (they would log the upstream's loss), then the nodes;
	# each group at once.
	stop_group "$dir"/sidecar-*.pid
	stop_group "$dir"/redis-*.pid
}

if [ "$2" = stop ]; then
	stop_all
	exit 0
fi

base=$2
replicas=0
if [ $# -ge 3 ]; then
	[ "$3" = --replicas ] && [ $# -eq 4 ] || usage
	case "$4" in 0 | 1) replicas=$4 ;; *) usage ;; esac
fi
case "$base" in '' | *[!0-9]*) usage ;; esac
[ "$base" -ge 1024 ] && [ "$base" -le 55000 ] || { echo "BASEPORT must be in 1024..55000" >&2; exit 2; }
[ -x "$SPILLWAY" ] || { echo "$SPILLWAY not found: run make build" >&2; exit 1; }
for tool in "$REDIS_SERVER" "$REDIS_CLI"; do
	command -v "$tool" >/dev/null || { echo "$tool not found: run make deps (Redis 7.0)" >&2; exit 1; }
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
trap 'stop_all' ERR

nodes=3
total=$((nodes * (1 + replicas)))

start_node() { # i
	local i=$1 side=$((base + $1)) port=$((base + 10 + $1)) bus=$((base + 10010 + $1))
	mkdir -p "$dir/redis-$i"
	"$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir/redis-$i" \
		--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT" \
		--cluster-port "$bus" \
		--cluster-announce-ip 127.0.0.1 --cluster-announce-port "$side" \
		--cluster-announce-bus-port "$bus" \
		--replica-announce-ip 127.0.0.1 --replica-announce-port "$side" \
		--save '' --appendonly no --daemonize yes \
		--pidfile "$dir/redis-$i.pid" --logfile "$dir/redis-$i.log"
}

wait_port() { # port
	for _ in $(seq 1 100); do
		if "$REDIS_CLI" -p "$1" ping >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "nothing answers on port $1" >&2
	return 1
}

rcli() { "$REDIS_CLI" -p "$((base + 10 + $1))" "${@:2}"; }

for i in $(seq 0 $((total - 1))); do
	for p in $((base + i)) $((base + 10 + i)) $((base + 10010 + i)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "port $p is in use" >&2
			exit 1
		fi
	done
done
for i in $(seq 0 $((total - 1))); do start_node "$i"; done
for i in $(seq 0 $((total - 1))); do wait_port $((base + 10 + i)); done

# Slots: three even ranges, set on the nodes themselves; then every node
# meets node 0 through its real bus port (the announced port is the
# sidecar's, so CLUSTER MEET is given the bus port explicitly).
rcli 0 cluster addslotsrange 0 5460 >/dev/null
rcli 1 cluster addslotsrange 5461 10922 >/dev/null
rcli 2 cluster addslotsrange 10923 16383 >/dev/null
for i in $(seq 1 $((total - 1))); do
	rcli "$i" cluster meet 127.0.0.1 "$base" $((base + 10010)) >/dev/null
done
for _ in $(seq 1 200); do
	known=$(rcli 0 cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')
	[ "$known" = "$total" ] && break
	sleep 0.1
done
for _ in $(seq 1 300); do
	ok=1
	for i in $(seq 0 $((nodes - 1))); do
		rcli "$i" cluster info | grep -q 'cluster_state:ok' || ok=0
	done
	[ "$ok" = 1 ] && break
	sleep 0.1
done
[ "$ok" = 1 ] || { echo "the cluster did not reach cluster_state:ok" >&2; exit 1; }

# Replicas: node nodes+i replicates node i (through node i's sidecar, the
# address node i announces, once the sidecars run).
if [ "$replicas" = 1 ]; then
	for i in $(seq 0 $((nodes - 1))); do
		id=$(rcli "$i" cluster myid | tr -d '\r')
		for _ in $(seq 1 100); do
			rcli $((nodes + i)) cluster replicate "$id" 2>/dev/null | grep -q OK && break
			sleep 0.1
		done
	done
fi

for i in $(seq 0 $((total - 1))); do
	side=$((base + i))
	mkdir -p "$dir/sidecar-$i"
	"$SPILLWAY" --port "$side" --bind 127.0.0.1 --dir "$dir/sidecar-$i" \
		--maxmemory "$SIDECAR_MAXMEMORY" --upstream "redis://127.0.0.1:$((base + 10 + i))" \
		>"$dir/sidecar-$i.log" 2>&1 &
	echo $! >"$dir/sidecar-$i.pid"
done
for i in $(seq 0 $((total - 1))); do
	wait_port $((base + i))
	# What answers must be the sidecar just started, not an older process.
	kill -0 "$(cat "$dir/sidecar-$i.pid")" 2>/dev/null || { cat "$dir/sidecar-$i.log" >&2; exit 1; }
done
trap - ERR
if [ "$replicas" = 1 ]; then
	# Each replica node syncs through its primary's sidecar.
	for i in $(seq "$nodes" $((total - 1))); do
		for _ in $(seq 1 300); do
			rcli "$i" info replication | grep -q 'master_link_status:up' && break
			sleep 0.1
		done
	done
fi
for i in $(seq 0 $((total - 1))); do echo "127.0.0.1:$((base + i))"; done
