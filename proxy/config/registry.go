package config

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// kind is how a setting's value is parsed and written back.
type kind uint8

const (
	kindInt    kind = iota // signed integer within [min, max]
	kindMemory             // memory size (memtoull) within [umin, umax]
	kindBool               // yes/no
	kindEnum               // one of enum, case-insensitive
	kindString             // any single argument
	kindList               // several arguments (bind, save)
	kindObuf               // client-output-buffer-limit's class groups
)

// mutability says whether CONFIG SET may change a setting.
type mutability uint8

const (
	mutable   mutability = iota
	immutable            // "can't set immutable config"
	protected            // "can't set protected config" (Redis's default for dir, dbfilename)
)

// Indices of the settings in registry. Typed accessors use them directly.
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
	idxListCompressDepth
	idxHashMaxListpackEntries
	idxHashMaxListpackValue
	idxSetMaxIntsetEntries
	idxZsetMaxListpackEntries
	idxZsetMaxListpackValue
	idxClientOutputBufferLimit
	numSettings
)

// setting describes one configuration directive.
type setting struct {
	name  string
	alias string // older name Redis still accepts, "" if none
	kind  kind
	min   int64  // kindInt bounds
	max   int64  //
	umin  uint64 // kindMemory bounds
	umax  uint64 //
	enum  []string
	def   string // default, in CONFIG SET syntax
	mut   mutability
	// check validates or normalises a parsed value; may be nil.
	check func(v *value) error
	// merge, if set, combines a parsed value with the setting's current
	// one (nil: none yet) into the value stored: a directive that sets
	// only part of the setting.
	merge func(old, v *value) *value
	// spillway marks Spillway's own settings (the others exist for Redis
	// compatibility and are stored, not acted upon, unless documented).
	spillway bool
	doc      string
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

// Option modifiers, chained on a *setting when building the registry.
func (s *setting) withAlias(a string) *setting             { s.alias = a; return s }
func (s *setting) withMut(m mutability) *setting           { s.mut = m; return s }
func (s *setting) withCheck(f func(*value) error) *setting { s.check = f; return s }
func (s *setting) own() *setting                           { s.spillway = true; return s }

const (
	maxInt32  = math.MaxInt32
	maxInt64  = math.MaxInt64
	maxUint32 = math.MaxUint32
	mb        = 1 << 20
)

// Databases are addressed by one byte in the cold store's keys.
const maxDatabases = 256

// registry holds every setting, indexed by the idx constants.
var registry = [numSettings]*setting{
	idxPort: intSetting("port", 0, 65535, "6380",
		"TCP port to listen on.").withMut(immutable).own(),
	idxBind: (&setting{name: "bind", kind: kindList, def: "127.0.0.1",
		doc: "Addresses to listen on (up to 16, separated by spaces)."}).withMut(immutable).own(),
	idxDir: strSetting("dir", "./data",
		"Directory of the cold store (Pebble files and write-ahead log); CONFIG GET shows it absolute.").
		withMut(protected).withCheck(checkDir).own(),
	idxMaxMemory: memSetting("maxmemory", 0, math.MaxUint64, "",
		"Memory budget of the whole process: hot tier plus the cold store's block cache and memtables (0: no limit, as in Redis; the hot tier then never demotes).").own(),
	idxAppendFsync: enumSetting("appendfsync", []string{"everysec", "always", "no"}, "everysec",
		"When the write-ahead log is fsynced: every write, every second, or left to the OS.").own(),
	idxRequirePass: strSetting("requirepass", "",
		"Password clients must AUTH with (empty: none).").own(),
	idxDatabases: intSetting("databases", 1, maxDatabases, "16",
		"Number of databases (SELECT 0..n-1).").withMut(immutable).own(),
	idxLogLevel: enumSetting("loglevel", []string{"debug", "verbose", "notice", "warning"}, "notice",
		"Log verbosity.").own(),
	idxLogFile: strSetting("logfile", "",
		"Log file (empty: standard error).").withMut(immutable).own(),
	idxUpstream: strSetting("upstream", "",
		"Upstream Redis URL "+upstreamSyntax+" (empty: embedded mode).").
		withMut(immutable).withCheck(checkUpstream).own(),
	idxUpstreamConnections: intSetting("upstream-connections", 1, 64, "1",
		"Shared upstream connections per protocol that clients' commands are pipelined onto (upstream mode).").
		withMut(immutable).own(),
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

	idxSave: (&setting{name: "save", kind: kindList, def: "",
		doc: "Accepted for compatibility (Spillway persists continuously)."}),
	idxAppendOnly: boolSetting("appendonly", "no",
		"Accepted for compatibility (durability is set by appendfsync)."),
	idxMaxMemoryPolicy: enumSetting("maxmemory-policy", []string{"volatile-lru", "volatile-lfu",
		"volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"},
		"noeviction", "Accepted for compatibility: Spillway never evicts, it spills cold keys to disk."),
	idxMaxMemorySamples: intSetting("maxmemory-samples", 1, maxInt32, "5", "Accepted for compatibility."),
	idxTCPKeepalive: intSetting("tcp-keepalive", 0, maxInt32, "300",
		"TCP keepalive period in seconds (0: off)."),
	idxSlowlogLogSlowerThan: intSetting("slowlog-log-slower-than", -1, maxInt64, "10000",
		"Slow log threshold in microseconds (-1: off)."),
	idxSlowlogMaxLen: intSetting("slowlog-max-len", 0, maxInt64, "128", "Slow log length."),
	idxNotifyKeyspaceEvents: strSetting("notify-keyspace-events", "",
		"Keyspace notification classes.").withCheck(checkNotify),
	idxHz: intSetting("hz", 0, maxInt32, "10",
		"Background task frequency; clamped to 1..500 as Redis does.").withCheck(checkHz),
	idxBusyReplyThreshold: intSetting("busy-reply-threshold", 0, maxInt64, "5000",
		"Script time limit in milliseconds.").withAlias("lua-time-limit"),
	idxClusterEnabled: boolSetting("cluster-enabled", "no", "Always no.").withMut(immutable),
	idxDaemonize:      boolSetting("daemonize", "no", "Accepted for compatibility.").withMut(immutable),
	idxSupervised: enumSetting("supervised", []string{"upstart", "systemd", "auto", "no"}, "no",
		"Accepted for compatibility.").withMut(immutable),
	idxPidFile: strSetting("pidfile", "", "Accepted for compatibility.").withMut(immutable),
	idxDBFilename: strSetting("dbfilename", "dump.rdb", "Accepted for compatibility.").
		withMut(protected).withCheck(checkDBFilename),
	idxReplicaReadOnly: boolSetting("replica-read-only", "yes", "Accepted for compatibility.").
		withAlias("slave-read-only"),
	idxProtectedMode:   boolSetting("protected-mode", "yes", "Accepted for compatibility."),
	idxIOThreads:       intSetting("io-threads", 1, 128, "1", "Accepted for compatibility.").withMut(immutable),
	idxLatencyTracking: boolSetting("latency-tracking", "yes", "Accepted for compatibility."),
	idxActiveDefrag: boolSetting("activedefrag", "no",
		"Always no (Redis refuses yes without its Jemalloc).").withCheck(checkDefrag),
	idxLazyfreeLazyEviction:  boolSetting("lazyfree-lazy-eviction", "no", "Accepted for compatibility."),
	idxLazyfreeLazyExpire:    boolSetting("lazyfree-lazy-expire", "no", "Accepted for compatibility."),
	idxLazyfreeLazyServerDel: boolSetting("lazyfree-lazy-server-del", "no", "Accepted for compatibility."),
	idxLazyfreeLazyUserDel:   boolSetting("lazyfree-lazy-user-del", "no", "Accepted for compatibility."),
	idxLazyfreeLazyUserFlush: boolSetting("lazyfree-lazy-user-flush", "no", "Accepted for compatibility."),
	idxListMaxListpackSize: intSetting("list-max-listpack-size", math.MinInt32, maxInt32, "-2",
		"Accepted for compatibility.").withAlias("list-max-ziplist-size"),
	idxListCompressDepth: intSetting("list-compress-depth", 0, maxInt32, "0", "Accepted for compatibility."),
	idxHashMaxListpackEntries: intSetting("hash-max-listpack-entries", 0, maxInt64, "512",
		"Accepted for compatibility.").withAlias("hash-max-ziplist-entries"),
	idxHashMaxListpackValue: memSetting("hash-max-listpack-value", 0, maxInt64, "64",
		"Accepted for compatibility.").withAlias("hash-max-ziplist-value"),
	idxSetMaxIntsetEntries: intSetting("set-max-intset-entries", 0, maxInt64, "512",
		"Accepted for compatibility."),
	idxZsetMaxListpackEntries: intSetting("zset-max-listpack-entries", 0, maxInt64, "128",
		"Accepted for compatibility.").withAlias("zset-max-ziplist-entries"),
	idxZsetMaxListpackValue: memSetting("zset-max-listpack-value", 0, maxInt64, "64",
		"Accepted for compatibility.").withAlias("zset-max-ziplist-value"),
	idxClientOutputBufferLimit: {name: "client-output-buffer-limit", kind: kindObuf,
		def:   "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
		merge: mergeOutputLimits,
		doc: "Output buffer limits per client class: `<class> <hard> <soft> <soft-seconds>` groups " +
			"(classes normal, replica/slave, pubsub). Applied to Pub/Sub subscribers: one whose queued " +
			"output reaches the hard limit, or stays over the soft limit for longer than the seconds, " +
			"is disconnected."},
}

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
var nameBytes = func() (nb [numSettings][2][]byte) {
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
	n    int64    // kindInt, kindBool (0/1), kindEnum (index)
	u    uint64   // kindMemory
	s    string   // kindString
	list []string // kindList
	text string   // CONFIG GET form
	// obl is kindObuf's value.
	obl *outputLimits
}

// parseArgs parses a directive's arguments as read from a file or the
// command line.
func (s *setting) parseArgs(args []string) (*value, error) {
	switch s.kind {
	case kindList:
		return s.parseList(args)
	case kindObuf:
		if len(args) == 1 && strings.Contains(args[0], " ") {
			// One argument holding spaces is split, as Redis does for
			// its multi-argument settings.
			return s.parseSet(args[0])
		}
		return parseOutputLimits(args)
	}
	if len(args) != 1 {
		return nil, errWrongArgs
	}
	return s.parseOne(args[0])
}

// parseSet parses a CONFIG SET value; list settings split it on blanks.
func (s *setting) parseSet(arg string) (*value, error) {
	switch s.kind {
	case kindList:
		return s.parseList(strings.Fields(arg))
	case kindObuf:
		// Redis splits this value on single spaces (sdssplitlen).
		var args []string
		if arg != "" {
			args = strings.Split(arg, " ")
		}
		return parseOutputLimits(args)
	}
	return s.parseOne(arg)
}

func (s *setting) parseList(args []string) (*value, error) {
	var (
		list []string
		err  error
	)
	switch s.name {
	case "bind":
		list, err = parseBind(args)
	case "save":
		list, err = parseSave(args)
	}
	if err != nil {
		return nil, err
	}
	v := &value{list: list, text: strings.Join(list, " ")}
	return v, s.runCheck(v)
}

func (s *setting) parseOne(arg string) (*value, error) {
	v := &value{text: arg}
	switch s.kind {
	case kindInt:
		n, ok := cstr.ParseInt(arg)
		if !ok {
			return nil, errNotInteger
		}
		if n < s.min || n > s.max {
			return nil, errRange(strconv.FormatInt(s.min, 10), strconv.FormatInt(s.max, 10))
		}
		v.n, v.text = n, strconv.FormatInt(n, 10)
	case kindMemory:
		if strings.HasPrefix(arg, "-") {
			return nil, errNotMemory
		}
		u, ok := ParseMemory(arg)
		if !ok {
			return nil, errNotMemory
		}
		if u < s.umin || u > s.umax {
			return nil, errRange(strconv.FormatUint(s.umin, 10), strconv.FormatUint(s.umax, 10))
		}
		v.u, v.text = u, strconv.FormatUint(u, 10)
	case kindBool:
		switch {
		case strings.EqualFold(arg, "yes"):
			v.n, v.text = 1, "yes"
		case strings.EqualFold(arg, "no"):
			v.n, v.text = 0, "no"
		default:
			return nil, errNotBool
		}
	case kindEnum:
		i := -1
		for j, e := range s.enum {
			if strings.EqualFold(arg, e) {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, &enumError{s.enum}
		}
		v.n, v.text = int64(i), s.enum[i]
	case kindString:
		v.s = arg
	}
	return v, s.runCheck(v)
}

func (s *setting) runCheck(v *value) error {
	if s.check == nil {
		return nil
	}
	return s.check(v)
}

type enumError struct{ enum []string }

func (e *enumError) Error() string {
	return "argument(s) must be one of the following: " + strings.Join(e.enum, ", ")
}

// fileLines renders v as the directive lines CONFIG REWRITE writes.
func (s *setting) fileLines(v *value) []string {
	switch s.kind {
	case kindObuf:
		lines, _ := outputLimitsLines(v)
		return lines
	case kindMemory:
		return []string{s.name + " " + FormatMemory(v.u)}
	case kindString:
		return []string{s.name + " " + repr(v.s)}
	case kindList:
		if s.name == "save" {
			if len(v.list) == 0 {
				return []string{`save ""`}
			}
			lines := make([]string, 0, len(v.list)/2)
			for i := 0; i+1 < len(v.list); i += 2 {
				lines = append(lines, "save "+v.list[i]+" "+v.list[i+1])
			}
			return lines
		}
		parts := make([]string, len(v.list))
		for i, a := range v.list {
			parts[i] = bareOrRepr(a)
		}
		return []string{s.name + " " + strings.Join(parts, " ")}
	}
	return []string{s.name + " " + v.text}
}

func checkHz(v *value) error {
	v.n = min(max(v.n, 1), 500)
	v.text = strconv.FormatInt(v.n, 10)
	return nil
}

func checkNotify(v *value) error {
	c, err := canonicalNotify(v.s)
	if err != nil {
		return err
	}
	v.n = notifyFlagsOf(v.s) // the classes as given (see NotifyKeyspaceClasses)
	v.s, v.text = c, c
	return nil
}

func checkDefrag(v *value) error {
	if v.n != 0 {
		return errDefrag
	}
	return nil
}

func checkDBFilename(v *value) error {
	if strings.ContainsRune(v.s, '/') {
		return errDBFilenamePath
	}
	return nil
}

func checkDir(v *value) error {
	if v.s == "" {
		return errEmptyDir
	}
	if abs, err := filepath.Abs(v.s); err == nil {
		v.s = abs
	}
	v.text = v.s
	return nil
}

func checkUpstream(v *value) error {
	if v.s == "" {
		return nil
	}
	_, err := ParseUpstream(v.s)
	return err
}
