package config

import (
	"math"
	"strings"
)

// kind is how a setting's value is parsed and written back.
type kind uint8

const (
	kindInt     kind = iota // signed integer within [min, max]
	kindMemory              // memory size (memtoull) within [umin, umax]
	kindPercent             // memory size, or N% of maxmemory (stored as -N, as Redis does)
	kindOctal               // octal integer within [min, max]
	kindBool                // yes/no
	kindEnum                // one of enum, case-insensitive
	kindFlags               // one or more of enum (bit flags; enum[0] is the empty set)
	kindString              // any single argument
	kindList                // several arguments, validated by the setting's list function
	kindObuf                // client-output-buffer-limit's class groups
)

// multiArg reports whether the kind takes several arguments (Redis's
// MULTI_ARG_CONFIG): CONFIG SET splits its value on single spaces, and a
// config file line with one non-empty argument is split like a line.
func (k kind) multiArg() bool { return k == kindFlags || k == kindList || k == kindObuf }

// mutability says whether CONFIG SET may change a setting.
type mutability uint8

const (
	mutable   mutability = iota
	immutable            // "can't set immutable config"
	protected            // "can't set protected config" (Redis's dir, dbfilename)
	// fixed is for Spillway's own start-up settings: CONFIG SET accepts
	// the current value (a no-op, so that a client setting every setting
	// to what CONFIG GET reports succeeds) and refuses any other as
	// immutable.
	fixed
)

// Indices of the settings typed accessors read. The other settings follow
// them in registry (redisSettings).
const (
	idxPort = iota
	idxBind
	idxDir
	idxMaxMemory
	idxAppendFsync
	idxRequirePass
	idxDatabases
	idxLogLevel
	idxLogFile
	idxUpstream
	idxUpstreamConnections
	idxMaxClients
	idxTimeout
	idxProtoMaxBulkLen
	idxClientQueryBufferLimit
	idxPromoteMinHits
	idxColdReadMaxBytes
	idxBlockCache
	idxExpireSweepKeysPerTick
	idxColdCompression
	idxWriteBack
	idxMetricsPort
	idxMetricsBind
	// Redis-compatible settings.
	idxSave
	idxAppendOnly
	idxMaxMemoryPolicy
	idxMaxMemorySamples
	idxTCPKeepalive
	idxSlowlogLogSlowerThan
	idxSlowlogMaxLen
	idxNotifyKeyspaceEvents
	idxHz
	idxBusyReplyThreshold
	idxClusterEnabled
	idxDaemonize
	idxSupervised
	idxPidFile
	idxDBFilename
	idxReplicaReadOnly
	idxProtectedMode
	idxIOThreads
	idxLatencyTracking
	idxActiveDefrag
	idxLazyfreeLazyEviction
	idxLazyfreeLazyExpire
	idxLazyfreeLazyServerDel
	idxLazyfreeLazyUserDel
	idxLazyfreeLazyUserFlush
	idxListMaxListpackSize
	idxHashMaxListpackEntries
	idxHashMaxListpackValue
	idxSetMaxIntsetEntries
	idxZsetMaxListpackEntries
	idxZsetMaxListpackValue
	idxClientOutputBufferLimit
	idxHLLSparseMaxBytes
	numKeyed
)

// setting describes one configuration directive.
type setting struct {
	name  string
	alias string // older name Redis still accepts, "" if none
	kind  kind
	min   int64  // kindInt, kindOctal bounds; kindPercent: -min is the largest percentage
	max   int64  //
	umin  uint64 // kindMemory, kindPercent bounds
	umax  uint64 //
	enum  []string
	def   string // default, in CONFIG SET syntax
	mut   mutability
	// hidden settings (Redis's HIDDEN_CONFIG) are left out of CONFIG GET
	// patterns and returned only when named exactly.
	hidden bool
	// list parses kindList's arguments into the stored list and its CONFIG
	// GET form.
	list func(args []string) (list []string, text string, err error)
	// check validates or normalises a parsed value; may be nil.
	check func(v *value) error
	// onSet, if set, adjusts a value CONFIG SET stores (not a config
	// file's), as a Redis apply function adjusting the setting does.
	onSet func(v *value)
	// merge, if set, combines a parsed value with the setting's current
	// one (nil: none yet) into the value stored: a directive that sets
	// only part of the setting.
	merge func(old, v *value) *value
	// volatile settings (Redis's VOLATILE_CONFIG) run their apply hooks
	// on every CONFIG SET, even to the same value: a file setting whose
	// file changed.
	volatile bool
	// spillway marks Spillway's own settings.
	spillway bool
	// effect marks the settings Spillway acts upon; the others are stored
	// and reported only (logged at start when a config file sets them).
	effect bool
	doc    string
}

func intSetting(name string, min, max int64, def string, doc string) *setting {
	return &setting{name: name, kind: kindInt, min: min, max: max, def: def, doc: doc}
}

func memSetting(name string, min, max uint64, def string, doc string) *setting {
	return &setting{name: name, kind: kindMemory, umin: min, umax: max, def: def, doc: doc}
}

func boolSetting(name, def, doc string) *setting {
	return &setting{name: name, kind: kindBool, def: def, doc: doc}
}

func enumSetting(name string, enum []string, def, doc string) *setting {
	return &setting{name: name, kind: kindEnum, enum: enum, def: def, doc: doc}
}

func strSetting(name, def, doc string) *setting {
	return &setting{name: name, kind: kindString, def: def, doc: doc}
}

func listSetting(name, def string, list func([]string) ([]string, string, error), doc string) *setting {
	return &setting{name: name, kind: kindList, def: def, list: list, doc: doc}
}

// Option modifiers, chained on a *setting when building the registry.
func (s *setting) withAlias(a string) *setting             { s.alias = a; return s }
func (s *setting) withMut(m mutability) *setting           { s.mut = m; return s }
func (s *setting) withCheck(f func(*value) error) *setting { s.check = f; return s }
func (s *setting) own() *setting                           { s.spillway, s.effect = true, true; return s }
func (s *setting) acted() *setting                         { s.effect = true; return s }
func (s *setting) actsAs(doc string) *setting              { s.doc, s.effect = doc, true; return s }
func (s *setting) hide() *setting                          { s.hidden = true; return s }
func (s *setting) withVolatile() *setting                  { s.volatile = true; return s }

const (
	maxInt32  = math.MaxInt32
	minInt32  = math.MinInt32
	maxInt64  = math.MaxInt64
	maxUint32 = math.MaxUint32
	mb        = 1 << 20
)

// Databases are addressed by one byte in the cold store's keys.
const maxDatabases = 256

// noEffect is the meaning of a setting Spillway stores and reports only.
const noEffect = "Stored, no effect."

// keyed holds the settings typed accessors read, indexed by the idx
// constants. Defaults, types, bounds and names are Redis 7.0.15's except
// where the doc says otherwise (TestRegistryMatchesRedis checks them
// against a real redis-server).
var keyed = [numKeyed]*setting{
	idxPort: intSetting("port", 0, 65535, "6380",
		"TCP port to listen on (Redis: 6379). CONFIG SET rebinds the listeners: the new port is "+
			"bound before the old one is closed, and a port that cannot be bound leaves the old one.").own(),
	idxBind: listSetting("bind", "127.0.0.1", parseBind,
		"Addresses to listen on, up to 16 (Redis: `* -::*`); `*` is every IPv4 address, `::*` every "+
			"IPv6 one, a leading `-` makes an address optional (skipped if unavailable), \"\" listens "+
			"nowhere. CONFIG SET rebinds as for port.").own(),
	idxDir: strSetting("dir", "./data",
		"Directory of the cold store (Pebble files and write-ahead log); CONFIG GET shows it absolute "+
			"(Redis: the working directory). Cannot be changed while running.").
		withMut(protected).withCheck(checkDir).own(),
	idxMaxMemory: memSetting("maxmemory", 0, math.MaxUint64, "",
		"Memory budget of the whole process: hot tier plus the cold store's block cache and memtables (0: no limit, as in Redis; the hot tier then never demotes). Redis's default is 0.").own(),
	idxAppendFsync: enumSetting("appendfsync", []string{"everysec", "always", "no"}, "everysec",
		"When the write-ahead log is fsynced: every write, every second, or left to the OS.").own(),
	idxRequirePass: strSetting("requirepass", "",
		"Password clients must AUTH with (empty: none).").own(),
	idxDatabases: intSetting("databases", 1, maxDatabases, "16",
		"Number of databases (SELECT 0..n-1); at most 256 (Redis: 2147483647).").withMut(immutable).own(),
	idxLogLevel: enumSetting("loglevel", []string{"debug", "verbose", "notice", "warning"}, "notice",
		"Log verbosity.").own(),
	idxLogFile: strSetting("logfile", "",
		"Log file (empty: standard error).").withMut(immutable).own(),
	idxUpstream: strSetting("upstream", "",
		"Upstream Redis URL "+upstreamSyntax+" (empty: embedded mode).").
		withMut(fixed).withCheck(checkUpstream).own(),
	idxUpstreamConnections: intSetting("upstream-connections", 1, 64, "1",
		"Shared upstream connections per protocol that clients' commands are pipelined onto (upstream mode).").
		withMut(fixed).own(),
	idxMaxClients: intSetting("maxclients", 1, maxUint32, "10000",
		"Maximum number of connected clients.").own(),
	idxTimeout: intSetting("timeout", 0, maxInt32, "0",
		"Close a client idle for this many seconds (0: never).").own(),
	idxProtoMaxBulkLen: memSetting("proto-max-bulk-len", mb, maxInt64, "512mb",
		"Largest bulk string a client may send.").own(),
	idxClientQueryBufferLimit: memSetting("client-query-buffer-limit", mb, maxInt64, "1gb",
		"Largest query buffer of one client.").own(),
	idxPromoteMinHits: intSetting("promote-min-hits", 1, maxInt32, "2",
		"Reads of a cold key within the tiering window before it is promoted to the hot tier.").own(),
	idxColdReadMaxBytes: memSetting("cold-read-max-bytes", 0, maxInt64, "1mb",
		"Cold values larger than this are served from disk without promotion.").own(),
	idxBlockCache: memSetting("block-cache", 0, maxInt64, "0",
		"Cold store block cache size (0: maxmemory/8; 64mb in upstream mode).").own(),
	idxExpireSweepKeysPerTick: intSetting("expire-sweep-keys-per-tick", 1, maxInt32, "1000",
		"Expired cold keys removed per sweeper tick, at most.").own(),
	idxColdCompression: enumSetting("cold-compression", []string{"zstd", "snappy"}, "zstd",
		"Block compression of the cold store's bottom levels (most of its data): `zstd` (level 1, 4 KB "+
			"blocks: about 0.6x the size of random-letter values) or `snappy` (cheaper to write and scan, "+
			"compresses less). The levels above always use Snappy. Read at start; tables written before "+
			"take the new codec as compactions rewrite them (CONFIG SET stores the value for the next "+
			"start, as block-cache).").own(),
	idxWriteBack: boolSetting("write-back", "yes",
		"Overwrites of hot strings that keep their expiry (SET, INCR, APPEND...) go to the write log only; "+
			"the cold store's record is written when the key is demoted or at a checkpoint (once the write "+
			"log holds more than the dirty values and at least 64 MB). Durability is the same either way. "+
			"`no`: every write reaches the store's records at once. Read at start (CONFIG SET stores the "+
			"value for the next start, as block-cache).").own(),
	idxMetricsPort: intSetting("metrics-port", 0, 65535, "0",
		"Port of the Prometheus endpoint (`/metrics` over HTTP) on metrics-bind; 0: none. CONFIG SET "+
			"starts, moves (the new address is bound before the old one is closed) or stops it.").own(),
	idxMetricsBind: strSetting("metrics-bind", "127.0.0.1",
		"Address of the Prometheus endpoint (`*`: every address). Loopback by default: the "+
			"metrics name commands and key counts.").own(),

	idxSave: listSetting("save", "", parseSave,
		"RDB save points, as in Redis: `seconds changes` pairs; BGSAVE writes `dbfilename` when one is "+
			"reached, and SHUTDOWN or SIGTERM saves when any is set. Empty by default: the store "+
			"already persists every write (Redis's default is `3600 1 300 100 60 10000`).").acted(),
	idxAppendOnly: boolSetting("appendonly", "no",
		"Stored, no effect (durability is set by appendfsync)."),
	idxMaxMemoryPolicy: enumSetting("maxmemory-policy", []string{"volatile-lru", "volatile-lfu",
		"volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
		"noeviction", "Spillway spills cold keys to disk instead of evicting: an LFU policy makes the hot tier "+
			"demote by LFU counters (keys accessed since stored get a second chance) and OBJECT FREQ answer; "+
			"an eviction policy evicts only under a budget that cannot be met (see OOM in the README).").acted(),
	idxMaxMemorySamples:     intSetting("maxmemory-samples", 1, maxInt32, "5", noEffect),
	idxTCPKeepalive:         intSetting("tcp-keepalive", 0, maxInt32, "300", noEffect),
	idxSlowlogLogSlowerThan: intSetting("slowlog-log-slower-than", -1, maxInt64, "10000", noEffect),
	idxSlowlogMaxLen:        intSetting("slowlog-max-len", 0, maxInt64, "128", noEffect),
	idxNotifyKeyspaceEvents: strSetting("notify-keyspace-events", "",
		"Keyspace notification classes.").withCheck(checkNotify).acted(),
	idxHz: intSetting("hz", 0, maxInt32, "10",
		"Stored, no effect; clamped to 1..500 as Redis does.").withCheck(checkHz),
	idxBusyReplyThreshold: intSetting("busy-reply-threshold", 0, maxInt64, "5000",
		"Script time limit in milliseconds.").withAlias("lua-time-limit").acted(),
	idxClusterEnabled: boolSetting("cluster-enabled", "no", noEffect).withMut(immutable),
	idxDaemonize:      boolSetting("daemonize", "no", noEffect).withMut(immutable),
	idxSupervised: enumSetting("supervised", []string{"upstart", "systemd", "auto", "no"}, "no",
		noEffect).withMut(immutable),
	idxPidFile: strSetting("pidfile", "", noEffect).withMut(immutable),
	idxDBFilename: strSetting("dbfilename", "dump.rdb",
		"RDB file that SAVE, BGSAVE and shutdown write in `dir`, and that a start with an empty store loads.").acted().
		withMut(protected).withCheck(checkDBFilename),
	idxReplicaReadOnly: boolSetting("replica-read-only", "yes",
		"A replica refuses clients' writes (READONLY).").acted().
		withAlias("slave-read-only"),
	idxProtectedMode:   boolSetting("protected-mode", "yes", noEffect),
	idxIOThreads:       intSetting("io-threads", 1, 128, "1", noEffect).withMut(immutable),
	idxLatencyTracking: boolSetting("latency-tracking", "yes", noEffect),
	idxActiveDefrag: boolSetting("activedefrag", "no",
		"Always no (Redis refuses yes without its Jemalloc).").withCheck(checkDefrag),
	idxLazyfreeLazyEviction: boolSetting("lazyfree-lazy-eviction", "no", noEffect).
		actsAs("Replication: an evicted key propagates as UNLINK when yes, DEL when no."),
	idxLazyfreeLazyExpire: boolSetting("lazyfree-lazy-expire", "no", noEffect).
		actsAs("Replication: an expired key (and EXPIRE/GETEX to a past time) propagates as UNLINK when yes, DEL when no."),
	idxLazyfreeLazyServerDel: boolSetting("lazyfree-lazy-server-del", "no", noEffect),
	idxLazyfreeLazyUserDel: boolSetting("lazyfree-lazy-user-del", "no", noEffect).
		actsAs("Replication: GETDEL propagates as UNLINK when yes, DEL when no."),
	idxLazyfreeLazyUserFlush: boolSetting("lazyfree-lazy-user-flush", "no", noEffect),
	idxListMaxListpackSize: intSetting("list-max-listpack-size", minInt32, maxInt32, "-2",
		noEffect).withAlias("list-max-ziplist-size"),
	idxHashMaxListpackEntries: intSetting("hash-max-listpack-entries", 0, maxInt64, "512",
		noEffect).withAlias("hash-max-ziplist-entries"),
	idxHashMaxListpackValue: memSetting("hash-max-listpack-value", 0, maxInt64, "64",
		noEffect).withAlias("hash-max-ziplist-value"),
	idxSetMaxIntsetEntries: intSetting("set-max-intset-entries", 0, maxInt64, "512", noEffect),
	idxZsetMaxListpackEntries: intSetting("zset-max-listpack-entries", 0, maxInt64, "128",
		noEffect).withAlias("zset-max-ziplist-entries"),
	idxZsetMaxListpackValue: memSetting("zset-max-listpack-value", 0, maxInt64, "64",
		noEffect).withAlias("zset-max-ziplist-value"),
	idxClientOutputBufferLimit: {name: "client-output-buffer-limit", kind: kindObuf,
		def:   "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		merge: mergeOutputLimits, effect: true,
		doc: "Output buffer limits per client class: `<class> <hard> <soft> <soft-seconds>` groups " +
			"(classes normal, replica/slave, pubsub). Applied to Pub/Sub subscribers: one whose queued " +
			"output reaches the hard limit, or stays over the soft limit for longer than the seconds, " +
			"is disconnected."},
	idxHLLSparseMaxBytes: memSetting("hll-sparse-max-bytes", 0, maxInt64, "3000",
		"Largest sparse HyperLogLog: one that would grow past it is converted to the dense encoding.").acted(),
}

// registry holds every setting: keyed (indexed by the idx constants), then
// the rest of Redis's.
var registry = append(keyed[:numKeyed:numKeyed], redisSettings...)

// numSettings is the number of settings.
var numSettings = len(registry)

// names maps every lower-case name and alias to its entry.
var names = func() map[string]nameEntry {
	m := make(map[string]nameEntry, 2*numSettings)
	for i, s := range registry {
		m[s.name] = nameEntry{idx: i}
		if s.alias != "" {
			m[s.alias] = nameEntry{idx: i, alias: true}
		}
	}
	return m
}()

// nameBytes holds each setting's name and alias (nil if none) as bytes,
// for glob matching without conversions.
var nameBytes = func() [][2][]byte {
	nb := make([][2][]byte, numSettings)
	for i, s := range registry {
		nb[i][0] = []byte(s.name)
		if s.alias != "" {
			nb[i][1] = []byte(s.alias)
		}
	}
	return nb
}()

// nameEntry identifies a name: a setting and whether the name is its alias.
type nameEntry struct {
	idx   int
	alias bool
}

func (e nameEntry) name() string {
	if e.alias {
		return registry[e.idx].alias
	}
	return registry[e.idx].name
}

// lookup finds a setting by name or alias, ignoring ASCII case.
func lookup(name string) (nameEntry, bool) {
	e, ok := names[name]
	if !ok {
		e, ok = names[strings.ToLower(name)]
	}
	return e, ok
}

// value is one parsed setting value. Values are immutable once stored.
type value struct {
	n    int64    // kindInt, kindOctal, kindPercent (-N for N%), kindBool (0/1), kindEnum (index), kindFlags (bits)
	u    uint64   // kindMemory, kindPercent (bytes)
	s    string   // kindString
	list []string // kindList
	text string   // CONFIG GET form
	// obl is kindObuf's value.
	obl *outputLimits
}
