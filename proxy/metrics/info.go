package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// The INFO fields exported, with redis_exporter's names (its
// metricMapGauges and metricMapCounters) where the meaning is Redis's, and
// Spillway's own (the Tiering section) under spillway_.

// gauges maps INFO fields to redis_exporter's gauge names (without the
// namespace).
var gauges = map[string]string{
	"uptime_in_seconds":           "uptime_in_seconds",
	"process_id":                  "process_id",
	"connected_clients":           "connected_clients",
	"blocked_clients":             "blocked_clients",
	"tracking_clients":            "tracking_clients",
	"maxclients":                  "max_clients",
	"used_memory":                 "memory_used_bytes",
	"used_memory_rss":             "memory_used_rss_bytes",
	"used_memory_peak":            "memory_used_peak_bytes",
	"used_memory_lua":             "memory_used_lua_bytes",
	"used_memory_overhead":        "memory_used_overhead_bytes",
	"used_memory_startup":         "memory_used_startup_bytes",
	"used_memory_dataset":         "memory_used_dataset_bytes",
	"used_memory_scripts":         "memory_used_scripts_bytes",
	"maxmemory":                   "memory_max_bytes",
	"mem_fragmentation_ratio":     "mem_fragmentation_ratio",
	"loading":                     "loading_dump_file",
	"rdb_changes_since_last_save": "rdb_changes_since_last_save",
	"rdb_bgsave_in_progress":      "rdb_bgsave_in_progress",
	"rdb_last_save_time":          "rdb_last_save_timestamp_seconds",
	"aof_enabled":                 "aof_enabled",
	"pubsub_channels":             "pubsub_channels",
	"pubsub_patterns":             "pubsub_patterns",
	"instantaneous_ops_per_sec":   "instantaneous_ops",
	"instantaneous_input_kbps":    "instantaneous_input_kbps",
	"instantaneous_output_kbps":   "instantaneous_output_kbps",
	"connected_slaves":            "connected_slaves",
	"master_repl_offset":          "master_repl_offset",
	"repl_backlog_size":           "replication_backlog_bytes",
}

// counters maps INFO fields to redis_exporter's counter names.
var counters = map[string]string{
	"total_connections_received": "connections_received_total",
	"total_commands_processed":   "commands_processed_total",
	"rejected_connections":       "rejected_connections_total",
	"total_net_input_bytes":      "net_input_bytes_total",
	"total_net_output_bytes":     "net_output_bytes_total",
	"expired_keys":               "expired_keys_total",
	"evicted_keys":               "evicted_keys_total",
	"keyspace_hits":              "keyspace_hits_total",
	"keyspace_misses":            "keyspace_misses_total",
	"total_error_replies":        "total_error_replies",
	"used_cpu_sys":               "cpu_sys_seconds_total",
	"used_cpu_user":              "cpu_user_seconds_total",
	"used_cpu_sys_children":      "cpu_sys_children_seconds_total",
	"used_cpu_user_children":     "cpu_user_children_seconds_total",
}

// tieringMetric is one field of INFO's Tiering section: its spillway_
// name, whether it is a counter, and its help.
type tieringMetric struct {
	name    string
	counter bool
	help    string
}

// tieringFields maps the Tiering section's fields (both modes') to
// spillway_ metrics. upstream_status is exported as spillway_upstream_up.
var tieringFields = map[string]tieringMetric{
	"hot_keys":                {"hot_keys", false, "Keys with a decoded copy in memory (embedded mode)."},
	"cold_keys":               {"cold_keys", false, "Keys held only in the cold store."},
	"hot_bytes":               {"hot_bytes", false, "Bytes the hot tier is charged for its keys (embedded mode)."},
	"hot_budget":              {"hot_budget_bytes", false, "Byte budget of the hot tier (embedded mode)."},
	"maxmemory":               {"budget_bytes", false, "maxmemory: the whole process's budget (embedded), the upstream's (upstream mode)."},
	"cold_bytes_on_disk":      {"cold_store_disk_bytes", false, "Size of the cold store on disk (Pebble's files and WAL)."},
	"demotions":               {"demotions_total", true, "Keys moved from memory (hot tier or upstream) to the cold store."},
	"promotions":              {"promotions_total", true, "Keys moved from the cold store to memory (hot tier or upstream)."},
	"promotions_in_steps":     {"promotions_in_steps_total", true, "Promotions of big structures done in steps (embedded mode)."},
	"cold_reads":              {"cold_reads_total", true, "Reads answered from the cold store without promotion."},
	"expired_cold_keys":       {"expired_cold_keys_total", true, "Cold keys removed by expiry (embedded mode)."},
	"reclaimed_versions":      {"reclaimed_versions_total", true, "Old versions of rewritten cold keys reclaimed (embedded mode)."},
	"cold_store_gets":         {"cold_store_gets_total", true, "Point reads of the cold store."},
	"cold_store_iter_steps":   {"cold_store_iter_steps_total", true, "Records visited by cold store iterators."},
	"cold_store_iter_points":  {"cold_store_iter_points_total", true, "Internal points (records and tombstones) cold store iterators stepped over."},
	"upstream_reconnects":     {"upstream_reconnects_total", true, "Reconnections of the shared upstream connections (upstream mode)."},
	"upstream_used_memory":    {"upstream_used_memory_bytes", false, "The upstream's used_memory as the demoter last read it (upstream mode)."},
	"upstream_pipeline_depth": {"upstream_pipeline_depth", false, "Requests sent or queued on the shared upstream connections awaiting replies (upstream mode)."},
	"demotion_aborts":         {"demotion_aborts_total", true, "Demotions given up because the key changed meanwhile (upstream mode)."},
	"reload_conflicts":        {"reload_conflicts_total", true, "Promotions that found the key written meanwhile (upstream mode)."},
	"throttling":              {"throttling", false, "1 while writes are throttled because the upstream is over its budget (upstream mode)."},
	"throttled_writes":        {"throttled_writes_total", true, "Writes delayed by throttling (upstream mode)."},
}

// info is a parsed INFO text: section name (lower case) to its fields in
// order.
type info map[string][][2]string

func parseInfo(text string) info {
	out := info{}
	sec := ""
	for _, line := range strings.Split(text, "\r\n") {
		if strings.HasPrefix(line, "# ") {
			sec = strings.ToLower(strings.TrimPrefix(line, "# "))
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && sec != "" {
			out[sec] = append(out[sec], [2]string{k, v})
		}
	}
	return out
}

// subFields parses "a=1,b=2" into its values.
func subFields(v string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			m[k] = val
		}
	}
	return m
}

func num(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// emit sends a metric described on the fly (an unchecked collector).
func emit(ch chan<- prometheus.Metric, name, help string, t prometheus.ValueType, v float64, labels ...string) {
	var keys, vals []string
	for i := 0; i+1 < len(labels); i += 2 {
		keys = append(keys, labels[i])
		vals = append(vals, labels[i+1])
	}
	d := prometheus.NewDesc(name, help, keys, nil)
	ch <- prometheus.MustNewConstMetric(d, t, v, vals...)
}

// collectInfo converts a parsed INFO into metrics.
func collectInfo(ch chan<- prometheus.Metric, in info) {
	for sec, fields := range in {
		switch sec {
		case "commandstats":
			collectCommandStats(ch, fields)
			continue
		case "errorstats":
			for _, f := range fields {
				if v, ok := num(subFields(f[1])["count"]); ok {
					emit(ch, "redis_errors_total", "Error replies by error code (INFO errorstats).",
						prometheus.CounterValue, v, "err", strings.TrimPrefix(f[0], "errorstat_"))
				}
			}
			continue
		case "keyspace":
			for _, f := range fields {
				sub := subFields(f[1])
				if v, ok := num(sub["keys"]); ok {
					emit(ch, "redis_db_keys", "Keys per database (both tiers).", prometheus.GaugeValue, v, "db", f[0])
				}
				if v, ok := num(sub["expires"]); ok {
					emit(ch, "redis_db_keys_expiring", "Keys with an expiry per database.", prometheus.GaugeValue, v, "db", f[0])
				}
				if v, ok := num(sub["avg_ttl"]); ok {
					emit(ch, "redis_db_avg_ttl_seconds", "Average time to live per database.", prometheus.GaugeValue, v/1000, "db", f[0])
				}
			}
			continue
		case "tiering":
			collectTiering(ch, fields)
			continue
		case "server":
			labels := []string{}
			for _, f := range fields {
				switch f[0] {
				case "redis_version", "redis_mode", "os", "arch_bits", "tcp_port", "run_id":
					labels = append(labels, f[0], f[1])
				}
			}
			emit(ch, "redis_instance_info", "Information about the server (value 1).", prometheus.GaugeValue, 1, labels...)
		}
		for _, f := range fields {
			if name, ok := gauges[f[0]]; ok {
				if v, ok := num(f[1]); ok {
					emit(ch, "redis_"+name, "INFO "+f[0]+".", prometheus.GaugeValue, v)
				}
			} else if name, ok := counters[f[0]]; ok {
				if v, ok := num(f[1]); ok {
					emit(ch, "redis_"+name, "INFO "+f[0]+".", prometheus.CounterValue, v)
				}
			}
		}
	}
}

// collectCommandStats exports INFO commandstats as redis_exporter does:
// calls, total duration, rejected and failed calls per command (a
// subcommand is "config|set").
func collectCommandStats(ch chan<- prometheus.Metric, fields [][2]string) {
	for _, f := range fields {
		cmd := strings.TrimPrefix(f[0], "cmdstat_")
		sub := subFields(f[1])
		if v, ok := num(sub["calls"]); ok {
			emit(ch, "redis_commands_total", "Calls per command (INFO commandstats).", prometheus.CounterValue, v, "cmd", cmd)
		}
		if v, ok := num(sub["usec"]); ok {
			emit(ch, "redis_commands_duration_seconds_total", "Time spent per command.", prometheus.CounterValue, v/1e6, "cmd", cmd)
		}
		if v, ok := num(sub["rejected_calls"]); ok {
			emit(ch, "redis_commands_rejected_calls_total", "Calls refused before running (arity, ACL, OOM...).",
				prometheus.CounterValue, v, "cmd", cmd)
		}
		if v, ok := num(sub["failed_calls"]); ok {
			emit(ch, "redis_commands_failed_calls_total", "Calls that ran and replied an error.",
				prometheus.CounterValue, v, "cmd", cmd)
		}
	}
}

// collectTiering exports INFO's Tiering section under spillway_.
func collectTiering(ch chan<- prometheus.Metric, fields [][2]string) {
	for _, f := range fields {
		switch f[0] {
		case "mode":
			emit(ch, "spillway_mode_info", "Spillway's mode (value 1).", prometheus.GaugeValue, 1, "mode", f[1])
			continue
		case "upstream_status":
			up := 0.0
			if f[1] == "up" {
				up = 1
			}
			emit(ch, "spillway_upstream_up", "1 while the upstream Redis is reachable (upstream mode).",
				prometheus.GaugeValue, up)
			continue
		}
		m, ok := tieringFields[f[0]]
		if !ok {
			continue
		}
		v, ok := num(f[1])
		if !ok {
			continue
		}
		t := prometheus.GaugeValue
		if m.counter {
			t = prometheus.CounterValue
		}
		emit(ch, "spillway_"+m.name, m.help, t, v)
	}
}
