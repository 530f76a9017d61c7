// Command spillway-loadgen drives GET or HGET load at a Redis-compatible
// server, closed loop (-rate 0: -clients connections back to back, for
// throughput) or open loop (-rate N requests/s, latency measured from each
// request's intended start), and prints a one-line summary (-json: the
// result as JSON).
//
//	spillway-loadgen -addr 127.0.0.1:6380 -workload get -keys 100000 -key-format 'str:%d' -dist zipf -rate 10000 -duration 5s
//
// Every key (and field) named must exist: a nil reply counts as an error
// unless -allow-missing. The exit status is 1 when a request failed, 2 on a
// usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spillway/spillway/integration/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spillway-loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg         loadgen.Config
		workload    = fs.String("workload", "get", "get (GET of string keys) or hget (HGET of hash fields)")
		dist        = fs.String("dist", "uniform", "key distribution: uniform or zipf (scrambled Zipfian)")
		keyFormat   = fs.String("key-format", "key:%d", "name of key (or hash) i: a format with one integer verb")
		fieldFormat = fs.String("field-format", "f:%d", "name of hash field j (hget): a format with one integer verb")
		asJSON      = fs.Bool("json", false, "also print the result as JSON")
	)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:6379", "server address host:port")
	fs.StringVar(&cfg.Password, "password", "", "AUTH password")
	fs.IntVar(&cfg.Keys, "keys", 100_000, "number of keys (get) or hashes (hget)")
	fs.IntVar(&cfg.Fields, "fields", 20, "fields per hash (hget); the field is uniform")
	fs.Float64Var(&cfg.Theta, "theta", loadgen.DefaultTheta, "Zipfian exponent, 0 < theta < 1")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop at this many requests/s; 0 runs the closed loop")
	fs.IntVar(&cfg.Clients, "clients", 0, fmt.Sprintf("connections (default %d closed loop, %d open loop workers)",
		loadgen.DefaultClients, loadgen.DefaultWorkers))
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "how long requests are started for")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the key choice")
	fs.DurationVar(&cfg.Timeout, "timeout", loadgen.DefaultTimeout, "bound on each request and dial")
	fs.BoolVar(&cfg.AllowMissing, "allow-missing", false, "count nil replies (missing keys) as successes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "spillway-loadgen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var err error
	if cfg.Workload, err = loadgen.ParseWorkload(*workload); err != nil {
		fmt.Fprintf(stderr, "spillway-loadgen: %v\n", err)
		return 2
	}
	if cfg.Dist, err = loadgen.ParseDist(*dist); err != nil {
		fmt.Fprintf(stderr, "spillway-loadgen: %v\n", err)
		return 2
	}
	for name, f := range map[string]string{"key-format": *keyFormat, "field-format": *fieldFormat} {
		if err := checkFormat(f); err != nil {
			fmt.Fprintf(stderr, "spillway-loadgen: -%s: %v\n", name, err)
			return 2
		}
	}
	cfg.Key, cfg.Field = loadgen.Format(*keyFormat), loadgen.Format(*fieldFormat)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "spillway-loadgen: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, res)
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			fmt.Fprintf(stderr, "spillway-loadgen: encode result: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, string(b))
	}
	if res.Errors > 0 || res.Unsent > 0 {
		return 1
	}
	return 0
}

// checkFormat accepts a format with exactly one verb, an integer one.
func checkFormat(f string) error {
	verbs := strings.Count(f, "%") - 2*strings.Count(f, "%%")
	if verbs != 1 {
		return fmt.Errorf("%q: want exactly one %%d verb", f)
	}
	if s := fmt.Sprintf(f, 1); strings.Contains(s, "%!") {
		return fmt.Errorf("%q: not an integer format (gives %q)", f, s)
	}
	return nil
}
