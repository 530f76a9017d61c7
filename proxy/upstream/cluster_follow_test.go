package upstream

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/uptier"
)

func openFeedEngine(t *testing.T) *tiering.Engine {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 4 << 20, MemTableBytes: 4 << 20,
		Fsync: coldstore.FsyncNo, Logger: quiet})
	if err != nil {
		t.Fatalf("coldstore.Open: %v", err)
	}
	eng, err := tiering.Open(cold, tiering.Options{Databases: 16, HotBudget: 0, PromoteMinHits: 1,
		ColdReadMaxBytes: 1 << 20, Logger: quiet})
	if err != nil {
		cold.Close()
		t.Fatalf("tiering.Open: %v", err)
	}
	t.Cleanup(func() {
		eng.Close()
		if err := cold.Close(); err != nil {
			t.Errorf("coldstore.Close: %v", err)
		}
	})
	return eng
}

// TestColdFeedPayload: a cold copy sent on the feed (its RESTORE payload,
// as the leader builds it from its store) and stored by the follower
// (valueFromPayload, then the store's import) is the same copy: the
// follower's payload of it is byte for byte the leader's, expiry included,
// for every type the demoter writes but streams.
func TestColdFeedPayload(t *testing.T) {
	leader, follower := openFeedEngine(t), openFeedEngine(t)
	exp := time.Now().Add(time.Hour).UnixMilli()
	big := make([][]byte, 300)
	for i := range big {
		big[i] = []byte("member-" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	vals := []*uptier.Value{
		{Key: []byte("s"), Type: codec.TypeString, Str: []byte("a string value")},
		{Key: []byte("s-int"), Type: codec.TypeString, Str: []byte("12345"), ExpireAt: exp},
		{Key: []byte("l"), Type: codec.TypeList, Elems: [][]byte{[]byte("x"), []byte("y"), []byte("x")}},
		{Key: []byte("l-big"), Type: codec.TypeList, Elems: big, ExpireAt: exp},
		{Key: []byte("set"), Type: codec.TypeSet, Elems: [][]byte{[]byte("1"), []byte("2"), []byte("30")}},
		{Key: []byte("set-big"), Type: codec.TypeSet, Elems: big},
		{Key: []byte("h"), Type: codec.TypeHash, Elems: [][]byte{[]byte("f"), []byte("v"), []byte("g"), []byte("w")}, ExpireAt: exp},
		{Key: []byte("z"), Type: codec.TypeZSet, Members: [][]byte{[]byte("a"), []byte("b")}, Scores: []float64{1.5, -2}},
	}
	if err := uptier.Import(leader, 0, vals); err != nil {
		t.Fatal(err)
	}
	var d link.Dump
	for _, v := range vals {
		want, ok, err := dumpOf(leader, v.Key, &d)
		if err != nil || !ok {
			t.Fatalf("leader's copy of %s: ok %v, %v", v.Key, ok, err)
		}
		got, err := valueFromPayload(v.Key, v.ExpireAt, want)
		if err != nil {
			t.Fatalf("valueFromPayload(%s): %v", v.Key, err)
		}
		if err := uptier.Import(follower, 0, []*uptier.Value{got}); err != nil {
			t.Fatalf("follower's import of %s: %v", v.Key, err)
		}
		again, ok, err := dumpOf(follower, v.Key, &d)
		if err != nil || !ok {
			t.Fatalf("follower's copy of %s: ok %v, %v", v.Key, ok, err)
		}
		if !bytes.Equal(again, want) {
			t.Fatalf("%s: the follower's payload differs from the leader's:\n%q\n%q", v.Key, again, want)
		}
		lexp, _, _ := link.DumpKey(leader, 0, v.Key, &d)
		fexp, _, _ := link.DumpKey(follower, 0, v.Key, &d)
		if lexp != v.ExpireAt || fexp != v.ExpireAt {
			t.Fatalf("%s: expiry leader %d follower %d; want %d", v.Key, lexp, fexp, v.ExpireAt)
		}
	}
	if _, err := valueFromPayload([]byte("bad"), 0, []byte("not a payload")); err == nil {
		t.Fatal("valueFromPayload of a bad payload: no error")
	}
}

// dumpOf returns a copy of key's RESTORE payload in eng's store.
func dumpOf(eng *tiering.Engine, key []byte, d *link.Dump) ([]byte, bool, error) {
	_, ok, err := link.DumpKey(eng, 0, key, d)
	if err != nil || !ok {
		return nil, ok, err
	}
	return append([]byte(nil), d.Finish()...), true, nil
}

// TestColdFollowerAuthenticates: a follower whose sidecar has masterauth
// (and masteruser) sends the leader AUTH first, as a Redis replica to its
// master, and reports the leader's refusal of it; without masterauth it
// sends none. The leader here only records what it is sent.
func TestColdFollowerAuthenticates(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		first string
	}{
		{nil, "REPLCONF"},
		{[]string{"--masterauth", "pw"}, "AUTH pw"},
		{[]string{"--masterauth", "pw", "--masteruser", "side"}, "AUTH side pw"},
	} {
		cfg, err := config.Parse(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			nc, err := l.Accept()
			if err != nil {
				got <- err.Error()
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			rd := resp.NewReader(nc, 4096)
			args, err := rd.ReadCommand()
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(bytes.Join(args, []byte(" ")))
			nc.Write([]byte("-WRONGPASS invalid username-password pair or user is disabled.\r\n"))
		}()
		cf := &clusterFollow{f: &Front{cfg: cfg}, stop: make(chan struct{})}
		err = cf.followOnce(l.Addr().String(), make(chan struct{}))
		l.Close()
		if first := <-got; !strings.HasPrefix(first, tc.first) {
			t.Errorf("%v: the leader got %q first, want %q", tc.args, first, tc.first)
		}
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("%v: followOnce = %v, want the leader's refusal", tc.args, err)
		}
	}
}

// TestFollowerDueDropSparesNewCopy: a reloaded key's copy is dropped once
// the replica node's offset reaches its DELAFTER; when the key is demoted
// again and its new copy (SET on the feed) arrives after the role watch
// found the drop due but before it ran, the drop is cancelled, not run on
// the new copy (which lost the key once the leader's UNLINK followed:
// TestClusterFailover's COUNTKEYSINSLOT one short after a failover). The
// interleaving is replayed step by step: applyPending's collection, the
// SET, then the drop (dropDue). A drop still due goes ahead.
func TestFollowerDueDropSparesNewCopy(t *testing.T) {
	eng := openFeedEngine(t)
	f := &Front{engine: eng, slots: uptier.NewSlotDirectory(eng)}
	f.indexes = make([]atomic.Pointer[uptier.ColdIndex], 16)
	for i := range f.indexes {
		f.indexes[i].Store(uptier.NewColdIndex())
	}
	cf := newClusterFollow(f)
	var d link.Dump
	copyOf := func(key string) []byte {
		src := openFeedEngine(t)
		v := &uptier.Value{Key: []byte(key), Type: codec.TypeString, Str: []byte("value of " + key)}
		if err := uptier.Import(src, 0, []*uptier.Value{v}); err != nil {
			t.Fatal(err)
		}
		p, ok, err := dumpOf(src, []byte(key), &d)
		if err != nil || !ok {
			t.Fatalf("payload of %s: %v %v", key, ok, err)
		}
		return p
	}
	feed := func(args ...[]byte) {
		t.Helper()
		if _, err := f.applyFeed(cf, args); err != nil {
			t.Fatalf("applyFeed %q: %v", args[0], err)
		}
	}
	has := func(key string) bool {
		_, ok, err := link.DumpKey(eng, 0, []byte(key), &d)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, k := range []string{"again", "gone"} {
		feed([]byte("SET"), []byte("0"), []byte(k), []byte("0"), copyOf(k))
		feed([]byte("DELAFTER"), []byte("0"), []byte(k), []byte("100"))
	}
	// The role watch finds both drops due at offset 100...
	due := []dbKey{{0, "again"}, {0, "gone"}}
	// ...then the feed's SET of "again" (demoted again) is applied...
	feed([]byte("SET"), []byte("0"), []byte("again"), []byte("0"), copyOf("again"))
	// ...then the drops run.
	for _, k := range due {
		if err := f.dropDue(cf, k, 100); err != nil {
			t.Fatal(err)
		}
	}
	if !has("again") {
		t.Fatal(`"again": its new copy was dropped by the DELAFTER its SET cancelled`)
	}
	if has("gone") {
		t.Fatal(`"gone": its due DELAFTER did not drop it`)
	}
	// applyPending itself: a DELAFTER not yet due stays, a due one drops.
	feed([]byte("DELAFTER"), []byte("0"), []byte("again"), []byte("200"))
	cf.applyPending(150, false)
	if !has("again") {
		t.Fatal(`"again" dropped at offset 150 by a DELAFTER of 200`)
	}
	cf.applyPending(200, false)
	if has("again") {
		t.Fatal(`"again" kept at offset 200 with a DELAFTER of 200`)
	}
}
