package server

import (
	"fmt"
	"testing"

	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/pubsub"
)

// recorder is a pubsub.Subscriber that keeps "channel message" strings.
type recorder struct{ got []string }

func (r *recorder) Deliver(m *pubsub.Message) {
	r.got = append(r.got, string(m.Channel)+" "+string(m.Payload))
}

// notifyServer returns a server with just what notifications use, the
// setting set to classes.
func notifyServer(t testing.TB, classes string) *Server {
	t.Helper()
	cfg := config.Default()
	if err := cfg.Set([][2]string{{"notify-keyspace-events", classes}}); err != nil {
		t.Fatalf("CONFIG SET notify-keyspace-events %q: %v", classes, err)
	}
	return &Server{cfg: cfg, pubsub: pubsub.New()}
}

// fireAll publishes one event of each kind the handlers use.
func fireAll(c *Client, key []byte) {
	c.notify(NotifyString, "set", key)
	c.notifyKeyMiss(key)
	c.notifyNewKey(true, key)
	c.notifyIn(2, NotifyGeneric, "move_to", key)
	ev := c.events() // a list pop emptying the list: "lpop", then "del"
	ev.Notify(c.db, NotifyList, "lpop", key)
	ev.Notify(c.db, NotifyGeneric, "del", key)
	c.s.notifyExpired(c.db, key)
}

func TestNotifyChannelsAndClasses(t *testing.T) {
	key := []byte("k")
	tests := []struct {
		classes string
		want    []string
	}{
		{"", nil},
		{"KEA", []string{
			"__keyspace@3__:k set", "__keyevent@3__:set k",
			"__keyspace@2__:k move_to", "__keyevent@2__:move_to k",
			"__keyspace@3__:k lpop", "__keyevent@3__:lpop k",
			"__keyspace@3__:k del", "__keyevent@3__:del k",
			"__keyspace@3__:k expired", "__keyevent@3__:expired k",
		}},
		// A does not include n and m; the CONFIG GET form of "KEAnm" drops
		// n ("AKEm"), but n stays enabled, as in Redis.
		{"KEAnm", []string{
			"__keyspace@3__:k set", "__keyevent@3__:set k",
			"__keyspace@3__:k keymiss", "__keyevent@3__:keymiss k",
			"__keyspace@3__:k new", "__keyevent@3__:new k",
			"__keyspace@2__:k move_to", "__keyevent@2__:move_to k",
			"__keyspace@3__:k lpop", "__keyevent@3__:lpop k",
			"__keyspace@3__:k del", "__keyevent@3__:del k",
			"__keyspace@3__:k expired", "__keyevent@3__:expired k",
		}},
		{"El", []string{"__keyevent@3__:lpop k"}},
		{"Kx", []string{"__keyspace@3__:k expired"}},
		{"Egn", []string{"__keyevent@3__:new k", "__keyevent@2__:move_to k", "__keyevent@3__:del k"}},
		{"Em", []string{"__keyevent@3__:keymiss k"}},
		{"K$", []string{"__keyspace@3__:k set"}},
		{"nmx", nil}, // neither K nor E: nothing is published
		{"KEe", nil}, // evicted: never sent (demotion is not eviction)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.classes), func(t *testing.T) {
			s := notifyServer(t, tt.classes)
			rec := &recorder{}
			s.pubsub.Subscribe(rec, pubsub.Patterns, []byte("*"))
			fireAll(&Client{s: s, db: 3}, key)
			if fmt.Sprint(rec.got) != fmt.Sprint(tt.want) {
				t.Errorf("events:\n got %q\nwant %q", rec.got, tt.want)
			}
		})
	}
}

// TestNotifyOffAllocates checks that the notification path costs no
// allocation when notifications are off, when nobody subscribes, and in
// the steady state when someone does (the buffers are recycled).
func TestNotifyOffAllocates(t *testing.T) {
	key := []byte("some:key")
	tests := []struct {
		name       string
		classes    string
		subscribed bool
	}{
		{"off", "", true},
		{"on, nobody subscribed", "KEAnm", false},
		{"on, other classes only", "Kz", true},
		{"on, subscribed", "KEAnm", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := notifyServer(t, tt.classes)
			if tt.subscribed {
				s.pubsub.Subscribe(nopSubscriber{}, pubsub.Patterns, []byte("__key*__:*"))
			}
			c := &Client{s: s, db: 9}
			fireAll(c, key) // warms the buffer pool
			if tt.subscribed && tt.classes == "KEAnm" && raceEnabled {
				t.Skip("the race detector's sync.Pool drops buffers")
			}
			if n := testing.AllocsPerRun(1000, func() { fireAll(c, key) }); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
		})
	}
}

type nopSubscriber struct{}

func (nopSubscriber) Deliver(*pubsub.Message) {}

// BenchmarkNotifyOff is a write command's notification cost with
// notifications off: one atomic load (and the dirty counter's add).
func BenchmarkNotifyOff(b *testing.B) {
	c := &Client{s: notifyServer(b, "")}
	key := []byte("some:key")
	b.ReportAllocs()
	for b.Loop() {
		c.notify(NotifyString, "set", key)
	}
}

// BenchmarkNotifyNoSubscriber is the cost with notifications on and
// nobody subscribed.
func BenchmarkNotifyNoSubscriber(b *testing.B) {
	c := &Client{s: notifyServer(b, "KEA")}
	key := []byte("some:key")
	b.ReportAllocs()
	for b.Loop() {
		c.notify(NotifyString, "set", key)
	}
}
