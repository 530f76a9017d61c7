// Package metrics is Spillway's Prometheus endpoint (metrics-port,
// `/metrics` over HTTP), built on the Prometheus Go client.
//
// Redis's figures come from the server's own INFO text, rendered at each
// scrape by the mode's INFO code (embedded: the server's; upstream: the
// front's, the upstream's INFO with Spillway's clients and both tiers'
// keys) and converted with redis_exporter's names, as redis_exporter
// itself converts INFO: existing Redis dashboards work unchanged, and the
// endpoint and INFO never disagree. Spillway's own figures are under
// spillway_: the Tiering section's (hot and cold keys and bytes, budget,
// demotions, promotions, cold reads, upstream link), the cold store's
// point-read latency histogram, and Pebble's (compactions, read
// amplification, block cache hits and misses). Nothing is counted per
// command for the endpoint: a scrape reads what INFO reads.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spillway/spillway/coldstore"
)

// Options configure the endpoint.
type Options struct {
	// Addr is the listen address (host:port).
	Addr string
	// Info returns INFO EVERYTHING's text (sections, "\r\n" line ends).
	Info func() string
	// Store is the cold store whose Pebble figures and read latencies
	// are exported (nil: none).
	Store  *coldstore.Store
	Logger *slog.Logger
}

// Endpoint is a running metrics endpoint.
type Endpoint struct {
	handler http.Handler
	log     *slog.Logger
	mu      sync.Mutex // guards srv and ln (Rebind, Close)
	srv     *http.Server
	ln      net.Listener
}

// Start listens on o.Addr and serves /metrics until Close.
func Start(o Options) (*Endpoint, error) {
	if o.Info == nil {
		return nil, errors.New("metrics: no INFO source")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(&collector{info: o.Info, store: o.Store}); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	reg.MustRegister(collectors.NewGoCollector())
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn), ErrorHandling: promhttp.ContinueOnError,
	}))
	e := &Endpoint{handler: mux, log: o.Logger}
	if err := e.Rebind(o.Addr); err != nil {
		return nil, err
	}
	return e, nil
}

// Rebind moves the endpoint to addr: it listens there first, then stops
// the old listener (scrapes in progress finish); if addr cannot be
// listened on, the old listener stays and the error is returned.
func (e *Endpoint) Rebind(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: e.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	e.mu.Lock()
	old := e.srv
	e.srv, e.ln = srv, ln
	e.mu.Unlock()
	if old != nil {
		shutdown(old)
	}
	return nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ln.Addr().String()
}

// Close stops the endpoint, waiting up to a few seconds for scrapes in
// progress.
func (e *Endpoint) Close() {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	shutdown(srv)
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}

// collector renders the metrics at each scrape. It is unchecked (describes
// nothing): which commands, errors and databases appear depends on INFO.
type collector struct {
	info  func() string
	store *coldstore.Store
}

func (c *collector) Describe(chan<- *prometheus.Desc) {}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	text := c.info()
	in := parseInfo(text)
	up := 0.0
	if len(in["server"]) > 0 || len(in["tiering"]) > 0 {
		up = 1
	}
	emit(ch, "redis_up", "1 when INFO could be read.", prometheus.GaugeValue, up)
	collectInfo(ch, in)
	if c.store != nil {
		collectStore(ch, c.store)
	}
}

// collectStore exports the cold store's read latencies and Pebble's
// figures.
func collectStore(ch chan<- prometheus.Metric, s *coldstore.Store) {
	rl := s.ReadLatency()
	buckets := make(map[float64]uint64, len(coldstore.ReadLatencyBounds))
	var cum uint64
	for i, b := range coldstore.ReadLatencyBounds {
		cum += rl.Counts[i]
		buckets[b] = cum
	}
	total := cum + rl.Counts[len(rl.Counts)-1]
	ch <- prometheus.MustNewConstHistogram(prometheus.NewDesc("spillway_cold_read_duration_seconds",
		"Duration of the cold store's point reads (a key's meta record, a cold field or member); one read in "+
			strconv.Itoa(coldstore.ReadLatencySample)+" is timed (spillway_cold_store_gets_total counts them all).", nil, nil),
		total, rl.Sum.Seconds(), buckets)

	m := s.Metrics()
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	emit(ch, "spillway_pebble_compactions_total", "Pebble compactions.", counter, float64(m.Compact.Count))
	emit(ch, "spillway_pebble_compaction_debt_bytes", "Bytes Pebble estimates it must compact.", gauge,
		float64(m.Compact.EstimatedDebt))
	emit(ch, "spillway_pebble_compactions_in_progress", "Pebble compactions running.", gauge, float64(m.Compact.NumInProgress))
	emit(ch, "spillway_pebble_flushes_total", "Pebble memtable flushes.", counter, float64(m.Flush.Count))
	emit(ch, "spillway_pebble_read_amplification", "Pebble's read amplification (sublevels a read may visit).",
		gauge, float64(m.ReadAmp()))
	emit(ch, "spillway_pebble_block_cache_hits_total", "Pebble block cache hits.", counter, float64(m.BlockCache.Hits))
	emit(ch, "spillway_pebble_block_cache_misses_total", "Pebble block cache misses.", counter, float64(m.BlockCache.Misses))
	emit(ch, "spillway_pebble_block_cache_bytes", "Bytes in Pebble's block cache.", gauge, float64(m.BlockCache.Size))
	emit(ch, "spillway_pebble_memtable_bytes", "Bytes of Pebble's memtables.", gauge, float64(m.MemTable.Size))
	t := m.Total()
	emit(ch, "spillway_pebble_sstables", "Pebble sstables, all levels.", gauge, float64(t.TablesCount))
}
