package replica

import (
	"fmt"
	"strings"
	"time"
)

// writeInfo writes INFO replication's fields of a replica, from role to
// replica_announced, as Redis 7.0 (genRedisInfoString). It is called with
// the repl.Master's lock held (repl.Master.SetRoleInfo): it reads only the
// replica's own state.
func (r *Replica) writeInfo(sb *strings.Builder) {
	now := time.Now().Unix()
	host, port := r.Master()
	st := State(r.state.Load())
	link, lastIO := "down", int64(-1)
	if st == StateConnected {
		link = "up"
	}
	if r.linked.Load() {
		lastIO = now - r.lastIO.Load()
	}
	sb.WriteString("role:slave\r\n")
	fmt.Fprintf(sb, "master_host:%s\r\nmaster_port:%d\r\nmaster_link_status:%s\r\n"+
		"master_last_io_seconds_ago:%d\r\nmaster_sync_in_progress:%d\r\n"+
		"slave_read_repl_offset:%d\r\nslave_repl_offset:%d\r\n",
		host, port, link, lastIO, b2i(st == StateTransfer), r.readOffset(), r.reploff.Load())
	if st == StateTransfer {
		size, read := r.xferSize.Load(), r.xferRead.Load()
		perc := 0.0
		if size > 0 {
			perc = float64(read) * 100 / float64(size)
		}
		fmt.Fprintf(sb, "master_sync_total_bytes:%d\r\nmaster_sync_read_bytes:%d\r\n"+
			"master_sync_left_bytes:%d\r\nmaster_sync_perc:%.2f\r\nmaster_sync_last_io_seconds_ago:%d\r\n",
			size, read, size-read, perc, now-r.xferIO.Load())
	}
	if st != StateConnected {
		down := int64(-1)
		if d := r.down.Load(); d != 0 {
			down = now - d
		}
		fmt.Fprintf(sb, "master_link_down_since_seconds:%d\r\n", down)
	}
	fmt.Fprintf(sb, "slave_priority:%s\r\nslave_read_only:%d\r\nreplica_announced:%d\r\n",
		r.h.Setting("replica-priority"), b2i(r.h.Setting("replica-read-only") == "yes"),
		b2i(r.h.Setting("replica-announced") == "yes"))
}

// readOffset is slave_read_repl_offset: the bytes read of the stream (at
// least the applied ones).
func (r *Replica) readOffset() int64 { return max(r.readOff.Load(), r.reploff.Load()) }

// RoleInfo is what ROLE shows of a replica.
type RoleInfo struct {
	Host  string
	Port  int
	State string // connect, connecting, handshake, sync, connected
	// Offset is the applied offset while a master client exists, else -1.
	Offset int64
}

// Role returns what ROLE shows (Redis's roleCommand for a replica).
func (r *Replica) Role() RoleInfo {
	host, port := r.Master()
	names := [...]string{"none", "connect", "connecting", "handshake", "sync", "connected"}
	off := int64(-1)
	if r.linked.Load() {
		off = r.reploff.Load()
	}
	return RoleInfo{Host: host, Port: port, State: names[r.state.Load()], Offset: off}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
