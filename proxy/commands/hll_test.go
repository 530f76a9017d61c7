package commands_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/resp"
)

// The HyperLogLog differential test: the same random PFADD, PFCOUNT,
// PFMERGE, PFDEBUG and corruption sequence runs on a real redis-server and
// on Spillway (hot, and cold with every key demoted after every command);
// every reply and, after every command, the bytes GET returns for each
// key must be identical. The sequence takes HyperLogLogs from empty
// through sparse to dense under several hll-sparse-max-bytes, merges them,
// copies Redis's bytes into Spillway with SET, and corrupts values with
// SETRANGE and APPEND.

// hllDiff drives the two sides.
type hllDiff struct {
	t    *testing.T
	rng  *rand.Rand
	r, l runner
	keys []string
	n    int // commands run
	// seen counts the replies holding each of seenMarks, to check that
	// the sequence covers them all.
	seen map[string]int
}

// seenMarks are what the sequence must have met: both encodings, both
// detections, a PFADD that changed nothing.
var seenMarks = []string{"+dense", "+sparse", "-INVALIDOBJ", "-WRONGTYPE Key is not a valid", ":0\r\n", "v:"}

func (d *hllDiff) do(args ...string) []byte {
	d.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	want, err := d.r.do(bs)
	if err != nil {
		d.t.Fatalf("redis: %v", err)
	}
	got, err := d.l.do(bs)
	if err != nil {
		d.t.Fatalf("spillway: %v", err)
	}
	d.n++
	for _, mark := range seenMarks {
		if bytes.Contains(want, []byte(mark)) {
			d.seen[mark]++
		}
	}
	if !bytes.Equal(got, want) {
		d.t.Fatalf("command %d %.200q:\n got %.300q\nwant %.300q", d.n, args, got, want)
	}
	return want
}

// checkKeys compares every key's bytes.
func (d *hllDiff) checkKeys() {
	d.t.Helper()
	for _, k := range d.keys {
		d.do("GET", k)
	}
}

// element returns a random element: short text, numbers, binary, empty.
func (d *hllDiff) element() string {
	switch d.rng.IntN(4) {
	case 0:
		return strconv.FormatUint(d.rng.Uint64N(1<<20), 10)
	case 1:
		b := make([]byte, d.rng.IntN(40))
		for i := range b {
			b[i] = byte(d.rng.IntN(256))
		}
		return string(b)
	case 2:
		return fmt.Sprintf("e:%d", d.rng.Uint64())
	default:
		return strconv.FormatFloat(d.rng.Float64(), 'g', -1, 64)
	}
}

func (d *hllDiff) pfadd(key string, n int) {
	args := []string{"PFADD", key}
	for range n {
		args = append(args, d.element())
	}
	d.do(args...)
}

func TestHLLMatchesRedis(t *testing.T) {
	rs := harness.StartRedis(t)
	for _, m := range []mode{modes[0], modes[2]} {
		t.Run(m.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", rs.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			s, e := openLocal(t, m)
			l := s.NewLocal()
			defer l.Close()
			d := &hllDiff{t: t, rng: rand.New(rand.NewPCG(1, 2)),
				r:    &redisRunner{nc: nc, r: resp.NewReplyReader(nc)},
				l:    &localRunner{l: l, engine: e, mode: m},
				keys: []string{"h0", "h1", "h2", "h3", "copy"}, seen: map[string]int{}}
			d.do("FLUSHALL")
			for _, limit := range []string{"3000", "200", "0", "12000"} {
				d.do("CONFIG", "SET", "hll-sparse-max-bytes", limit)
				for _, k := range d.keys[:4] {
					d.do("DEL", k)
				}
				runHLLRound(d)
			}
			d.do("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
			// Large cardinalities: the estimator over mostly non-zero
			// registers, and unions of very different sizes.
			for i := range 60 {
				d.pfadd("big", 1000)
				d.do("PFCOUNT", "big")
				d.do("PFCOUNT", "big", d.keys[i%4])
				if i%10 == 9 {
					d.do("GET", "big")
				}
			}
			for _, mark := range seenMarks {
				if d.seen[mark] == 0 {
					t.Errorf("no reply held %q", mark)
				}
			}
			t.Logf("%d commands identical; replies met: %v", d.n, d.seen)
		})
	}
}

// runHLLRound grows four HyperLogLogs at different paces, from empty past
// the dense threshold, with counts, merges and debug commands between.
func runHLLRound(d *hllDiff) {
	sizes := []int{1, 5, 30, 150}
	for step := range 40 {
		for i, k := range d.keys[:4] {
			d.pfadd(k, d.rng.IntN(sizes[i]+1))
		}
		k := d.keys[d.rng.IntN(4)]
		d.do("PFCOUNT", k)
		d.do("PFCOUNT", k) // cached now
		d.do("PFCOUNT", d.keys[0], d.keys[1], d.keys[2], "missing")
		d.do("PFDEBUG", "ENCODING", k)
		d.do("PFDEBUG", "DECODE", k)
		switch step % 10 {
		case 3:
			d.do("PFMERGE", d.keys[d.rng.IntN(4)], d.keys[d.rng.IntN(4)], d.keys[d.rng.IntN(4)])
		case 5:
			d.do("PFMERGE", "merged", d.keys[0], d.keys[1], "missing")
			d.do("GET", "merged")
			d.do("DEL", "merged")
		case 7:
			// Redis's bytes stored with SET are a HyperLogLog.
			v := d.do("GET", k)
			if v[0] == '$' {
				body := v[bytes.IndexByte(v, '\n')+1 : len(v)-2]
				d.do("SET", "copy", string(body))
				d.pfadd("copy", 20)
				d.do("PFCOUNT", "copy")
			}
		case 9:
			d.do("PFDEBUG", "TODENSE", d.keys[0])
			d.do("PFDEBUG", "GETREG", d.keys[1])
		}
		d.checkKeys()
		if step == 8 || step == 39 {
			corruptHLLs(d) // mostly sparse values, then mostly dense ones
		}
	}
}

// corruptHLLs corrupts copies of the keys at random and runs the commands
// on them: the detections, and what the commands change, must be Redis's.
func corruptHLLs(d *hllDiff) {
	for range 40 {
		src := d.keys[d.rng.IntN(4)]
		d.do("COPY", src, "bad", "REPLACE")
		n := len(d.do("GET", "bad"))
		switch d.rng.IntN(6) {
		case 0:
			d.do("APPEND", "bad", d.element())
		case 1:
			d.do("SETRANGE", "bad", strconv.Itoa(d.rng.IntN(16)), string(rune('A'+d.rng.IntN(3))))
		default:
			for range 1 + d.rng.IntN(3) {
				b := []byte{byte(d.rng.IntN(256))}
				d.do("SETRANGE", "bad", strconv.Itoa(16+d.rng.IntN(max(n-20, 1))), string(b))
			}
		}
		d.pfadd("bad", d.rng.IntN(8))
		d.do("GET", "bad")
		d.do("PFCOUNT", "bad")
		d.do("PFCOUNT", "bad", src)
		d.do("PFDEBUG", "DECODE", "bad")
		if d.rng.IntN(2) == 0 {
			d.do("PFMERGE", "bad", src)
		} else {
			d.do("PFDEBUG", "TODENSE", "bad")
		}
		d.do("GET", "bad")
	}
	d.do("DEL", "bad")
}
