package server

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/tiering"
)

func registerInfo(t *Table) {
	t.Register("info", cmdInfo)
}

// infoSections lists INFO's sections in Redis's order; "default" prints all
// of these.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "tiering", "keyspace"}

func cmdInfo(x *Ctx, args [][]byte) error {
	c := x.c
	want := map[string]bool{}
	if len(args) == 1 {
		want["default"] = true
	}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"] || want["default"]
	var sb strings.Builder
	for _, sec := range infoSections {
		if !all && !want[sec] {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString("\r\n")
		}
		c.s.writeInfoSection(&sb, sec, c)
	}
	c.w.Verbatim("txt", []byte(sb.String()))
	return nil
}

func field(sb *strings.Builder, name string, v any) {
	sb.WriteString(name)
	sb.WriteByte(':')
	sb.WriteString(fmt.Sprint(v))
	sb.WriteString("\r\n")
}

// rss reads the process's resident set size from /proc.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// writeInfoSection writes one section; c runs the keyspace section's
// transaction (it may hold one already, inside MULTI or a script).
func (s *Server) writeInfoSection(sb *strings.Builder, sec string, c *Client) {
	e := s.engine
	st := &e.Stats
	switch sec {
	case "server":
		sb.WriteString("# Server\r\n")
		field(sb, "redis_version", RedisVersion)
		field(sb, "spillway_version", Version)
		field(sb, "redis_mode", "standalone")
		field(sb, "spillway_mode", "embedded")
		field(sb, "os", runtime.GOOS+" "+runtime.GOARCH)
		field(sb, "arch_bits", 64)
		field(sb, "go_version", runtime.Version())
		field(sb, "process_id", os.Getpid())
		field(sb, "tcp_port", s.cfg.Port())
		field(sb, "server_time_usec", time.Now().UnixMicro())
		up := time.Since(s.started)
		field(sb, "uptime_in_seconds", int64(up/time.Second))
		field(sb, "uptime_in_days", int64(up/(24*time.Hour)))
		field(sb, "hz", 10)
		field(sb, "configured_hz", 10)
		exe, _ := os.Executable()
		field(sb, "executable", exe)
		field(sb, "config_file", s.cfg.File())
	case "clients":
		sb.WriteString("# Clients\r\n")
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		field(sb, "connected_clients", n)
		field(sb, "cluster_connections", 0)
		field(sb, "maxclients", s.cfg.MaxClients())
		field(sb, "blocked_clients", s.blocking.count())
		field(sb, "tracking_clients", 0)
	case "memory":
		sb.WriteString("# Memory\r\n")
		_, used, budget := e.HotStats()
		r := rss()
		field(sb, "used_memory", used)
		field(sb, "used_memory_human", humanBytes(used))
		field(sb, "used_memory_rss", r)
		field(sb, "used_memory_rss_human", humanBytes(r))
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		field(sb, "used_memory_go_heap", ms.HeapAlloc)
		field(sb, "maxmemory", s.cfg.MaxMemory())
		field(sb, "maxmemory_human", humanBytes(s.cfg.MaxMemory()))
		field(sb, "maxmemory_policy", "noeviction")
		field(sb, "hot_budget", budget)
		if s.scripts != nil {
			lua := s.scripts.MemoryBytes()
			field(sb, "used_memory_lua", lua)
			field(sb, "used_memory_lua_human", humanBytes(lua))
			field(sb, "number_of_cached_scripts", s.scripts.NumScripts())
		}
		field(sb, "mem_allocator", "go")
	case "persistence":
		sb.WriteString("# Persistence\r\n")
		field(sb, "loading", 0)
		field(sb, "async_loading", 0)
		field(sb, "rdb_changes_since_last_save", 0)
		field(sb, "rdb_bgsave_in_progress", 0)
		field(sb, "rdb_last_save_time", s.lastSave.Load())
		field(sb, "rdb_last_bgsave_status", "ok")
		field(sb, "aof_enabled", 0)
		field(sb, "aof_rewrite_in_progress", 0)
		field(sb, "aof_last_write_status", "ok")
		field(sb, "spillway_appendfsync", e.Cold().FsyncPolicy().String())
		field(sb, "spillway_durability", "pebble-wal")
	case "stats":
		sb.WriteString("# Stats\r\n")
		field(sb, "total_connections_received", s.stats.connections.Load())
		field(sb, "total_commands_processed", s.stats.commands.Load())
		field(sb, "total_net_output_bytes", s.stats.netOut.Load())
		field(sb, "rejected_connections", s.stats.rejectedConns.Load())
		field(sb, "expired_keys", st.ExpiredKeys.Load())
		field(sb, "evicted_keys", 0)
		field(sb, "keyspace_hits", st.KeyspaceHits.Load())
		field(sb, "keyspace_misses", st.KeyspaceMisses.Load())
		field(sb, "pubsub_channels", s.pubsub.Len(pubsub.Channels))
		field(sb, "pubsub_patterns", s.pubsub.Len(pubsub.Patterns))
		field(sb, "pubsubshard_channels", s.pubsub.Len(pubsub.Shard))
		field(sb, "total_error_replies", s.stats.errorReplies.Load())
	case "replication":
		sb.WriteString("# Replication\r\n")
		field(sb, "role", "master")
		field(sb, "connected_slaves", 0)
	case "cpu":
		sb.WriteString("# CPU\r\n")
		field(sb, "used_cpu_sys", "0.000000")
		field(sb, "used_cpu_user", "0.000000")
	case "tiering":
		sb.WriteString("# Tiering\r\n")
		total := e.KeysOnDisk()
		hotKeys, used, budget := e.HotStats()
		field(sb, "mode", "embedded")
		field(sb, "hot_keys", hotKeys)
		field(sb, "cold_keys", total-int64(hotKeys))
		field(sb, "hot_bytes", used)
		field(sb, "hot_budget", budget)
		field(sb, "maxmemory", s.cfg.MaxMemory())
		field(sb, "cold_bytes_on_disk", e.Cold().DiskUsage())
		field(sb, "demotions", st.Demotions.Load())
		field(sb, "promotions", st.Promotions.Load())
		field(sb, "promotions_in_steps", st.SteppedPromotions.Load())
		field(sb, "cold_reads", st.ColdReads.Load())
		field(sb, "expired_cold_keys", st.ExpiredColdKeys.Load())
		field(sb, "reclaimed_versions", st.ReclaimedVers.Load())
		rs := e.Cold().ReadStats()
		field(sb, "cold_store_gets", rs.Gets)
		field(sb, "cold_store_iter_steps", rs.IterSteps)
	case "keyspace":
		sb.WriteString("# Keyspace\r\n")
		c.withLock(func(tx *tiering.Tx) error {
			for db := 0; db < e.Databases(); db++ {
				n := tx.DBSize(db)
				if n == 0 {
					continue
				}
				fmt.Fprintf(sb, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, tx.Expires(db))
			}
			return nil
		})
	}
}
