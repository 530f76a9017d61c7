package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/latency"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/tiering"
)

func registerInfo(t *Table) {
	t.Register("info", cmdInfo)
}

// INFO, as Redis 7.0's genRedisInfoString: the same sections in the same
// order, with Redis's field names. Figures Spillway has no counterpart for
// (forks, replication, the allocator's arenas) carry the value a
// stand-alone redis-server without persistence reports. Spillway's own
// Tiering section sits where Redis puts module sections: after Keyspace,
// only for INFO everything, INFO modules or INFO tiering.

// infoSections lists the sections in Redis's order. "module_list" is
// Redis's module list (empty: Spillway loads no modules), which INFO
// modules also prints.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication",
	"cpu", "module_list", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

// defaultSections are those INFO without arguments (and INFO default)
// prints: all but commandstats and latencystats.
var defaultSections = map[string]bool{"server": true, "clients": true, "memory": true,
	"persistence": true, "stats": true, "replication": true, "cpu": true, "module_list": true,
	"errorstats": true, "cluster": true, "keyspace": true}

func cmdInfo(x *Ctx, args [][]byte) error {
	c := x.c
	want := map[string]bool{}
	all, everything := false, false
	if len(args) == 1 {
		want = defaultSections
	}
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "default":
			for s := range defaultSections {
				want[s] = true
			}
		case "all":
			all = true
		case "everything":
			all, everything = true, true
		case "modules":
			want["module_list"], want["modules"] = true, true
		default:
			want[name] = true
		}
	}
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
	// Module sections: Spillway's Tiering.
	if everything || want["modules"] || want["tiering"] {
		if sb.Len() > 0 {
			sb.WriteString("\r\n")
		}
		c.s.writeInfoSection(&sb, "tiering", c)
	}
	c.w.Verbatim("txt", []byte(sb.String()))
	return nil
}

// InfoText is INFO EVERYTHING's text (embedded mode), rendered outside
// any client for the metrics endpoint.
func (s *Server) InfoText() string {
	var sb strings.Builder
	for _, sec := range append(infoSections[:len(infoSections):len(infoSections)], "tiering") {
		s.writeInfoSection(&sb, sec, nil)
		sb.WriteString("\r\n")
	}
	return sb.String()
}

// InfoField writes one INFO line, "name:value".
func InfoField(sb *strings.Builder, name string, v any) {
	sb.WriteString(name)
	sb.WriteByte(':')
	switch v := v.(type) {
	case int:
		sb.WriteString(strconv.Itoa(v))
	case int64:
		sb.WriteString(strconv.FormatInt(v, 10))
	case string:
		sb.WriteString(v)
	default:
		sb.WriteString(fmt.Sprint(v))
	}
	sb.WriteString("\r\n")
}

// infoState is what INFO and MEMORY report beyond the engine's counters:
// per-command and per-error statistics, the dirty counter, lazy-free
// counts and the memory figures' baseline.
type infoState struct {
	// cmds holds each command's counters, indexed by cmdtable.Command.ID.
	cmds []cmdStat
	// errs counts error replies by their code (the first word): INFO
	// errorstats.
	errMu sync.Mutex
	errs  map[string]int64
	// dirty counts the changes to the dataset since the last save (INFO
	// persistence rdb_changes_since_last_save), as Redis's server.dirty.
	dirty atomic.Int64
	// lazyfreed counts the objects freed as Redis frees them in the
	// background (INFO lazyfreed_objects).
	lazyfreed atomic.Int64
	// startup is the Go heap in use when the server was built: Redis's
	// startup.allocated, the baseline of used_memory.
	startup int64
	// peak is the highest used_memory computed (used_memory_peak).
	peak atomic.Int64
	// runID is random, per process, as Redis's.
	runID string
	// latency: latency-tracking is on (INFO latencystats).
	latency atomic.Bool
}

// cmdStat is one command's INFO commandstats counters, padded to a cache
// line so that two busy commands do not share one.
type cmdStat struct {
	calls, nanos, rejected, failed atomic.Int64
	// hist is the latency histogram, allocated at the first call.
	hist atomic.Pointer[latency.Histogram]
	// writeLookups: the command's key lookups are a write's, which
	// keyspace_hits/misses do not count (readingWrites).
	writeLookups bool
	_            [23]byte
}

// readingWrites are the write commands whose key lookups Redis makes as
// reads (lookupKeyRead), counted in keyspace_hits/misses: those that read
// a key and then delete or expire it, and those that read source keys into
// a destination (the destination's lookup counts in Redis, but Spillway's
// handlers write it without a lookup). SET ... GET and a BITFIELD of GETs
// only read as well: their handlers say so (tiering.Tx.CountLookups).
var readingWrites = map[string]bool{"getset": true, "getdel": true, "getex": true, "sort": true,
	"sinterstore": true, "sunionstore": true, "sdiffstore": true, "zunionstore": true,
	"zinterstore": true, "zdiffstore": true, "zrangestore": true, "copy": true, "bitop": true,
	"pfmerge": true, "georadius": true, "georadiusbymember": true, "geosearchstore": true,
	"xreadgroup": true, "xack": true, "xclaim": true, "xautoclaim": true}

// record adds one command's duration to st's histogram.
func (st *cmdStat) record(d time.Duration) {
	h := st.hist.Load()
	if h == nil {
		h = new(latency.Histogram)
		if !st.hist.CompareAndSwap(nil, h) {
			h = st.hist.Load()
		}
	}
	h.Record(int64(d))
}

// latPercentiles are Redis's default latency-tracking-info-percentiles.
var latPercentiles = []latency.Percentile{{Name: "p50", P: 50}, {Name: "p99", P: 99}, {Name: "p99.9", P: 99.9}}

// clientStat is what the statistics keep per client: its error replies,
// where the running command's count of them started, and how long it has
// been blocked during the running command.
type clientStat struct {
	errs, errMark int64
	blocked       time.Duration
	// scriptErrs counts the error replies of the commands the client's
	// scripts ran (on the script client).
	scriptErrs int64
	// evKey is the key of the running command's last keyspace event
	// (countChange).
	evKey []byte
	// changes counts the client's changes to the dataset (countChange):
	// a command that moved it propagates (propEnd).
	changes int64
}

// initInfo readies the statistics (once, before serving): the startup
// baseline of used_memory, and latency-tracking followed as it is set.
func (s *Server) initInfo() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := &s.info
	st.cmds = make([]cmdStat, cmdtable.NumIDs())
	for _, cmd := range cmdtable.All() {
		st.cmds[cmd.ID()].writeLookups = cmd.Is(cmdtable.FlagWrite) && !readingWrites[cmd.Name]
		for _, sub := range cmd.Subcommands {
			st.cmds[sub.ID()].writeLookups = sub.Is(cmdtable.FlagWrite)
		}
	}
	st.errs = map[string]int64{}
	st.startup = int64(ms.HeapAlloc)
	st.runID = randomHex()
	st.latency.Store(s.configValue("latency-tracking") == "yes")
	s.cfg.OnChange("latency-tracking", func(v string) { st.latency.Store(v == "yes") })
}

func randomHex() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// countError counts an error reply (msg without the leading '-') in INFO
// errorstats and total_error_replies, under its code: the text before the
// first space within the first 32 bytes, or ERR.
func (s *Server) countError(msg string) {
	s.stats.errorReplies.Add(1)
	code := "ERR"
	if i := strings.IndexByte(msg[:min(len(msg), 31)], ' '); i > 0 {
		code = msg[:i]
	}
	s.info.errMu.Lock()
	s.info.errs[code]++
	s.info.errMu.Unlock()
}

// AddLazyFreed counts n objects freed as Redis would free them in the
// background (INFO lazyfreed_objects). Spillway frees them at once.
func (s *Server) AddLazyFreed(n int64) { s.info.lazyfreed.Add(n) }

// AddLazyFreed counts n objects freed as Redis would free them in the
// background (INFO lazyfreed_objects; UNLINK).
func (x *Ctx) AddLazyFreed(n int64) { x.c.s.AddLazyFreed(n) }

// countChange counts a keyspace event of class on key, sent by c's
// command (c nil: no client's), in the dirty counter: Redis increments
// server.dirty where it notifies a change. Not counted: reads'
// "keymiss", the "new" that accompanies a write's own event, and an event
// on the key the command's previous event was on (the "del" of a
// structure a pop emptied, MOVE's "move_to"), which Redis counts as one
// change.
func (s *Server) countChange(c *Client, class NotifyClass, key []byte) {
	if class&(NotifyKeyMiss|NotifyNew) != 0 {
		return
	}
	if c != nil {
		if c.stat.evKey != nil && bytes.Equal(c.stat.evKey, key) {
			return
		}
		c.stat.evKey = key
		c.stat.changes++
	}
	s.info.dirty.Add(1)
}

// resetInfoStats zeroes what CONFIG RESETSTAT resets of the statistics.
func (s *Server) resetInfoStats() {
	for i := range s.info.cmds {
		st := &s.info.cmds[i]
		st.calls.Store(0)
		st.nanos.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
		st.hist.Store(nil)
	}
	s.info.errMu.Lock()
	clear(s.info.errs)
	s.info.errMu.Unlock()
	s.info.lazyfreed.Store(0) // the memory peak stays, as in Redis
}

// MemoryFigures are the server's memory figures, in Redis's terms (INFO
// memory, MEMORY STATS).
type MemoryFigures struct {
	// Used is used_memory: the startup baseline, the hot tier's bytes
	// (the decoded copies of hot keys, as its budget counts them) and the
	// scripting engine's estimate.
	Used, Peak, Startup int64
	// Hot is the hot tier's accounting; Lua the scripting engine's.
	Hot tiering.HotMemory
	Lua int64
	// Go runtime figures: heap allocated, heap in use (spans), heap
	// obtained from the OS less what was returned; RSS from /proc.
	HeapAlloc, HeapInuse, HeapResident, RSS int64
	NumGC                                   uint32
}

// memory returns the memory figures; it reads the Go runtime's statistics
// (a brief stop of the world) and the hot tier's under the engine's lock
// (c's open group's, when it runs one: engineFigures).
func (s *Server) memory(c *Client) MemoryFigures {
	var f MemoryFigures
	s.engineFigures(c, func(tx *tiering.Tx) { f.Hot = tx.HotMemory() })
	if s.scripts != nil {
		f.Lua = s.scripts.MemoryBytes()
	}
	f.Startup = s.info.startup
	f.Used = f.Startup + f.Hot.Used + f.Lua
	peak := max(s.info.peak.Load(), f.Startup+f.Hot.Peak+f.Lua, f.Used)
	s.info.peak.Store(peak)
	f.Peak = peak
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapAlloc, f.HeapInuse = int64(ms.HeapAlloc), int64(ms.HeapInuse)
	f.HeapResident = int64(ms.HeapSys - ms.HeapReleased)
	f.NumGC = ms.NumGC
	f.RSS = rss()
	return f
}

// Memory is the server's memory figures for a handler (MEMORY STATS, MEMORY
// DOCTOR), read in its client's group when it runs in one.
func (x *Ctx) Memory() MemoryFigures { return x.c.s.memory(x.c) }

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

// HumanBytes formats n as Redis's bytesToHuman: "943.27K", "6.71M", "0B".
func HumanBytes(n int64) string {
	d := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", d/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", d/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", d/(1<<30))
	case n < 1<<50:
		return fmt.Sprintf("%.2fT", d/(1<<40))
	}
	return fmt.Sprintf("%.2fP", d/(1<<50))
}

var uname = sync.OnceValue(func() string {
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x86_64"
	case "arm64":
		arch = "aarch64"
	}
	osName := strings.ToUpper(runtime.GOOS[:1]) + runtime.GOOS[1:]
	return osName + " " + strings.TrimSpace(string(rel)) + " " + arch
})

var totalSystemMemory = sync.OnceValue(func() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
})

// cpuTime formats a rusage time as Redis: seconds with six decimals.
func cpuTime(t syscall.Timeval) string {
	return fmt.Sprintf("%d.%06d", t.Sec, t.Usec)
}

func ratio(a, b int64) string {
	if b == 0 {
		return "0.00"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// writeInfoSection writes one section; c runs the keyspace section's
// transaction (it may hold one already, inside MULTI or a script).
func (s *Server) writeInfoSection(sb *strings.Builder, sec string, c *Client) {
	switch sec {
	case "server":
		s.infoServer(sb)
	case "clients":
		sb.WriteString("# Clients\r\n")
		s.mu.Lock()
		n := len(s.clients)
		s.mu.Unlock()
		InfoField(sb, "connected_clients", n)
		InfoField(sb, "cluster_connections", 0)
		InfoField(sb, "maxclients", s.cfg.MaxClients())
		sb.WriteString(fixedClientRecentMaxInputBuffer)
		InfoField(sb, "blocked_clients", s.blocking.count()+int(s.postponed.Load()))
		InfoField(sb, "tracking_clients", s.trk.Stats().Clients)
		sb.WriteString(fixedClientsInTimeoutTable)
	case "memory":
		s.infoMemory(sb, c)
	case "persistence":
		s.infoPersistence(sb)
	case "stats":
		s.infoStats(sb)
	case "replication":
		sb.WriteString("# Replication\r\n")
		s.repl.InfoReplication(sb)
	case "cpu":
		sb.WriteString("# CPU\r\n")
		var self, children syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
		InfoField(sb, "used_cpu_sys", cpuTime(self.Stime))
		InfoField(sb, "used_cpu_user", cpuTime(self.Utime))
		InfoField(sb, "used_cpu_sys_children", cpuTime(children.Stime))
		InfoField(sb, "used_cpu_user_children", cpuTime(children.Utime))
		// Go has no main thread: every goroutine's time is the process's.
		InfoField(sb, "used_cpu_sys_main_thread", cpuTime(self.Stime))
		InfoField(sb, "used_cpu_user_main_thread", cpuTime(self.Utime))
	case "module_list":
		sb.WriteString("# Modules\r\n")
	case "commandstats":
		s.infoCommandStats(sb)
	case "errorstats":
		sb.WriteString("# Errorstats\r\n")
		s.info.errMu.Lock()
		codes := make([]string, 0, len(s.info.errs))
		for code := range s.info.errs {
			codes = append(codes, code)
		}
		sort.Strings(codes)
		for _, code := range codes {
			fmt.Fprintf(sb, "errorstat_%s:count=%d\r\n", code, s.info.errs[code])
		}
		s.info.errMu.Unlock()
	case "latencystats":
		s.infoLatencyStats(sb)
	case "cluster":
		sb.WriteString("# Cluster\r\n")
		InfoField(sb, "cluster_enabled", 0)
	case "keyspace":
		sb.WriteString("# Keyspace\r\n")
		e := s.engine
		withLock := e.View // InfoText: no client
		if c != nil {
			withLock = c.withLock
		}
		withLock(func(tx *tiering.Tx) error {
			for db := 0; db < e.Databases(); db++ {
				n := tx.DBSize(db)
				if n == 0 {
					continue
				}
				fmt.Fprintf(sb, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, tx.Expires(db))
			}
			return nil
		})
	case "tiering":
		s.infoTiering(sb, c)
	}
}

func (s *Server) infoServer(sb *strings.Builder) {
	sb.WriteString("# Server\r\n")
	InfoField(sb, "redis_version", RedisVersion)
	sb.WriteString(fixedRedisGitSha1)
	InfoField(sb, "os", uname())
	InfoField(sb, "arch_bits", 64)
	InfoField(sb, "monotonic_clock", "POSIX clock_gettime")
	sb.WriteString(fixedMultiplexingApi)
	InfoField(sb, "process_id", os.Getpid())
	InfoField(sb, "process_supervised", "no")
	InfoField(sb, "run_id", s.info.runID)
	InfoField(sb, "tcp_port", s.cfg.Port())
	now := time.Now()
	InfoField(sb, "server_time_usec", now.UnixMicro())
	up := now.Sub(s.started)
	InfoField(sb, "uptime_in_seconds", int64(up/time.Second))
	InfoField(sb, "uptime_in_days", int64(up/(24*time.Hour)))
	InfoField(sb, "hz", 10)
	InfoField(sb, "configured_hz", 10)
	InfoField(sb, "lru_clock", now.Unix()&(1<<24-1))
	exe, _ := os.Executable()
	InfoField(sb, "executable", exe)
	InfoField(sb, "config_file", s.cfg.File())
	InfoField(sb, "io_threads_active", 0)
	InfoField(sb, "spillway_version", Version)
	InfoField(sb, "spillway_mode", "embedded")
	InfoField(sb, "go_version", runtime.Version())
}

func (s *Server) infoMemory(sb *strings.Builder, c *Client) {
	sb.WriteString("# Memory\r\n")
	m := s.memory(c)
	InfoField(sb, "used_memory", m.Used)
	InfoField(sb, "used_memory_human", HumanBytes(m.Used))
	InfoField(sb, "used_memory_rss", m.RSS)
	InfoField(sb, "used_memory_rss_human", HumanBytes(m.RSS))
	InfoField(sb, "used_memory_peak", m.Peak)
	InfoField(sb, "used_memory_peak_human", HumanBytes(m.Peak))
	InfoField(sb, "used_memory_peak_perc", fmt.Sprintf("%.2f%%", float64(m.Used)*100/float64(max(m.Peak, 1))))
	overhead := m.Startup + m.Lua
	InfoField(sb, "used_memory_overhead", overhead)
	InfoField(sb, "used_memory_startup", m.Startup)
	InfoField(sb, "used_memory_dataset", m.Hot.Used)
	InfoField(sb, "used_memory_dataset_perc", fmt.Sprintf("%.2f%%", datasetPerc(m)))
	InfoField(sb, "allocator_allocated", m.HeapAlloc)
	InfoField(sb, "allocator_active", m.HeapInuse)
	InfoField(sb, "allocator_resident", m.HeapResident)
	InfoField(sb, "total_system_memory", totalSystemMemory())
	InfoField(sb, "total_system_memory_human", HumanBytes(totalSystemMemory()))
	InfoField(sb, "used_memory_lua", m.Lua)
	InfoField(sb, "used_memory_vm_eval", m.Lua)
	InfoField(sb, "used_memory_lua_human", HumanBytes(m.Lua))
	InfoField(sb, "used_memory_scripts_eval", 0)
	if s.scripts != nil {
		InfoField(sb, "number_of_cached_scripts", s.scripts.NumScripts())
	}
	// The scripting engine's estimate covers EVAL's and FUNCTION's
	// interpreters together: it is reported as EVAL's.
	InfoField(sb, "used_memory_vm_functions", 0)
	InfoField(sb, "used_memory_vm_total", m.Lua)
	InfoField(sb, "used_memory_vm_total_human", HumanBytes(m.Lua))
	sb.WriteString(fixedUsedMemoryFunctions)
	maxmem := s.cfg.MaxMemory()
	InfoField(sb, "maxmemory", maxmem)
	InfoField(sb, "maxmemory_human", HumanBytes(maxmem))
	InfoField(sb, "maxmemory_policy", "noeviction")
	InfoField(sb, "allocator_frag_ratio", ratio(m.HeapInuse, m.HeapAlloc))
	InfoField(sb, "allocator_frag_bytes", m.HeapInuse-m.HeapAlloc)
	InfoField(sb, "allocator_rss_ratio", ratio(m.HeapResident, m.HeapInuse))
	InfoField(sb, "allocator_rss_bytes", m.HeapResident-m.HeapInuse)
	InfoField(sb, "rss_overhead_ratio", ratio(m.RSS, m.HeapResident))
	InfoField(sb, "rss_overhead_bytes", m.RSS-m.HeapResident)
	InfoField(sb, "mem_fragmentation_ratio", ratio(m.RSS, m.Used))
	InfoField(sb, "mem_fragmentation_bytes", m.RSS-m.Used)
	InfoField(sb, "mem_not_counted_for_evict", 0)
	InfoField(sb, "mem_replication_backlog", s.repl.BacklogMemory())
	sb.WriteString(fixedMemTotalReplicationBuffers)
	// Spillway frees at once what Redis frees in the background: nothing
	// is ever pending.
	InfoField(sb, "lazyfree_pending_objects", 0)
	InfoField(sb, "lazyfreed_objects", s.info.lazyfreed.Load())
	InfoField(sb, "hot_budget", m.Hot.Budget)
	InfoField(sb, "go_heap_alloc", m.HeapAlloc)
	InfoField(sb, "go_num_gc", m.NumGC)
}

// datasetPerc is the dataset's share of the memory used beyond the
// startup baseline, as Redis's used_memory_dataset_perc.
func datasetPerc(m MemoryFigures) float64 {
	net := m.Used - m.Startup
	if net <= 0 {
		return 0
	}
	return float64(m.Hot.Used) * 100 / float64(net)
}

func (s *Server) infoPersistence(sb *strings.Builder) {
	sb.WriteString("# Persistence\r\n")
	InfoField(sb, "loading", b2i(s.rdb.Loading()))
	sb.WriteString(fixedLoading)
	s.rdb.WriteInfo(sb)
	sb.WriteString(fixedAOFEnabled)
	s.rdb.WriteLoadingInfo(sb)
	InfoField(sb, "spillway_appendfsync", s.engine.Cold().FsyncPolicy().String())
	InfoField(sb, "spillway_durability", "pebble-wal")
}

func (s *Server) infoStats(sb *strings.Builder) {
	st := &s.engine.Stats
	sb.WriteString("# Stats\r\n")
	InfoField(sb, "total_connections_received", s.stats.connections.Load())
	InfoField(sb, "total_commands_processed", s.stats.commands.Load())
	InfoField(sb, "instantaneous_ops_per_sec", 0)
	InfoField(sb, "total_net_input_bytes", s.stats.netIn.Load())
	InfoField(sb, "total_net_output_bytes", s.stats.netOut.Load())
	InfoField(sb, "total_net_repl_input_bytes", 0)
	InfoField(sb, "total_net_repl_output_bytes", s.repl.OutputBytes.Load())
	sb.WriteString(fixedInstantaneousInputKbps)
	InfoField(sb, "rejected_connections", s.stats.rejectedConns.Load())
	InfoField(sb, "sync_full", s.repl.SyncFull.Load())
	InfoField(sb, "sync_partial_ok", s.repl.SyncPartialOK.Load())
	InfoField(sb, "sync_partial_err", s.repl.SyncPartialErr.Load())
	InfoField(sb, "expired_keys", st.ExpiredKeys.Load())
	sb.WriteString(fixedExpiredStalePerc)
	// Demotion moves a key to disk; it is not an eviction (Tx.Evict is).
	InfoField(sb, "evicted_keys", st.EvictedKeys.Load())
	sb.WriteString(fixedEvictedClients)
	InfoField(sb, "keyspace_hits", st.KeyspaceHits.Load())
	InfoField(sb, "keyspace_misses", st.KeyspaceMisses.Load())
	InfoField(sb, "pubsub_channels", s.pubsub.Len(pubsub.Channels))
	InfoField(sb, "pubsub_patterns", s.pubsub.Len(pubsub.Patterns))
	InfoField(sb, "pubsubshard_channels", s.pubsub.Len(pubsub.Shard))
	sb.WriteString(fixedLatestForkUsec)
	s.trk.WriteInfoStats(sb)
	sb.WriteString("unexpected_error_replies:0\r\n")
	InfoField(sb, "total_error_replies", s.stats.errorReplies.Load())
	sb.WriteString(fixedDumpPayloadSanitizations)
}

// infoCommandStats writes a line per command (subcommands as
// "config|get") that was called, rejected or failed since the start or
// CONFIG RESETSTAT, sorted by name.
func (s *Server) infoCommandStats(sb *strings.Builder) {
	sb.WriteString("# Commandstats\r\n")
	var line []byte
	var visit func(cmds []*cmdtable.Command)
	visit = func(cmds []*cmdtable.Command) {
		for _, cmd := range cmds {
			st := &s.info.cmds[cmd.ID()]
			calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
			if calls != 0 || rejected != 0 || failed != 0 {
				usec := st.nanos.Load() / 1000
				perCall := 0.0
				if calls > 0 {
					perCall = float64(usec) / float64(calls)
				}
				line = append(line[:0], "cmdstat_"...)
				line = append(line, cmd.Name...)
				line = append(line, ":calls="...)
				line = strconv.AppendInt(line, calls, 10)
				line = append(line, ",usec="...)
				line = strconv.AppendInt(line, usec, 10)
				line = append(line, ",usec_per_call="...)
				line = strconv.AppendFloat(line, perCall, 'f', 2, 64)
				line = append(line, ",rejected_calls="...)
				line = strconv.AppendInt(line, rejected, 10)
				line = append(line, ",failed_calls="...)
				line = strconv.AppendInt(line, failed, 10)
				line = append(line, "\r\n"...)
				sb.Write(line)
			}
			visit(cmd.Subcommands)
		}
	}
	visit(cmdtable.All())
}

// infoLatencyStats writes the latency percentiles of every command with
// a histogram (called while latency-tracking was on), sorted by name.
func (s *Server) infoLatencyStats(sb *strings.Builder) {
	sb.WriteString("# Latencystats\r\n")
	var line []byte
	var visit func(cmds []*cmdtable.Command)
	visit = func(cmds []*cmdtable.Command) {
		for _, cmd := range cmds {
			if h := s.info.cmds[cmd.ID()].hist.Load(); h != nil {
				line = append(append(line[:0], "latency_percentiles_usec_"...), cmd.Name...)
				line = append(line, ':')
				var ok bool
				if line, ok = h.AppendPercentiles(line, latPercentiles); ok {
					sb.Write(append(line, "\r\n"...))
				}
			}
			visit(cmd.Subcommands)
		}
	}
	visit(cmdtable.All())
}

// engineFigures runs fn in a transaction: c's open group's (inside MULTI
// or a script, which holds the engine's lock already: taking it again
// hung the server) or a View of its own (c nil: no client).
func (s *Server) engineFigures(c *Client, fn func(tx *tiering.Tx)) {
	if c != nil && c.group != nil {
		fn(c.group)
		return
	}
	s.engine.View(func(tx *tiering.Tx) error { fn(tx); return nil })
}

func (s *Server) infoTiering(sb *strings.Builder, c *Client) {
	e := s.engine
	st := &e.Stats
	sb.WriteString("# Tiering\r\n")
	var total int64
	var hot tiering.HotMemory
	var dirty int
	s.engineFigures(c, func(tx *tiering.Tx) { total, hot, dirty = tx.KeysOnDisk(), tx.HotMemory(), tx.DirtyKeys() })
	InfoField(sb, "mode", "embedded")
	InfoField(sb, "hot_keys", hot.Keys)
	InfoField(sb, "cold_keys", total-int64(hot.Keys))
	InfoField(sb, "hot_bytes", hot.Used)
	InfoField(sb, "hot_budget", hot.Budget)
	InfoField(sb, "maxmemory", s.cfg.MaxMemory())
	InfoField(sb, "cold_bytes_on_disk", e.Cold().DiskUsage())
	InfoField(sb, "demotions", st.Demotions.Load())
	InfoField(sb, "promotions", st.Promotions.Load())
	InfoField(sb, "promotions_in_steps", st.SteppedPromotions.Load())
	InfoField(sb, "cold_reads", st.ColdReads.Load())
	InfoField(sb, "expired_cold_keys", st.ExpiredColdKeys.Load())
	InfoField(sb, "reclaimed_versions", st.ReclaimedVers.Load())
	InfoField(sb, "write_back_dirty_keys", dirty)
	InfoField(sb, "write_back_log_only_writes", st.LogOnlyWrites.Load())
	InfoField(sb, "write_back_checkpoints", st.Checkpoints.Load())
	InfoField(sb, "write_log_bytes", e.Cold().LogBytes())
	rs := e.Cold().ReadStats()
	InfoField(sb, "cold_store_gets", rs.Gets)
	InfoField(sb, "cold_store_iter_steps", rs.IterSteps)
	InfoField(sb, "cold_store_iter_points", rs.IterPoints)
}

// configValue returns a setting's value as CONFIG GET reports it.
func (s *Server) configValue(name string) string {
	for _, p := range s.cfg.Get([]byte(name)) {
		if p[0] == name {
			return p[1]
		}
	}
	return ""
}

// noteFlush counts a FLUSHDB or FLUSHALL (all) that removed n keys, as
// Redis does: n changes to the dataset, or, for FLUSHALL with save points
// configured, none (its save resets the counter); and n objects freed in
// the background when it ran ASYNC (explicitly or by
// lazyfree-lazy-user-flush). args are the command's.
func (s *Server) noteFlush(n int64, args [][]byte, all bool) {
	async := len(args) == 2 && strings.EqualFold(string(args[1]), "async") ||
		len(args) == 1 && s.configValue("lazyfree-lazy-user-flush") == "yes"
	if async {
		s.info.lazyfreed.Add(n)
	}
	if all && s.configValue("save") != "" {
		s.info.dirty.Store(0)
		return
	}
	s.info.dirty.Add(n)
}

// noteSaved resets the dirty counter by the changes a save covered
// (before: the counter when the save began), as Redis after SAVE or
// BGSAVE.
func (s *Server) noteSaved(before int64) { s.info.dirty.Add(-before) }

// dirtyCount returns the dirty counter.
func (s *Server) dirtyCount() int64 { return s.info.dirty.Load() }

// Fields whose values never change here (no forks, replication, AOF or
// RDB child, active defrag...), as a stand-alone redis-server without
// persistence reports them; each block is in Redis's order.
var (
	fixedClientRecentMaxInputBuffer = infoFixed("client_recent_max_input_buffer:0 client_recent_max_output_buffer:0")
	fixedClientsInTimeoutTable      = infoFixed("clients_in_timeout_table:0")
	fixedRedisGitSha1               = infoFixed("redis_git_sha1:00000000 redis_git_dirty:0 redis_build_id:0 redis_mode:standalone")
	fixedMultiplexingApi            = infoFixed("multiplexing_api:epoll atomicvar_api:c11-builtin gcc_version:0.0.0")
	fixedUsedMemoryFunctions        = infoFixed("used_memory_functions:0 used_memory_scripts:0 used_memory_scripts_human:0B")
	fixedMemTotalReplicationBuffers = infoFixed("mem_total_replication_buffers:0 mem_clients_slaves:0 mem_clients_normal:0 " +
		"mem_cluster_links:0 mem_aof_buffer:0 mem_allocator:go active_defrag_running:0")
	fixedLoading = infoFixed("async_loading:0 current_cow_peak:0 current_cow_size:0 " +
		"current_cow_size_age:0 current_fork_perc:0.00 current_save_keys_processed:0 " +
		"current_save_keys_total:0")
	fixedAOFEnabled = infoFixed("aof_enabled:0 " +
		"aof_rewrite_in_progress:0 aof_rewrite_scheduled:0 aof_last_rewrite_time_sec:-1 " +
		"aof_current_rewrite_time_sec:-1 aof_last_bgrewrite_status:ok aof_rewrites:0 " +
		"aof_rewrites_consecutive_failures:0 aof_last_write_status:ok aof_last_cow_size:0 " +
		"module_fork_in_progress:0 module_fork_last_cow_size:0")
	fixedInstantaneousInputKbps = infoFixed("instantaneous_input_kbps:0.00 instantaneous_output_kbps:0.00 " +
		"instantaneous_input_repl_kbps:0.00 instantaneous_output_repl_kbps:0.00")
	fixedExpiredStalePerc = infoFixed("expired_stale_perc:0.00 expired_time_cap_reached_count:0 " +
		"expire_cycle_cpu_milliseconds:0")
	fixedEvictedClients = infoFixed("evicted_clients:0 total_eviction_exceeded_time:0 " +
		"current_eviction_exceeded_time:0")
	fixedLatestForkUsec = infoFixed("latest_fork_usec:0 total_forks:0 migrate_cached_sockets:0 " +
		"slave_expires_tracked_keys:0 active_defrag_hits:0 active_defrag_misses:0 " +
		"active_defrag_key_hits:0 active_defrag_key_misses:0 total_active_defrag_time:0 " +
		"current_active_defrag_time:0")
	fixedDumpPayloadSanitizations = infoFixed("dump_payload_sanitizations:0 total_reads_processed:0 total_writes_processed:0 " +
		"io_threaded_reads_processed:0 io_threaded_writes_processed:0 " +
		"reply_buffer_shrinks:0 reply_buffer_expands:0")
)

// infoFixed turns space-separated "name:value" fields (no value holds a
// space) into INFO lines.
func infoFixed(fields string) string {
	return strings.Join(strings.Fields(fields), "\r\n") + "\r\n"
}
