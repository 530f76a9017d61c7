package metrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/spillway/spillway/coldstore"
)

// The testdata files are INFO EVERYTHING as recorded from the spillway
// binary after SET a 1, EXPIRE a 100, INCR a, HGET a b (a WRONGTYPE
// error) and CONFIG GET x: embedded.txt in embedded mode, upstream.txt in
// upstream mode in front of a redis-server 7.0.

// gather collects the metrics of info (and of store, if not nil) through a
// registry, which also checks that no series is emitted twice and that
// every family is consistent.
func gather(t *testing.T, info string, store *coldstore.Store) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(&collector{info: func() string { return info }, store: store}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of family name's series with the labels given
// as name=value pairs; ok is false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

func readInfo(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCollectInfo(t *testing.T) {
	type want struct {
		name   string
		labels []string
		v      float64
		kind   dto.MetricType
	}
	common := []want{
		{"redis_up", nil, 1, dto.MetricType_GAUGE},
		{"redis_commands_total", []string{"cmd", "set"}, 1, dto.MetricType_COUNTER},
		{"redis_commands_total", []string{"cmd", "hget"}, 1, dto.MetricType_COUNTER},
		{"redis_commands_failed_calls_total", []string{"cmd", "hget"}, 1, dto.MetricType_COUNTER},
		{"redis_commands_rejected_calls_total", []string{"cmd", "set"}, 0, dto.MetricType_COUNTER},
		{"redis_commands_total", []string{"cmd", "config|get"}, 1, dto.MetricType_COUNTER},
		{"redis_errors_total", []string{"err", "WRONGTYPE"}, 1, dto.MetricType_COUNTER},
		{"redis_db_keys", []string{"db", "db0"}, 1, dto.MetricType_GAUGE},
		{"redis_db_keys_expiring", []string{"db", "db0"}, 1, dto.MetricType_GAUGE},
		{"spillway_cold_keys", nil, 0, dto.MetricType_GAUGE},
		{"spillway_demotions_total", nil, 0, dto.MetricType_COUNTER},
	}
	cases := map[string][]want{
		"embedded.txt": append(common,
			want{"spillway_hot_keys", nil, 1, dto.MetricType_GAUGE},
			want{"spillway_mode_info", []string{"mode", "embedded"}, 1, dto.MetricType_GAUGE},
			want{"redis_connected_clients", nil, 1, dto.MetricType_GAUGE},
		),
		"upstream.txt": append(common,
			want{"spillway_upstream_up", nil, 1, dto.MetricType_GAUGE},
			want{"spillway_upstream_reconnects_total", nil, 0, dto.MetricType_COUNTER},
			want{"spillway_mode_info", []string{"mode", "upstream"}, 1, dto.MetricType_GAUGE},
		),
	}
	for file, wants := range cases {
		mfs := gather(t, readInfo(t, file), nil)
		for _, w := range wants {
			v, ok := value(mfs, w.name, w.labels...)
			if !ok || v != w.v || mfs[w.name].GetType() != w.kind {
				t.Errorf("%s: %s%v = %v (found %v, %v); want %v, %v", file, w.name, w.labels, v, ok,
					mfs[w.name].GetType(), w.v, w.kind)
			}
		}
		for name := range mfs {
			if !strings.HasPrefix(name, "redis_") && !strings.HasPrefix(name, "spillway_") {
				t.Errorf("%s: metric %s outside the redis_ and spillway_ namespaces", file, name)
			}
		}
	}
}

// TestCollectDown: no INFO text (nothing readable) is redis_up 0, not an
// error.
func TestCollectDown(t *testing.T) {
	mfs := gather(t, "", nil)
	if v, ok := value(mfs, "redis_up"); !ok || v != 0 {
		t.Fatalf("redis_up = %v, %v; want 0", v, ok)
	}
}

// TestCollectStore: the store's histogram counts one read in
// ReadLatencySample, and Pebble's figures are there.
func TestCollectStore(t *testing.T) {
	st, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 1 << 20, MemTableBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before := st.ReadStats().Gets
	for i := 0; i < 4*coldstore.ReadLatencySample; i++ {
		if _, _, err := st.Get([]byte("missing"), nil); err != nil {
			t.Fatal(err)
		}
	}
	timed := uint64(st.ReadStats().Gets/coldstore.ReadLatencySample - before/coldstore.ReadLatencySample)
	mfs := gather(t, readInfo(t, "embedded.txt"), st)
	h := mfs["spillway_cold_read_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no cold read histogram: %v", h)
	}
	hist := h.GetMetric()[0].GetHistogram()
	if timed != 4 || hist.GetSampleCount() < timed || len(hist.GetBucket()) != len(coldstore.ReadLatencyBounds) ||
		hist.GetBucket()[len(hist.GetBucket())-1].GetCumulativeCount() > hist.GetSampleCount() {
		t.Errorf("histogram: %v", hist)
	}
	for _, name := range []string{"spillway_pebble_compactions_total", "spillway_pebble_read_amplification",
		"spillway_pebble_block_cache_hits_total", "spillway_pebble_block_cache_misses_total"} {
		if _, ok := value(mfs, name); !ok {
			t.Errorf("%s missing", name)
		}
	}
}
