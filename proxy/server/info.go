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

// InfoField writes one INFO line, "name:value".
func InfoField(sb *strings.Builder, name string, v any) {
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
		InfoField(sb, "redis_version", RedisVersion)
		InfoField(sb, "spillway_version", Version)
		InfoField(sb, "redis_mode", "standalone")
		InfoField(sb, "spillway_mode", "embedded")
		InfoField(sb, "os", runtime.GOOS+" "+runtime.GOARCH)
		InfoField(sb, "arch_bits", 64)
		InfoField(sb, "go_version", runtime.Version())
		InfoField(sb, "process_id", os.Getpid())
		InfoField(sb, "tcp_port", s.cfg.Port())
		InfoField(sb, "server_time_usec", time.Now().UnixMicro())
		up := time.Since(s.started)
		InfoField(sb, "uptime_in_seconds", int64(up/time.Second))
		InfoField(sb, "uptime_in_days", int64(up/(24*time.Hour)))
		InfoField(sb, "hz", 10)
		InfoField(sb, "configured_hz", 10)
		exe, _ := os.Executable()
		InfoField(sb, "executable", exe)
		InfoField(sb, "config_file", s.cfg.File())
	case "clients":
		sb.WriteString("# Clients\r\n")
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		InfoField(sb, "connected_clients", n)
		InfoField(sb, "cluster_connections", 0)
		InfoField(sb, "maxclients", s.cfg.MaxClients())
		InfoField(sb, "blocked_clients", s.blocking.count()+int(s.postponed.Load()))
		InfoField(sb, "tracking_clients", 0)
	case "memory":
		sb.WriteString("# Memory\r\n")
		_, used, budget := e.HotStats()
		r := rss()
		InfoField(sb, "used_memory", used)
		InfoField(sb, "used_memory_human", humanBytes(used))
		InfoField(sb, "used_memory_rss", r)
		InfoField(sb, "used_memory_rss_human", humanBytes(r))
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		InfoField(sb, "used_memory_go_heap", ms.HeapAlloc)
		InfoField(sb, "maxmemory", s.cfg.MaxMemory())
		InfoField(sb, "maxmemory_human", humanBytes(s.cfg.MaxMemory()))
		InfoField(sb, "maxmemory_policy", "noeviction")
		InfoField(sb, "hot_budget", budget)
		if s.scripts != nil {
			lua := s.scripts.MemoryBytes()
			InfoField(sb, "used_memory_lua", lua)
			InfoField(sb, "used_memory_lua_human", humanBytes(lua))
			InfoField(sb, "number_of_cached_scripts", s.scripts.NumScripts())
		}
		InfoField(sb, "mem_allocator", "go")
	case "persistence":
		sb.WriteString("# Persistence\r\n")
		InfoField(sb, "loading", 0)
		InfoField(sb, "async_loading", 0)
		InfoField(sb, "rdb_changes_since_last_save", 0)
		InfoField(sb, "rdb_bgsave_in_progress", 0)
		InfoField(sb, "rdb_last_save_time", s.lastSave.Load())
		InfoField(sb, "rdb_last_bgsave_status", "ok")
		InfoField(sb, "aof_enabled", 0)
		InfoField(sb, "aof_rewrite_in_progress", 0)
		InfoField(sb, "aof_last_write_status", "ok")
		InfoField(sb, "spillway_appendfsync", e.Cold().FsyncPolicy().String())
		InfoField(sb, "spillway_durability", "pebble-wal")
	case "stats":
		sb.WriteString("# Stats\r\n")
		InfoField(sb, "total_connections_received", s.stats.connections.Load())
		InfoField(sb, "total_commands_processed", s.stats.commands.Load())
		InfoField(sb, "total_net_output_bytes", s.stats.netOut.Load())
		InfoField(sb, "rejected_connections", s.stats.rejectedConns.Load())
		InfoField(sb, "expired_keys", st.ExpiredKeys.Load())
		InfoField(sb, "evicted_keys", 0)
		InfoField(sb, "keyspace_hits", st.KeyspaceHits.Load())
		InfoField(sb, "keyspace_misses", st.KeyspaceMisses.Load())
		InfoField(sb, "pubsub_channels", s.pubsub.Len(pubsub.Channels))
		InfoField(sb, "pubsub_patterns", s.pubsub.Len(pubsub.Patterns))
		InfoField(sb, "pubsubshard_channels", s.pubsub.Len(pubsub.Shard))
		InfoField(sb, "total_error_replies", s.stats.errorReplies.Load())
	case "replication":
		sb.WriteString("# Replication\r\n")
		InfoField(sb, "role", "master")
		InfoField(sb, "connected_slaves", 0)
	case "cpu":
		sb.WriteString("# CPU\r\n")
		InfoField(sb, "used_cpu_sys", "0.000000")
		InfoField(sb, "used_cpu_user", "0.000000")
	case "tiering":
		sb.WriteString("# Tiering\r\n")
		total := e.KeysOnDisk()
		hotKeys, used, budget := e.HotStats()
		InfoField(sb, "mode", "embedded")
		InfoField(sb, "hot_keys", hotKeys)
		InfoField(sb, "cold_keys", total-int64(hotKeys))
		InfoField(sb, "hot_bytes", used)
		InfoField(sb, "hot_budget", budget)
		InfoField(sb, "maxmemory", s.cfg.MaxMemory())
		InfoField(sb, "cold_bytes_on_disk", e.Cold().DiskUsage())
		InfoField(sb, "demotions", st.Demotions.Load())
		InfoField(sb, "promotions", st.Promotions.Load())
		InfoField(sb, "promotions_in_steps", st.SteppedPromotions.Load())
		InfoField(sb, "cold_reads", st.ColdReads.Load())
		InfoField(sb, "expired_cold_keys", st.ExpiredColdKeys.Load())
		InfoField(sb, "reclaimed_versions", st.ReclaimedVers.Load())
		rs := e.Cold().ReadStats()
		InfoField(sb, "cold_store_gets", rs.Gets)
		InfoField(sb, "cold_store_iter_steps", rs.IterSteps)
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
