package link

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/proxy/rdb"
)

// startRedis runs a real redis-server on a free loopback port and returns a
// RESP2 client for it; both are stopped when the test ends.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (these tests need a real redis-server 7.x): %v", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken before redis binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("pick a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		var out bytes.Buffer
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no")
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		c := redis.NewClient(&redis.Options{
			Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2, DisableIdentity: true,
			MaxRetries: -1, DialTimeout: time.Second,
		})
		lastErr = waitReady(c, exited)
		if lastErr == nil {
			t.Cleanup(func() { c.Close(); stop() })
			return c
		}
		c.Close()
		stop()
		lastErr = fmt.Errorf("%w; redis-server output:\n%s", lastErr, out.String())
	}
	t.Fatalf("redis-server did not come up: %v", lastErr)
	return nil
}

// waitReady pings c until it answers, the server exits, or 200 tries pass.
func waitReady(c *redis.Client, exited <-chan struct{}) error {
	var err error
	for range 200 {
		select {
		case <-exited:
			return fmt.Errorf("redis-server exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("no PONG: %v", err)
}

type zentry struct {
	member string
	score  float64
}

// dumpCase is one value, built both by ordinary commands and by Dump.
type dumpCase struct {
	name   string
	kind   string // string, list, set, hash, zset
	str    string
	elems  []string    // list or set
	pairs  [][2]string // hash
	zs     []zentry
	absTTL bool // restore with an ABSTTL in the future instead of ttl 0
	enc    string
}

// encode writes the case's value into d and returns the finished payload.
func (c *dumpCase) encode(d *Dump) []byte {
	d.Reset()
	switch c.kind {
	case "string":
		d.String([]byte(c.str))
	case "list", "set":
		if c.kind == "list" {
			d.BeginList(len(c.elems))
		} else {
			d.BeginSet(len(c.elems))
		}
		for _, e := range c.elems {
			d.Elem([]byte(e))
		}
	case "hash":
		d.BeginHash(len(c.pairs))
		for _, p := range c.pairs {
			d.Pair([]byte(p[0]), []byte(p[1]))
		}
	case "zset":
		d.BeginZSet(len(c.zs))
		for _, z := range c.zs {
			d.ZElem([]byte(z.member), z.score)
		}
	default:
		panic("bad kind " + c.kind)
	}
	return d.Finish()
}

// build creates the value under key with ordinary commands.
func (c *dumpCase) build(ctx context.Context, t *testing.T, r *redis.Client, key string) {
	t.Helper()
	var args []any
	switch c.kind {
	case "string":
		args = []any{"SET", key, c.str}
	case "list", "set":
		args = []any{map[string]string{"list": "RPUSH", "set": "SADD"}[c.kind], key}
		for _, e := range c.elems {
			args = append(args, e)
		}
	case "hash":
		args = []any{"HSET", key}
		for _, p := range c.pairs {
			args = append(args, p[0], p[1])
		}
	case "zset":
		args = []any{"ZADD", key}
		for _, z := range c.zs {
			args = append(args, strconv.FormatFloat(z.score, 'g', -1, 64), z.member)
		}
	}
	if err := r.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("build %s: %v", key, err)
	}
}

// contents reads key back in a canonical form (raw RESP2 strings; sets and
// hashes sorted).
func contents(ctx context.Context, t *testing.T, r *redis.Client, kind, key string) []string {
	t.Helper()
	var (
		v   []string
		err error
	)
	switch kind {
	case "string":
		var s string
		s, err = r.Get(ctx, key).Result()
		v = []string{s}
	case "list":
		v, err = r.LRange(ctx, key, 0, -1).Result()
	case "set":
		v, err = r.SMembers(ctx, key).Result()
		slices.Sort(v)
	case "hash":
		var m map[string]string
		m, err = r.HGetAll(ctx, key).Result()
		for f, val := range m {
			v = append(v, f+"\x00="+val)
		}
		slices.Sort(v)
	case "zset":
		var raw []any
		raw, err = r.Do(ctx, "ZRANGE", key, 0, -1, "WITHSCORES").Slice()
		for _, x := range raw {
			v = append(v, x.(string))
		}
	}
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return v
}

func repeat(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func dumpCases() []dumpCase {
	big := strings.Repeat("0123456789abcdef", 100*1024/16) // 100 KB
	tenK := strings.Repeat("x", 10*1024)
	long := strings.Repeat("m", 65) // over zset-max-listpack-value (64)
	return []dumpCase{
		{name: "str_empty", kind: "string", str: "", enc: "embstr"},
		{name: "str_short", kind: "string", str: "hello", absTTL: true, enc: "embstr"},
		{name: "str_int", kind: "string", str: "123", enc: "int"},
		{name: "str_neg_int", kind: "string", str: "-5", absTTL: true, enc: "int"},
		{name: "str_int64_min", kind: "string", str: "-9223372036854775808", enc: "int"},
		{name: "str_leading_zero", kind: "string", str: "0123", enc: "embstr"},
		{name: "str_too_big_for_int", kind: "string", str: "99999999999999999999", enc: "embstr"},
		{name: "str_len63", kind: "string", str: strings.Repeat("a", 63), enc: "raw"},    // 6-bit length
		{name: "str_len64", kind: "string", str: strings.Repeat("b", 64), enc: "raw"},    // 14-bit length
		{name: "str_len16383", kind: "string", str: strings.Repeat("c", 16383), enc: ""}, // 14-bit max
		{name: "str_len16384", kind: "string", str: strings.Repeat("d", 16384), enc: ""}, // 32-bit length
		{name: "str_100KB", kind: "string", str: big, absTTL: true, enc: "raw"},
		{name: "str_binary", kind: "string", str: "a\x00b\r\nc\xff\x00\r\n", enc: "embstr"},

		{name: "list_1", kind: "list", elems: []string{"only"}, enc: "quicklist"},
		{name: "list_3_with_empty", kind: "list", elems: []string{"a", "", "42"}, absTTL: true, enc: "quicklist"},
		{name: "list_600", kind: "list", elems: append(repeat(598, func(i int) string { return "e" + strconv.Itoa(i) }), "", tenK), enc: "quicklist"},

		{name: "set_intset", kind: "set", elems: []string{"1", "-7", "0", "9223372036854775807", "-9223372036854775808", "300"}, enc: "intset"},
		{name: "set_small_mixed", kind: "set", elems: []string{"1", "two", "", "3.5", "a\x00b"}, absTTL: true, enc: "hashtable"},
		{name: "set_1000", kind: "set", elems: repeat(1000, func(i int) string { return "member:" + strconv.Itoa(i) }), enc: "hashtable"},
		{name: "set_1000_ints", kind: "set", elems: repeat(1000, strconv.Itoa), enc: "hashtable"},

		{name: "hash_small", kind: "hash", pairs: [][2]string{{"f1", "v1"}, {"f2", ""}, {"", "emptyfield"}, {"n", "123"}}, enc: "listpack"},
		{name: "hash_100KB_value", kind: "hash", pairs: [][2]string{{"small", "v"}, {"big", big}}, absTTL: true, enc: "hashtable"},
		{name: "hash_1000", kind: "hash", pairs: func() [][2]string {
			p := make([][2]string, 1000)
			for i := range p {
				p[i] = [2]string{"field:" + strconv.Itoa(i), "value:" + strconv.Itoa(i*7)}
			}
			return p
		}(), enc: "hashtable"},

		{name: "zset_small_special_scores", kind: "zset", zs: []zentry{
			{"negzero", math.Copysign(0, -1)}, {"pinf", math.Inf(1)}, {"ninf", math.Inf(-1)},
			{"onehalf", 1.5}, {"huge", 1e300}, {"denorm", 5e-324},
		}, absTTL: true, enc: "listpack"},
		{name: "zset_200", kind: "zset", zs: func() []zentry {
			z := make([]zentry, 200)
			for i := range z {
				z[i] = zentry{"m" + strconv.Itoa(i), float64(i%17) - 3.25}
			}
			return z
		}(), enc: "skiplist"},
		{name: "zset_long_member", kind: "zset", zs: []zentry{{"short", 1}, {long, 2}}, enc: "skiplist"},
	}
}

// TestDumpRestore restores each payload next to the same value built by
// commands and compares contents, encoding, TTL and BUSYKEY behaviour.
func TestDumpRestore(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	var d Dump // reused across cases, as a caller would
	for i, c := range dumpCases() {
		t.Run(c.name, func(t *testing.T) {
			keyA, keyB := "A:"+c.name, "B:"+c.name
			c.build(ctx, t, r, keyA)
			payload := c.encode(&d)

			var ttl, abs int64
			args := []any{"RESTORE", keyB, 0, payload}
			if c.absTTL {
				abs = time.Now().Add(time.Hour).UnixMilli() + int64(i)
				ttl = abs
				args = []any{"RESTORE", keyB, ttl, payload, "ABSTTL"}
			}
			if err := r.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("RESTORE %s: %v (payload %d bytes)", keyB, err, len(payload))
			}

			a, b := contents(ctx, t, r, c.kind, keyA), contents(ctx, t, r, c.kind, keyB)
			if !slices.Equal(a, b) {
				t.Fatalf("contents differ: built %d items, restored %d items\nbuilt:    %.200q\nrestored: %.200q", len(a), len(b), a, b)
			}

			encA := r.ObjectEncoding(ctx, keyA).Val()
			encB := r.ObjectEncoding(ctx, keyB).Val()
			if encA != encB {
				t.Errorf("OBJECT ENCODING: built %q, restored %q", encA, encB)
			}
			if c.enc != "" && encB != c.enc {
				t.Errorf("OBJECT ENCODING of restored = %q, want %q", encB, c.enc)
			}

			pttl, err := r.Do(ctx, "PTTL", keyB).Int64()
			if err != nil {
				t.Fatal(err)
			}
			expAt, err := r.Do(ctx, "PEXPIRETIME", keyB).Int64()
			if err != nil {
				t.Fatal(err)
			}
			if !c.absTTL {
				if pttl != -1 || expAt != -1 {
					t.Errorf("ttl 0: PTTL %d PEXPIRETIME %d, want -1 -1", pttl, expAt)
				}
			} else {
				if expAt != abs {
					t.Errorf("ABSTTL %d: PEXPIRETIME %d", abs, expAt)
				}
				if pttl <= 0 || pttl > time.Hour.Milliseconds()+int64(i) {
					t.Errorf("ABSTTL one hour ahead: PTTL %d out of (0, 1h]", pttl)
				}
			}

			for _, key := range []string{keyB, keyA} {
				err := r.Do(ctx, "RESTORE", key, 0, payload).Err()
				if err == nil || !strings.HasPrefix(err.Error(), "BUSYKEY") {
					t.Errorf("RESTORE onto existing %s: err %v, want BUSYKEY", key, err)
				}
			}
			if got := contents(ctx, t, r, c.kind, keyB); !slices.Equal(got, b) {
				t.Errorf("failed RESTORE changed %s", keyB)
			}
		})
	}
}

// TestDumpRejected checks payloads Redis refuses: every single-byte
// corruption (checksum), a newer RDB version, and the documented
// caller obligations (non-empty collections, distinct members, no NaN).
func TestDumpRejected(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	// Without deep sanitization Redis 7.0 accepts a duplicate field in a
	// listpack-sized hash (see the Dump doc); turn it on so every caller
	// obligation below is enforced by the server.
	if err := r.ConfigSet(ctx, "sanitize-dump-payload", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	const badSum = "ERR DUMP payload version or checksum are wrong"
	var d Dump

	d.BeginHash(2)
	d.Pair([]byte("field"), []byte("value"))
	d.Pair([]byte("n"), []byte("12"))
	good := slices.Clone(d.Finish())
	if err := r.Do(ctx, "RESTORE", "ok", 0, good).Err(); err != nil {
		t.Fatalf("uncorrupted payload: %v", err)
	}
	for pos := range good {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := slices.Clone(good)
			bad[pos] ^= mask
			err := r.Do(ctx, "RESTORE", fmt.Sprintf("bad:%d:%d", pos, mask), 0, bad).Err()
			if err == nil || err.Error() != badSum {
				t.Errorf("byte %d ^ %#x: err %v, want %q", pos, mask, err, badSum)
			}
		}
	}

	// A version newer than the server's (7.0 is RDB 10), with a valid CRC.
	newer := slices.Clone(good[:len(good)-10])
	newer = binary.LittleEndian.AppendUint16(newer, 200)
	newer = binary.LittleEndian.AppendUint64(newer, rdb.CRC64(0, newer))
	if err := r.Do(ctx, "RESTORE", "newer", 0, newer).Err(); err == nil || err.Error() != badSum {
		t.Errorf("RDB version 200: err %v, want %q", err, badSum)
	}

	cases := []struct {
		name  string
		build func(d *Dump)
	}{
		{"empty_list", func(d *Dump) { d.BeginList(0) }},
		{"empty_set", func(d *Dump) { d.BeginSet(0) }},
		{"empty_hash", func(d *Dump) { d.BeginHash(0) }},
		{"empty_zset", func(d *Dump) { d.BeginZSet(0) }},
		{"dup_set", func(d *Dump) { d.BeginSet(2); d.Elem([]byte("x")); d.Elem([]byte("x")) }},
		{"dup_hash", func(d *Dump) {
			d.BeginHash(2)
			d.Pair([]byte("f"), []byte("1"))
			d.Pair([]byte("f"), []byte("2"))
		}},
		{"dup_hash_big", func(d *Dump) { // hashtable-sized: rejected even without sanitization
			d.BeginHash(600)
			for i := range 599 {
				d.Pair([]byte(strconv.Itoa(i)), nil)
			}
			d.Pair([]byte("0"), nil)
		}},
		{"dup_zset", func(d *Dump) { d.BeginZSet(2); d.ZElem([]byte("m"), 1); d.ZElem([]byte("m"), 2) }},
		{"nan_score", func(d *Dump) { d.BeginZSet(1); d.ZElem([]byte("m"), math.NaN()) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d.Reset()
			c.build(&d)
			err := r.Do(ctx, "RESTORE", c.name, 0, d.Finish()).Err()
			if err == nil || !strings.Contains(err.Error(), "Bad data format") {
				t.Errorf("err %v, want Bad data format", err)
			}
			if n := r.Exists(ctx, c.name).Val(); n != 0 {
				t.Errorf("rejected RESTORE left the key (EXISTS %d)", n)
			}
		})
	}
}

// TestDumpRoundTripWithRedisDump restores both Redis's own DUMP of a string and
// our payload for the same string, and checks our CRC against Redis's footer.
func TestDumpRoundTripWithRedisDump(t *testing.T) {
	r := startRedis(t)
	ctx := context.Background()
	var d Dump
	for _, val := range []string{"", "hello", "123", "-5", strings.Repeat("z", 1000), "a\x00b\r\n"} {
		if err := r.Set(ctx, "src", val, 0).Err(); err != nil {
			t.Fatal(err)
		}
		theirs, err := r.Dump(ctx, "src").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(theirs) < 10 {
			t.Fatalf("DUMP of %q is %d bytes", val, len(theirs))
		}
		body, sum := theirs[:len(theirs)-8], theirs[len(theirs)-8:]
		if got, want := rdb.CRC64(0, []byte(body)), binary.LittleEndian.Uint64([]byte(sum)); got != want {
			t.Errorf("crc64Redis of Redis's DUMP of %q = %#x, footer says %#x", val, got, want)
		}

		d.Reset()
		d.String([]byte(val))
		ours := d.Finish()
		for key, payload := range map[string]any{"theirs": theirs, "ours": ours} {
			r.Del(ctx, key)
			if err := r.Do(ctx, "RESTORE", key, 0, payload).Err(); err != nil {
				t.Fatalf("RESTORE %s payload for %q: %v", key, val, err)
			}
			if got := r.Get(ctx, key).Val(); got != val {
				t.Errorf("%s payload for %q restored %q", key, val, got)
			}
		}
		if ea, eb := r.ObjectEncoding(ctx, "theirs").Val(), r.ObjectEncoding(ctx, "ours").Val(); ea != eb {
			t.Errorf("value %q: encoding from Redis DUMP %q, from ours %q", val, ea, eb)
		}
	}
}

// TestDumpLayout pins the exact bytes of small payloads, so a layout change
// shows up even without a server.
func TestDumpLayout(t *testing.T) {
	d := Dump{Version: dumpRDBVersion}
	d.BeginZSet(1)
	d.ZElem([]byte("m"), 1.5)
	got := d.Finish()
	body := []byte{5, 1, 1, 'm', 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 9, 0}
	want := binary.LittleEndian.AppendUint64(slices.Clone(body), rdb.CRC64(0, body))
	if !bytes.Equal(got, want) {
		t.Errorf("zset payload\n got % x\nwant % x", got, want)
	}

	d.Reset()
	d.String([]byte("ab"))
	got = d.Finish()
	body = []byte{0, 2, 'a', 'b', 9, 0}
	if want := binary.LittleEndian.AppendUint64(slices.Clone(body), rdb.CRC64(0, body)); !bytes.Equal(got, want) {
		t.Errorf("string payload after Reset\n got % x\nwant % x", got, want)
	}
}

// TestDumpMisusePanics checks that out-of-order calls panic instead of
// producing a payload with the wrong element count.
func TestDumpMisusePanics(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(d *Dump)
	}{
		{"finish_empty", func(d *Dump) { d.Finish() }},
		{"finish_short", func(d *Dump) { d.BeginList(2); d.Elem(nil); d.Finish() }},
		{"extra_elem", func(d *Dump) { d.BeginSet(1); d.Elem(nil); d.Elem(nil) }},
		{"wrong_item", func(d *Dump) { d.BeginHash(1); d.Elem(nil) }},
		{"pair_for_zset", func(d *Dump) { d.BeginZSet(1); d.Pair(nil, nil) }},
		{"two_values", func(d *Dump) { d.String(nil); d.String(nil) }},
		{"elem_without_begin", func(d *Dump) { d.Elem(nil) }},
		{"negative", func(d *Dump) { d.BeginList(-1) }},
		{"finish_twice", func(d *Dump) { d.String(nil); d.Finish(); d.Finish() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("no panic")
				}
			}()
			var d Dump
			c.f(&d)
		})
	}
}

// TestDumpAllocs checks that building into a reused Dump does not allocate.
func TestDumpAllocs(t *testing.T) {
	var d Dump
	elem := []byte("element")
	build := func() {
		d.Reset()
		d.BeginZSet(50)
		for i := range 50 {
			d.ZElem(elem, float64(i))
		}
		d.Finish()
	}
	build()
	if n := testing.AllocsPerRun(20, build); n != 0 {
		t.Errorf("reused Dump: %v allocations per payload, want 0", n)
	}
}
