package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Temporary debugging aid; deleted before handing in.
func TestZZUpstreamDebugInvariant(t *testing.T) {
	seed, _ := strconv.ParseInt(os.Getenv("DBG_SEED"), 10, 64)
	ops, _ := strconv.Atoi(os.Getenv("DBG_OPS"))
	cfgName := os.Getenv("DBG_CFG")
	var cfg genConfig
	for _, c := range upstreamDiffConfigs {
		if c.name == cfgName {
			cfg = c.cfg
		}
	}
	mm := os.Getenv("DBG_MM")
	if mm == "" {
		mm = upstreamMaxMemory
	}
	p := startUpstreamPair(t, mm)
	sub, _ := harness.Dial(p.spw.Addr())
	side, _ := harness.Dial(p.spw.Addr())
	upc := harness.MustDial(t, p.up.Addr())
	sub.Do("FLUSHALL")
	g := newGen(seed, time.Now().Unix(), cfg)
	dem := newUpstreamDemoter(t, p.spw.Addr(), seed)
	var hist []string
	for i := 0; i < ops; i++ {
		o := g.next()
		if o.Sleep > 0 {
			pause(o.Sleep)
			continue
		}
		r := sub.Do(o.Args...)
		if r.Err != nil {
			for _, h := range hist[max(0, len(hist)-10):] {
				t.Log(h)
			}
			t.Fatalf("op %d %s: %v raw %q", i, fmtArgs(o.Args), r.Err, r.Raw)
		}
		hist = append(hist, fmt.Sprintf("#%d db%d %s -> %s", i, g.db, fmtArgs(o.Args), fmtRaw(r.Raw)))
		before := dem.calls
		dem.afterOp(i)
		if dem.calls != before {
			hist = append(hist, fmt.Sprintf("   DEMOTE-ALL db %s -> %s", upstreamDemoteDBs[(dem.turn-1)%4], dem.last))
		}
		for _, db := range []string{"0", "1", "2", "9"} {
			side.Do("SELECT", db)
			n := side.Do("DBSIZE")
			k := side.Do("KEYS", "*")
			if n.Err != nil || k.Err != nil {
				for _, h := range hist[max(0, len(hist)-10):] {
					t.Log(h)
				}
				t.Fatalf("after op %d: side: %v %v raw %q %q", i, n.Err, k.Err, n.Raw, k.Raw)
			}
			if int(n.Int) != len(k.Elems) {
				upc.Do("SELECT", db)
				uk := upc.Do("KEYS", "*")
				up := map[string]bool{}
				for _, e := range uk.Elems {
					up[e.Str] = true
				}
				var dups []string
				side.Do("SELECT", db)
				for k := range up {
					upc.Do("DEL", k)
					if side.Do("EXISTS", k).Int == 1 {
						dups = append(dups, k)
					}
				}
				t.Logf("keys in both tiers of db %s: %q", db, dups)
				for _, h := range hist {
					hit := strings.Contains(h, "DEMOTE") || strings.Contains(h, "SELECT")
					for _, d := range dups {
						if strings.Contains(h, " "+d+" ") {
							hit = true
						}
					}
					if hit {
						t.Log(h)
					}
				}
				t.Log(side.Do("INFO", "keyspace").Str, k.String())
				t.Fatalf("after op %d: db %s: DBSIZE %d, KEYS %d; upstream keys %s; all keys %s", i, db, n.Int, len(k.Elems), uk.String(), k.String())
			}
		}
	}
}
