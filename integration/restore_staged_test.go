package integration

import (
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// RESTORE of a DUMP of a 1,000,000-member sorted set made by a real
// redis-server is staged (tiering.Stage): its records are written in
// bounded batches without the engine's lock, then installed at once. While
// it runs, another client keeps getting replies (it is not blocked for the
// whole restore; its longest wait is printed, not asserted) and never sees
// the key half-restored: ZCARD is 0 or the whole count. The restored set
// equals redis-server's, member for member, score for score.
func TestRestoreHugeZSetIsBoundedAndAtomic(t *testing.T) {
	const members = 1_000_000
	rs := harness.StartRedis(t)
	r := harness.MustDial(t, rs.Addr())
	// Scores cover negatives, fractions, repeats (ties sort by member).
	// Filled in steps, each quick enough for the connection's timeout.
	fill := `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
		redis.call('zadd', KEYS[1], ((i * 7919) % 100003 - 50000) / 8, 'member:' .. i)
	end`
	for from := 1; from <= members; from += 50_000 {
		rep := r.Do("EVAL", fill, "1", "z", strconv.Itoa(from), strconv.Itoa(from+49_999))
		if rep.IsError() || rep.Err != nil {
			t.Fatalf("fill: %v %v", rep, rep.Err)
		}
	}
	dump := r.Do("DUMP", "z")
	if dump.Type != '$' || dump.Null {
		t.Fatalf("DUMP: %v", dump)
	}
	t.Logf("payload: %d bytes", len(dump.Str))

	s := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning")
	a := harness.MustDial(t, s.Addr())
	b := harness.MustDial(t, s.Addr())
	if rep := b.Do("SET", "k", "v"); rep.Str != "OK" {
		t.Fatalf("SET: %v", rep)
	}

	// The store's size on disk (WAL included) shows staging from outside:
	// once it has grown by a good part of the set's records while the key
	// is still absent, records are being written while other clients are
	// served. A one-transaction write grows it only at its commit, under
	// the engine's lock, when the key appears.
	diskUsage := func() int64 {
		info, err := harness.Info(b, "tiering")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(info["cold_bytes_on_disk"], 10, 64)
		if err != nil {
			t.Fatalf("cold_bytes_on_disk: %v", err)
		}
		return n
	}
	base := diskUsage()
	const grown = 16 << 20

	start := time.Now()
	done := make(chan harness.Reply, 1)
	go func() { done <- a.DoBytes([]byte("RESTORE"), []byte("z"), []byte("0"), []byte(dump.Str)) }()

	var restored harness.Reply
	during, staging, maxWait := 0, 0, time.Duration(0)
	writing := false // the store grew by grown bytes
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; ; i++ {
		select {
		case restored = <-done:
		default:
		}
		if restored.Type != 0 {
			break
		}
		if i >= 10_000_000 || time.Now().After(deadline) {
			t.Fatalf("RESTORE did not reply within %d probes", i)
		}
		t0 := time.Now()
		get := b.Do("GET", "k")
		card := b.Do("ZCARD", "z")
		maxWait = max(maxWait, time.Since(t0))
		if get.Str != "v" {
			t.Fatalf("GET during the restore: %v", get)
		}
		if card.Type != ':' || card.Int != 0 && card.Int != members {
			t.Fatalf("ZCARD during the restore: %v (a half-restored key)", card)
		}
		if card.Int == 0 {
			during++ // answered while the key was not there yet
			if writing {
				staging++
			}
		}
		if !writing && i%16 == 0 {
			writing = diskUsage()-base >= grown
		}
	}
	took := time.Since(start)
	if restored.Str != "OK" {
		t.Fatalf("RESTORE: %v", restored)
	}
	t.Logf("RESTORE took %v; the other client got %d replies meanwhile (%d while its records were being written), longest wait %v",
		took, during, staging, maxWait)
	if staging == 0 {
		t.Fatal("the other client got no reply while the restore wrote its records: it was blocked")
	}

	// The same set, compared in ranges.
	const step = 100_000
	for from := 0; from < members; from += step {
		args := []string{"ZRANGE", "z", strconv.Itoa(from), strconv.Itoa(from + step - 1), "WITHSCORES"}
		want, got := r.Do(args...), b.Do(args...)
		if want.Err != nil || got.Err != nil || string(want.Raw) != string(got.Raw) {
			t.Fatalf("ZRANGE %d..: spillway differs from redis-server (%d vs %d elements, %v %v)",
				from, len(got.Elems), len(want.Elems), got.Err, want.Err)
		}
	}
	for _, cmd := range [][]string{{"ZCARD", "z"}, {"OBJECT", "ENCODING", "z"}, {"ZSCORE", "z", "member:77"}, {"TTL", "z"}} {
		if want, got := r.Do(cmd...), b.Do(cmd...); string(want.Raw) != string(got.Raw) {
			t.Fatalf("%v: spillway %v, redis-server %v", cmd, got, want)
		}
	}
	// Without REPLACE the key is busy; with it the set is replaced whole.
	for _, args := range [][]string{{"RESTORE", "z", "0", dump.Str}, {"RESTORE", "z", "0", dump.Str, "REPLACE"}} {
		if want, got := r.Do(args...), a.Do(args...); string(want.Raw) != string(got.Raw) {
			t.Fatalf("RESTORE %v: spillway %v, redis-server %v", args[4:], got, want)
		}
	}
	if want, got := r.Do("ZRANGE", "z", "-3", "-1", "WITHSCORES"), b.Do("ZRANGE", "z", "-3", "-1", "WITHSCORES"); string(want.Raw) != string(got.Raw) {
		t.Fatalf("after RESTORE REPLACE: spillway %v, redis-server %v", got, want)
	}
	if got := b.Do("ZCARD", "z"); got.Int != members {
		t.Fatalf("ZCARD after RESTORE REPLACE: %v", got)
	}
}

// Staged RESTOREs of each type (hash, set, list, sorted set with a -0
// score, each over tiering.StageMinItems) store what redis-server holds,
// with the TTL, REPLACE over another type and BUSYKEY as redis-server
// replies them; a RESTORE whose TTL is already past deletes the replaced
// key and creates nothing. Replies are compared with redis-server's, byte
// for byte (orderless ones sorted).
func TestRestoreStagedTypesMatchRedis(t *testing.T) {
	const n = 60_000
	rs := harness.StartRedis(t)
	r := harness.MustDial(t, rs.Addr())
	fills := []string{
		`for i = 1, tonumber(ARGV[1]) do redis.call('hset', KEYS[1], 'field:' .. i, 'value:' .. (i * 31)) end`,
		`for i = 1, tonumber(ARGV[1]) do redis.call('sadd', KEYS[1], 'member:' .. i) end`,
		`for i = 1, tonumber(ARGV[1]) do redis.call('rpush', KEYS[1], 'element:' .. i) end`,
		`for i = 1, tonumber(ARGV[1]) do redis.call('zadd', KEYS[1], (i % 1000) / 4, 'member:' .. i) end
		 redis.call('zadd', KEYS[1], '-0', 'negzero')`,
	}
	keys := []string{"h", "s", "l", "z"}
	payloads := map[string]string{}
	for i, fill := range fills {
		if rep := r.Do("EVAL", fill, "1", keys[i], strconv.Itoa(n)); rep.IsError() || rep.Err != nil {
			t.Fatalf("fill %s: %v %v", keys[i], rep, rep.Err)
		}
		d := r.Do("DUMP", keys[i])
		if d.Type != '$' || d.Null {
			t.Fatalf("DUMP %s: %v", keys[i], d)
		}
		payloads[keys[i]] = d.Str
	}
	if rep := r.Do("FLUSHALL"); rep.Str != "OK" {
		t.Fatalf("FLUSHALL: %v", rep)
	}
	s := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning")
	sp := harness.MustDial(t, s.Addr())
	both := func(args ...string) (want, got harness.Reply) {
		return r.Do(args...), sp.Do(args...)
	}
	same := func(canon func(harness.Reply) harness.Reply, args ...string) {
		t.Helper()
		want, got := both(args...)
		if want.Err != nil || got.Err != nil {
			t.Fatalf("%s: %v / %v", args[0], want.Err, got.Err)
		}
		if canon != nil {
			want, got = canon(want), canon(got)
		}
		if string(want.Raw) != string(got.Raw) {
			t.Fatalf("%v: spillway %s, redis-server %s", args[:2], harness.Trunc(got.String(), 200), harness.Trunc(want.String(), 200))
		}
	}
	pairs := harness.CanonicalPairs
	for _, k := range keys {
		same(nil, "SET", k, "string")
		// BUSYKEY, then REPLACE over a string, with a TTL.
		same(nil, "RESTORE", k, "100000000", payloads[k])
		same(nil, "RESTORE", k, "100000000", payloads[k], "REPLACE")
		same(nil, "TYPE", k)
		same(nil, "OBJECT", "ENCODING", k)
		want, got := both("TTL", k)
		if got.Int <= 0 || got.Int > want.Int+5 || got.Int < want.Int-5 {
			t.Fatalf("TTL %s: spillway %v, redis-server %v", k, got, want)
		}
	}
	same(pairs, "HGETALL", "h")
	same(nil, "HLEN", "h")
	same(harness.Canonical, "SMEMBERS", "s")
	same(nil, "SCARD", "s")
	same(nil, "LRANGE", "l", "0", "-1")
	same(nil, "LINDEX", "l", "-1")
	same(nil, "ZRANGE", "z", "0", "-1", "WITHSCORES")
	same(nil, "ZSCORE", "z", "negzero")
	same(nil, "ZRANGEBYSCORE", "z", "-inf", "0", "WITHSCORES")
	// A TTL already past: the replaced key is deleted, nothing is created.
	same(nil, "RESTORE", "h", "1", payloads["h"], "REPLACE", "ABSTTL")
	same(nil, "EXISTS", "h")
	same(nil, "DBSIZE")
}
