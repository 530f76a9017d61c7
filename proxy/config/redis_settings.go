package config

import (
	"math"
	"strconv"
)

// Compact constructors for redisSettings: settings Spillway stores and
// reports without acting on them (doc noEffect unless changed).
func yesNo(name, def string) *setting { return boolSetting(name, def, noEffect) }
func integer(name string, lo, hi int64, def string) *setting {
	return intSetting(name, lo, hi, def, noEffect)
}
func memory(name string, lo, hi uint64, def string) *setting {
	return memSetting(name, lo, hi, def, noEffect)
}
func text(name, def string) *setting { return strSetting(name, def, noEffect) }

// tlsText and tlsFile are the TLS settings Spillway acts on; a CONFIG SET
// of a file setting reloads even with the same value (a renewed file).
func tlsText(name, doc string) *setting { return strSetting(name, "", doc+tlsReload).acted() }
func tlsFile(name, doc string) *setting { return tlsText(name, doc).withVolatile() }

const tlsReload = " CONFIG SET reloads the TLS configuration while TLS is in use; a file that fails to " +
	"load is refused and the previous configuration stays."

func oneOf(name string, enum []string, def string) *setting {
	return enumSetting(name, enum, def, noEffect)
}

// minBacklog is Redis's CONFIG_REPL_BACKLOG_MIN_SIZE, applied by CONFIG
// SET repl-backlog-size.
func minBacklog(v *value) {
	if v.u < 16<<10 {
		v.u, v.text = 16<<10, strconv.FormatUint(16<<10, 10)
	}
}

var (
	protectedActions = []string{"no", "yes", "local"}
	shutdownFlags    = []string{"default", "save", "nosave", "now", "force"}
)

// redisSettings are the rest of Redis 7.0.15's settings (its config.c
// table, with TLS), with its names, aliases, types, bounds, defaults and
// mutability; TestRegistryMatchesRedis compares them with a live
// redis-server.
var redisSettings = []*setting{
	// yes/no
	yesNo("rdbchecksum", "yes").withMut(immutable),
	yesNo("io-threads-do-reads", "no").withMut(immutable),
	yesNo("always-show-logo", "no").withMut(immutable),
	yesNo("rdbcompression", "yes"),
	yesNo("rdb-del-sync-files", "no"),
	yesNo("activerehashing", "yes"),
	yesNo("stop-writes-on-bgsave-error", "yes"),
	yesNo("set-proc-title", "yes").withMut(immutable),
	yesNo("dynamic-hz", "yes"),
	yesNo("repl-disable-tcp-nodelay", "no"),
	yesNo("repl-diskless-sync", "yes").actsAs("A full resync streams the RDB to replicas that announce " +
		"`capa eof` (`$EOF:` framing) when yes; else it is written to a temporary file in `dir` first."),
	yesNo("aof-rewrite-incremental-fsync", "yes"),
	yesNo("no-appendfsync-on-rewrite", "no"),
	yesNo("cluster-require-full-coverage", "yes"),
	yesNo("rdb-save-incremental-fsync", "yes"),
	yesNo("aof-load-truncated", "yes"),
	yesNo("aof-use-rdb-preamble", "yes"),
	yesNo("aof-timestamp-enabled", "no"),
	yesNo("cluster-replica-no-failover", "no").withAlias("cluster-slave-no-failover"),
	yesNo("replica-lazy-flush", "no").withAlias("slave-lazy-flush"),
	yesNo("replica-serve-stale-data", "yes").withAlias("slave-serve-stale-data").
		actsAs("A replica: `no` refuses commands without the stale flag (MASTERDOWN) while its link is down."),
	yesNo("replica-ignore-maxmemory", "yes").withAlias("slave-ignore-maxmemory"),
	yesNo("jemalloc-bg-thread", "yes"),
	yesNo("syslog-enabled", "no").withMut(immutable),
	yesNo("cluster-allow-reads-when-down", "no"),
	yesNo("cluster-allow-pubsubshard-when-down", "yes"),
	yesNo("crash-log-enabled", "yes"),
	yesNo("crash-memcheck-enabled", "yes"),
	yesNo("use-exit-on-panic", "no").hide(),
	yesNo("disable-thp", "yes").withMut(immutable),
	yesNo("cluster-allow-replica-migration", "yes"),
	yesNo("replica-announced", "yes"),
	yesNo("aof-disable-auto-gc", "no"),
	yesNo("replica-ignore-disk-write-errors", "no"),
	yesNo("lua-enable-deprecated-api", "no").withMut(immutable).hide(),

	// strings
	text("aclfile", "").withMut(immutable),
	text("unixsocket", "").withMut(immutable),
	text("replica-announce-ip", "").withAlias("slave-announce-ip").
		actsAs("A replica: the address REPLCONF ip-address tells its master."),
	text("masteruser", "").actsAs("A replica: the ACL user of the AUTH sent to its master."),
	text("masterauth", "").actsAs("A replica: the password of the AUTH sent to its master."),
	text("cluster-announce-ip", ""),
	text("cluster-config-file", "nodes.conf").withMut(immutable),
	text("cluster-announce-hostname", "").withCheck(checkHostname),
	text("syslog-ident", "redis").withMut(immutable),
	text("appendfilename", "appendonly.aof").withMut(immutable).withCheck(checkAOFFilename),
	text("appenddirname", "appendonlydir").withMut(immutable).withCheck(checkAOFDirname),
	text("server_cpulist", "").withMut(immutable),
	text("bio_cpulist", "").withMut(immutable),
	text("aof_rewrite_cpulist", "").withMut(immutable),
	text("bgsave_cpulist", "").withMut(immutable),
	text("ignore-warnings", ""),
	text("proc-title-template", "{title} {listen-addr} {server-mode}").withCheck(checkProcTitle),
	text("bind-source-addr", ""),

	// enums
	oneOf("syslog-facility", []string{"user", "local0", "local1", "local2", "local3", "local4",
		"local5", "local6", "local7"}, "local0").withMut(immutable),
	oneOf("repl-diskless-load", []string{"disabled", "on-empty-db", "swapdb"}, "disabled"),
	oneOf("oom-score-adj", []string{"no", "yes", "relative", "absolute"}, "no").withCheck(checkOOMAdj),
	oneOf("acl-pubsub-default", []string{"allchannels", "resetchannels"}, "resetchannels"),
	oneOf("sanitize-dump-payload", []string{"no", "yes", "clients"}, "no"),
	enumSetting("enable-protected-configs", protectedActions, "no",
		"Stored, no effect: dir and dbfilename stay protected.").withMut(immutable),
	enumSetting("enable-debug-command", protectedActions, "no",
		"Stored, no effect: DEBUG is refused as a stock redis-server refuses it.").withMut(immutable),
	enumSetting("enable-module-command", protectedActions, "no",
		"Stored, no effect: Spillway loads no modules.").withMut(immutable),
	oneOf("cluster-preferred-endpoint-type", []string{"ip", "hostname", "unknown-endpoint"}, "ip"),
	oneOf("propagation-error-behavior", []string{"ignore", "panic", "panic-on-replicas"}, "ignore"),
	{name: "shutdown-on-sigint", kind: kindFlags, enum: shutdownFlags, def: "default",
		check: checkShutdownFlags, doc: noEffect},
	{name: "shutdown-on-sigterm", kind: kindFlags, enum: shutdownFlags, def: "default",
		check: checkShutdownFlags, doc: noEffect},

	// integers
	integer("auto-aof-rewrite-percentage", 0, maxInt32, "100"),
	integer("cluster-replica-validity-factor", 0, maxInt32, "10").withAlias("cluster-slave-validity-factor"),
	integer("cluster-migration-barrier", 0, maxInt32, "1"),
	integer("active-defrag-cycle-min", 1, 99, "1"),
	integer("active-defrag-cycle-max", 1, 99, "25"),
	integer("active-defrag-threshold-lower", 0, 1000, "10"),
	integer("active-defrag-threshold-upper", 0, 1000, "100"),
	intSetting("lfu-log-factor", 0, maxInt32, "10",
		"LFU counter's logarithm factor for hot keys (OBJECT FREQ under an LFU policy).").acted(),
	intSetting("lfu-decay-time", 0, maxInt32, "1",
		"Minutes per decrement of a hot key's LFU counter; 0: never decays.").acted(),
	integer("replica-priority", 0, maxInt32, "100").withAlias("slave-priority").
		actsAs("A replica: shown as INFO's slave_priority."),
	integer("repl-diskless-sync-delay", 0, maxInt32, "5"),
	integer("maxmemory-eviction-tenacity", 0, 100, "10"),
	integer("replica-announce-port", 0, 65535, "0").withAlias("slave-announce-port").
		actsAs("A replica: the port REPLCONF listening-port tells its master (0: port)."),
	integer("tcp-backlog", 0, maxInt32, "511").withMut(immutable),
	integer("cluster-port", 0, 65535, "0").withMut(immutable),
	integer("cluster-announce-bus-port", 0, 65535, "0"),
	integer("cluster-announce-port", 0, 65535, "0"),
	integer("cluster-announce-tls-port", 0, 65535, "0"),
	integer("repl-timeout", 1, maxInt32, "60").actsAs("Seconds without a REPLCONF ACK after which a replica is dropped; a replica drops its link to a silent master after as long."),
	integer("repl-ping-replica-period", 1, maxInt32, "10").withAlias("repl-ping-slave-period").
		actsAs("Seconds between the PINGs sent to replicas through the stream."),
	integer("list-compress-depth", 0, maxInt32, "0"),
	integer("rdb-key-save-delay", minInt32, maxInt32, "0").hide(),
	integer("key-load-delay", minInt32, maxInt32, "0").hide(),
	integer("active-expire-effort", 1, 10, "1"),
	integer("min-replicas-to-write", 0, maxInt32, "0").withAlias("min-slaves-to-write").
		actsAs("Writes are refused with NOREPLICAS while fewer replicas acknowledged within `min-replicas-max-lag` (0: off)."),
	integer("min-replicas-max-lag", 0, maxInt32, "10").withAlias("min-slaves-max-lag").
		actsAs("Seconds since a replica's last ACK for it to count for `min-replicas-to-write` (0: off)."),
	integer("watchdog-period", 0, maxInt32, "0").hide(),
	integer("shutdown-timeout", 0, maxInt32, "10"),
	integer("repl-diskless-sync-max-replicas", 0, maxInt32, "0"),
	{name: "unixsocketperm", kind: kindOctal, min: 0, max: 0o777, def: "0", mut: immutable, doc: noEffect},
	integer("socket-mark-id", 0, maxUint32, "0").withMut(immutable),
	integer("active-defrag-max-scan-fields", 1, maxInt64, "1000"),
	integer("acllog-max-len", 0, maxInt64, "128"),
	integer("cluster-node-timeout", 0, maxInt64, "15000"),
	integer("latency-monitor-threshold", 0, maxInt64, "0"),
	integer("stream-node-max-entries", 0, maxInt64, "100"),
	integer("tracking-table-max-keys", 0, maxInt64, "1000000"),
	integer("repl-backlog-ttl", 0, maxInt64, "3600"),
	integer("loading-process-events-interval-bytes", 1024, maxInt32, "2097152").hide(),

	// memory sizes
	{name: "repl-backlog-size", kind: kindMemory, umin: 1, umax: maxInt64, def: "1mb", onSet: minBacklog,
		doc: "The replication backlog (created when the first replica attaches), for partial resyncs. " +
			"CONFIG SET raises a value under 16kb to 16kb, as Redis does.", effect: true},
	memory("cluster-link-sendbuf-limit", 0, math.MaxUint64, "0"),
	memory("active-defrag-ignore-bytes", 1, maxInt64, "100mb"),
	memory("stream-node-max-bytes", 0, maxInt64, "4096"),
	memory("auto-aof-rewrite-min-size", 0, maxInt64, "64mb"),
	{name: "maxmemory-clients", kind: kindPercent, min: -100, umax: maxInt64, def: "0",
		doc: "Stored, no effect: a size, or a percentage of maxmemory (`N%`)."},

	// TLS (proxy/tlsconf builds Go's crypto/tls configurations from them)
	intSetting("tls-port", 0, 65535, "0",
		"TLS port to listen on, on the bind addresses, besides port or alone (port 0); 0: none. "+
			"CONFIG SET rebinds as for port.").acted(),
	intSetting("tls-session-cache-size", 0, maxInt32, "20480",
		"Sessions the TLS port's session cache holds (0: no limit); the oldest make room.").acted(),
	intSetting("tls-session-cache-timeout", 0, maxInt32, "300",
		"Seconds a cached TLS session stays resumable.").acted(),
	yesNo("tls-cluster", "no"),
	yesNo("tls-replication", "no"),
	enumSetting("tls-auth-clients", []string{"no", "yes", "optional"}, "yes",
		"Client certificates on the TLS port: required and verified against the CA (yes), "+
			"verified if sent (optional), not asked for (no). Read at each handshake.").acted(),
	boolSetting("tls-prefer-server-ciphers", "no",
		"Accepted; Go's TLS always chooses the suite by its own preference order.").acted(),
	boolSetting("tls-session-caching", "yes",
		"Session resumption from a server-side session cache (tls-session-cache-size, "+
			"tls-session-cache-timeout); no disables it.").acted(),
	tlsFile("tls-cert-file", "Certificate (PEM chain) of the TLS port and, without "+
		"tls-client-cert-file, of rediss:// upstream connections."),
	tlsFile("tls-key-file", "Private key of tls-cert-file (PEM; PKCS#8 or legacy encrypted with tls-key-file-pass)."),
	tlsText("tls-key-file-pass", "Password of an encrypted tls-key-file."),
	tlsFile("tls-client-cert-file", "Client certificate presented to a rediss:// upstream."),
	tlsFile("tls-client-key-file", "Private key of tls-client-cert-file."),
	tlsText("tls-client-key-file-pass", "Password of an encrypted tls-client-key-file."),
	tlsFile("tls-dh-params-file", "DH parameters: must be readable, as Redis reads them; unused (Go's TLS "+
		"has no finite-field DHE)."),
	tlsFile("tls-ca-cert-file", "CA certificates (PEM) that client certificates and a rediss:// upstream's "+
		"certificate are verified against."),
	tlsFile("tls-ca-cert-dir", "Directory of CA certificates (every PEM file in it)."),
	tlsText("tls-protocols", "TLS versions, among `TLSv1 TLSv1.1 TLSv1.2 TLSv1.3` (empty: TLSv1.2 and TLSv1.3). "+
		"Go enables a range: the lowest to the highest named."),
	tlsText("tls-ciphers", "TLS 1.2 cipher list as OpenSSL's, over the suites Go implements: a name "+
		"(OpenSSL's or IANA's) adds a suite, !name or -name removes it, keywords (DEFAULT, HIGH) add Go's defaults."),
	tlsText("tls-ciphersuites", "TLS 1.3 suites: checked (Go's three names), Go always enables all three."),

	// several arguments
	listSetting("oom-score-adj-values", "0 200 800", parseOOMValues, noEffect),
	listSetting("replicaof", "no one", parseReplicaOf,
		"`<host> <port>`: the master to replicate from at startup (REPLICAOF at run time).").
		withAlias("slaveof").withMut(immutable),
	listSetting("latency-tracking-info-percentiles", "50 99 99.9", parsePercentiles, noEffect),
}
