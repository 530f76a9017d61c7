package config

import (
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"
)

// FsyncPolicy is the appendfsync setting.
type FsyncPolicy int

// appendfsync values; the order matches registry[idxAppendFsync].enum.
const (
	FsyncEverySec FsyncPolicy = iota
	FsyncAlways
	FsyncNo
)

func (p FsyncPolicy) String() string {
	if p < 0 || int(p) >= len(registry[idxAppendFsync].enum) {
		return "unknown"
	}
	return registry[idxAppendFsync].enum[p]
}

// LevelVerbose is the slog level for Redis's "verbose", between Debug and Info.
const LevelVerbose = slog.LevelDebug + 2

func (c *Config) load(i int) *value { return c.vals[i].Load() }

func (c *Config) mem(i int) int64 {
	u := c.load(i).u
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}

// Port is the TCP port to listen on.
func (c *Config) Port() int { return int(c.load(idxPort).n) }

// Bind returns the addresses to listen on. The caller must not modify the slice.
func (c *Config) Bind() []string { return c.load(idxBind).list }

// Dir is the absolute data directory.
func (c *Config) Dir() string { return c.load(idxDir).s }

// MaxMemory is the hot tier's budget in bytes; 0 means no limit, as in
// Redis. Values above math.MaxInt64 (Redis accepts up to 2⁶⁴-1) read as
// math.MaxInt64.
func (c *Config) MaxMemory() int64 { return c.mem(idxMaxMemory) }

// AppendFsync is the write-ahead log's fsync policy.
func (c *Config) AppendFsync() FsyncPolicy { return FsyncPolicy(c.load(idxAppendFsync).n) }

// RequirePass is the password clients must AUTH with; "" means none.
func (c *Config) RequirePass() string { return c.load(idxRequirePass).s }

// Databases is the number of databases.
func (c *Config) Databases() int { return int(c.load(idxDatabases).n) }

// LogLevel maps loglevel to slog: debug=Debug, verbose=LevelVerbose,
// notice=Info, warning=Warn.
func (c *Config) LogLevel() slog.Level {
	switch c.load(idxLogLevel).n {
	case 0:
		return slog.LevelDebug
	case 1:
		return LevelVerbose
	case 2:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// LogFile is the log file; "" means standard error.
func (c *Config) LogFile() string { return c.load(idxLogFile).s }

// Upstream is the upstream URL as configured; "" means embedded mode.
func (c *Config) Upstream() string { return c.load(idxUpstream).s }

// UpstreamConnections is the number of shared upstream connections per
// protocol.
func (c *Config) UpstreamConnections() int { return int(c.load(idxUpstreamConnections).n) }

// UpstreamTarget parses Upstream; ok is false in embedded mode.
func (c *Config) UpstreamTarget() (u Upstream, ok bool) {
	s := c.Upstream()
	if s == "" {
		return Upstream{}, false
	}
	u, err := ParseUpstream(s) // validated when set
	return u, err == nil
}

// MaxClients is the maximum number of connected clients.
func (c *Config) MaxClients() int { return int(c.load(idxMaxClients).n) }

// Timeout is the idle time after which a client is closed; 0 means never.
func (c *Config) Timeout() time.Duration {
	return time.Duration(c.load(idxTimeout).n) * time.Second
}

// ProtoMaxBulkLen is the largest bulk string a client may send.
func (c *Config) ProtoMaxBulkLen() int64 { return c.mem(idxProtoMaxBulkLen) }

// ClientQueryBufferLimit is the largest query buffer of one client.
func (c *Config) ClientQueryBufferLimit() int64 { return c.mem(idxClientQueryBufferLimit) }

// HLLSparseMaxBytes is hll-sparse-max-bytes: the size past which a sparse
// HyperLogLog is converted to the dense encoding.
func (c *Config) HLLSparseMaxBytes() int64 { return c.mem(idxHLLSparseMaxBytes) }

// PromoteMinHits is the promote-min-hits tiering knob (its semantics belong
// to the tiering package).
func (c *Config) PromoteMinHits() int { return int(c.load(idxPromoteMinHits).n) }

// ColdReadMaxBytes: cold values larger than this are served from disk
// without promotion.
func (c *Config) ColdReadMaxBytes() int64 { return c.mem(idxColdReadMaxBytes) }

// BlockCache is the cold store's block cache size in bytes: the configured
// block-cache, or when that is 0, MaxMemory()/8 (or DefaultMaxMemory()/8
// when maxmemory is 0, i.e. unlimited); 64 MB in upstream mode, where
// maxmemory budgets the upstream.
func (c *Config) BlockCache() int64 {
	if n := c.mem(idxBlockCache); n > 0 {
		return n
	}
	if c.Upstream() != "" {
		return 64 << 20 // maxmemory budgets the upstream, not Spillway
	}
	m := c.MaxMemory()
	if m == 0 {
		m = int64(min(DefaultMaxMemory(), math.MaxInt64))
	}
	return m / 8
}

// ExpireSweepKeysPerTick bounds the expired cold keys removed per sweeper tick.
func (c *Config) ExpireSweepKeysPerTick() int { return int(c.load(idxExpireSweepKeysPerTick).n) }

// ColdCompression is cold-compression: "zstd" or "snappy".
func (c *Config) ColdCompression() string {
	return keyed[idxColdCompression].enum[c.load(idxColdCompression).n]
}

// WriteBack is write-back: overwrites of hot strings go to the write log
// only until demotion or a checkpoint (tiering/writeback.go).
func (c *Config) WriteBack() bool { return c.load(idxWriteBack).n != 0 }

// MetricsAddr is the Prometheus endpoint's listen address, "" when
// metrics-port is 0.
func (c *Config) MetricsAddr() string {
	port := c.load(idxMetricsPort).n
	if port == 0 {
		return ""
	}
	host := c.load(idxMetricsBind).s
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// Hz is the background task frequency, 1..500.
func (c *Config) Hz() int { return int(c.load(idxHz).n) }

// TCPKeepalive is the TCP keepalive period; 0 means off.
func (c *Config) TCPKeepalive() time.Duration {
	return time.Duration(c.load(idxTCPKeepalive).n) * time.Second
}

// SlowlogLogSlowerThan is the slow log threshold in microseconds; negative
// means off.
func (c *Config) SlowlogLogSlowerThan() int64 { return c.load(idxSlowlogLogSlowerThan).n }

// SlowlogMaxLen is the slow log's length.
func (c *Config) SlowlogMaxLen() int64 { return c.load(idxSlowlogMaxLen).n }

// NotifyKeyspaceEvents returns the keyspace notification classes in
// Redis's canonical form ("" means off).
func (c *Config) NotifyKeyspaceEvents() string { return c.load(idxNotifyKeyspaceEvents).s }

// ClientOutputBufferLimit returns client-output-buffer-limit's limits for
// class.
func (c *Config) ClientOutputBufferLimit(class ClientClass) OutputBufferLimit {
	if class < 0 || class >= numClientClasses {
		return OutputBufferLimit{}
	}
	return c.load(idxClientOutputBufferLimit).obl.lim[class]
}
