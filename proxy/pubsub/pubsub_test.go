package pubsub

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// recorder is a Subscriber that records what it receives as
// "kind pattern channel payload" lines.
type recorder struct {
	name string
	mu   sync.Mutex
	got  []string
}

func (r *recorder) Deliver(m *Message) {
	var s string
	switch m.Kind {
	case KindPMessage:
		s = fmt.Sprintf("pmessage %s %s %s", m.Pattern, m.Channel, m.Payload)
	case KindSMessage:
		s = fmt.Sprintf("smessage %s %s", m.Channel, m.Payload)
	default:
		s = fmt.Sprintf("message %s %s", m.Channel, m.Payload)
	}
	if m.Sender == Subscriber(r) {
		s += " (self)"
	}
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.got
	r.got = nil
	return g
}

// op is one step of a scenario. Subscribers are named a, b, c...
type op struct {
	who  string // subscriber
	do   string // sub, unsub, unsuball, drop, pub, spub, pubfrom
	sp   Space
	name string // channel or pattern; for pub the channel
	msg  string
	// want: for sub/unsub "added/removed count", for unsuball the
	// "name:count" list (sorted), for pub/spub the receiver count.
	want string
	// recv: what each subscriber received afterwards (pub ops).
	recv map[string][]string
}

func TestHubScenarios(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		// after the ops: Len per space, NumSub, Names
		lens    [3]int
		numSub  map[string]int // channel -> subscribers (Channels)
		names   []string       // Names(Channels, nil, false), sorted
		counts  map[string][3]int
		active  bool
		matches map[string][]string // pattern -> Names(Channels, pattern)
	}{
		{
			name: "subscribe counts and duplicates",
			ops: []op{
				{who: "a", do: "sub", sp: Channels, name: "c1", want: "true 1"},
				{who: "a", do: "sub", sp: Channels, name: "c2", want: "true 2"},
				{who: "a", do: "sub", sp: Channels, name: "c1", want: "false 2"},
				{who: "a", do: "sub", sp: Patterns, name: "p*", want: "true 3"},
				{who: "a", do: "sub", sp: Patterns, name: "p*", want: "false 3"},
				{who: "a", do: "sub", sp: Shard, name: "s1", want: "true 1"},
				{who: "a", do: "sub", sp: Shard, name: "c1", want: "true 2"},
				{who: "b", do: "sub", sp: Channels, name: "c1", want: "true 1"},
			},
			lens:    [3]int{2, 1, 2},
			numSub:  map[string]int{"c1": 2, "c2": 1, "zz": 0, "s1": 0},
			names:   []string{"c1", "c2"},
			counts:  map[string][3]int{"a": {2, 1, 2}, "b": {1, 0, 0}, "c": {0, 0, 0}},
			active:  true,
			matches: map[string][]string{"c*": {"c1", "c2"}, "*2": {"c2"}, "x": nil},
		},
		{
			name: "publish to channels and patterns",
			ops: []op{
				{who: "a", do: "sub", sp: Channels, name: "news", want: "true 1"},
				{who: "a", do: "sub", sp: Patterns, name: "n*", want: "true 2"},
				{who: "a", do: "sub", sp: Patterns, name: "*s", want: "true 3"},
				{who: "b", do: "sub", sp: Patterns, name: "n*", want: "true 1"},
				{who: "c", do: "sub", sp: Shard, name: "news", want: "true 1"},
				{do: "pub", name: "news", msg: "hi", want: "4", recv: map[string][]string{
					"a": {"message news hi", "pmessage *s news hi", "pmessage n* news hi"},
					"b": {"pmessage n* news hi"},
				}},
				{do: "pub", name: "nope", msg: "x", want: "2", recv: map[string][]string{
					"a": {"pmessage n* nope x"}, "b": {"pmessage n* nope x"},
				}},
				{do: "pub", name: "other", msg: "x", want: "0"},
				{do: "spub", name: "news", msg: "s", want: "1", recv: map[string][]string{"c": {"smessage news s"}}},
				{do: "spub", name: "nope", msg: "s", want: "0"},
				{who: "a", do: "pubfrom", name: "news", msg: "me", want: "4", recv: map[string][]string{
					"a": {"message news me (self)", "pmessage *s news me (self)", "pmessage n* news me (self)"},
					"b": {"pmessage n* news me"},
				}},
			},
			lens:   [3]int{1, 2, 1},
			numSub: map[string]int{"news": 1},
			names:  []string{"news"},
			counts: map[string][3]int{"a": {1, 2, 0}, "b": {0, 1, 0}, "c": {0, 0, 1}},
			active: true,
		},
		{
			name: "glob rules are Redis's",
			ops: []op{
				{who: "a", do: "sub", sp: Patterns, name: "h?llo", want: "true 1"},
				{who: "a", do: "sub", sp: Patterns, name: "h[^e]llo", want: "true 2"},
				{who: "a", do: "sub", sp: Patterns, name: `h\*`, want: "true 3"},
				{who: "a", do: "sub", sp: Patterns, name: "*", want: "true 4"},
				{who: "a", do: "sub", sp: Patterns, name: "", want: "true 5"},
				{do: "pub", name: "hallo", msg: "m", want: "3", recv: map[string][]string{
					"a": {"pmessage * hallo m", "pmessage h?llo hallo m", "pmessage h[^e]llo hallo m"}}},
				{do: "pub", name: "h*", msg: "m", want: "2", recv: map[string][]string{
					"a": {"pmessage * h* m", `pmessage h\* h* m`}}},
				// "*" does not match the empty channel; "" does.
				{do: "pub", name: "", msg: "m", want: "1", recv: map[string][]string{"a": {"pmessage   m"}}},
				{do: "pub", name: "Hello", msg: "m", want: "1", recv: map[string][]string{"a": {"pmessage * Hello m"}}},
			},
			lens:   [3]int{0, 5, 0},
			counts: map[string][3]int{"a": {0, 5, 0}},
			active: true,
		},
		{
			name: "unsubscribe and unsubscribe all",
			ops: []op{
				{who: "a", do: "sub", sp: Channels, name: "c1", want: "true 1"},
				{who: "a", do: "sub", sp: Channels, name: "c2", want: "true 2"},
				{who: "a", do: "sub", sp: Patterns, name: "p3", want: "true 3"},
				{who: "a", do: "sub", sp: Patterns, name: "p1", want: "true 4"},
				{who: "a", do: "sub", sp: Patterns, name: "p2", want: "true 5"},
				{who: "a", do: "sub", sp: Shard, name: "s1", want: "true 1"},
				{who: "b", do: "sub", sp: Channels, name: "c1", want: "true 1"},
				{who: "a", do: "unsub", sp: Channels, name: "zz", want: "false 5"},
				{who: "a", do: "unsub", sp: Channels, name: "c2", want: "true 4"},
				{who: "a", do: "unsub", sp: Shard, name: "c1", want: "false 1"},
				// Patterns go in subscription order with decreasing counts.
				{who: "a", do: "unsuball", sp: Patterns, want: "p3:3 p1:2 p2:1"},
				{who: "a", do: "unsuball", sp: Patterns, want: ""},
				{who: "a", do: "unsuball", sp: Channels, want: "c1:0"},
				{who: "a", do: "unsuball", sp: Shard, want: "s1:0"},
				{who: "z", do: "unsub", sp: Channels, name: "c1", want: "false 0"},
				{do: "pub", name: "c1", msg: "m", want: "1", recv: map[string][]string{"b": {"message c1 m"}}},
			},
			lens:   [3]int{1, 0, 0},
			numSub: map[string]int{"c1": 1, "c2": 0},
			names:  []string{"c1"},
			counts: map[string][3]int{"a": {0, 0, 0}, "b": {1, 0, 0}},
			active: true,
		},
		{
			name: "drop removes everything",
			ops: []op{
				{who: "a", do: "sub", sp: Channels, name: "c1", want: "true 1"},
				{who: "a", do: "sub", sp: Patterns, name: "p*", want: "true 2"},
				{who: "a", do: "sub", sp: Shard, name: "s", want: "true 1"},
				{who: "a", do: "drop"},
				{who: "a", do: "drop"},
				{do: "pub", name: "p1", msg: "m", want: "0"},
				{do: "spub", name: "s", msg: "m", want: "0"},
			},
			counts: map[string][3]int{"a": {0, 0, 0}},
			active: false,
		},
		{
			name: "shard channels alone leave Publish inactive",
			ops: []op{
				{who: "a", do: "sub", sp: Shard, name: "s", want: "true 1"},
			},
			lens:   [3]int{0, 0, 1},
			counts: map[string][3]int{"a": {0, 0, 1}},
			active: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			subs := map[string]*recorder{}
			sub := func(n string) *recorder {
				if subs[n] == nil {
					subs[n] = &recorder{name: n}
				}
				return subs[n]
			}
			for i, o := range tc.ops {
				var got string
				switch o.do {
				case "sub":
					added, n := h.Subscribe(sub(o.who), o.sp, []byte(o.name))
					got = fmt.Sprint(added, " ", n)
				case "unsub":
					removed, n := h.Unsubscribe(sub(o.who), o.sp, []byte(o.name))
					got = fmt.Sprint(removed, " ", n)
				case "unsuball":
					var parts []string
					n := h.UnsubscribeAll(sub(o.who), o.sp, func(name []byte, count int) {
						parts = append(parts, fmt.Sprintf("%s:%d", name, count))
					})
					if n != len(parts) {
						t.Errorf("op %d: UnsubscribeAll returned %d, called back %d times", i, n, len(parts))
					}
					got = strings.Join(parts, " ")
				case "drop":
					h.Drop(sub(o.who))
				case "pub", "spub", "pubfrom":
					for _, r := range subs {
						r.take()
					}
					var n int
					switch o.do {
					case "pub":
						n = h.Publish([]byte(o.name), []byte(o.msg))
					case "spub":
						n = h.SPublish([]byte(o.name), []byte(o.msg))
					default:
						n = h.PublishFrom(sub(o.who), []byte(o.name), []byte(o.msg))
					}
					got = fmt.Sprint(n)
					for name, r := range subs {
						recv := r.take()
						// The order of pattern deliveries is unspecified
						// (Redis's is a hash table's); channel first.
						rest := recv
						if len(rest) > 0 && strings.HasPrefix(rest[0], "message ") {
							rest = rest[1:]
						}
						sort.Strings(rest)
						if !reflect.DeepEqual(recv, o.recv[name]) {
							t.Errorf("op %d %s %q: %s received %q, want %q", i, o.do, o.name, name, recv, o.recv[name])
						}
					}
				}
				if o.do != "drop" && got != o.want {
					t.Errorf("op %d %s %v %q: got %q, want %q", i, o.do, o.sp, o.name, got, o.want)
				}
			}
			for sp, want := range tc.lens {
				if got := h.Len(Space(sp)); got != want {
					t.Errorf("Len(%d) = %d, want %d", sp, got, want)
				}
			}
			for ch, want := range tc.numSub {
				if got := h.NumSub(Channels, []byte(ch)); got != want {
					t.Errorf("NumSub(%q) = %d, want %d", ch, got, want)
				}
			}
			if tc.names != nil {
				var got []string
				for _, n := range h.Names(Channels, nil, false) {
					got = append(got, string(n))
				}
				sort.Strings(got)
				if !reflect.DeepEqual(got, tc.names) {
					t.Errorf("Names = %q, want %q", got, tc.names)
				}
			}
			for p, want := range tc.matches {
				var got []string
				for _, n := range h.Names(Channels, []byte(p), true) {
					got = append(got, string(n))
				}
				sort.Strings(got)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Names(%q) = %q, want %q", p, got, want)
				}
			}
			for who, want := range tc.counts {
				a, b, c := h.Counts(sub(who))
				if got := [3]int{a, b, c}; got != want {
					t.Errorf("Counts(%s) = %v, want %v", who, got, want)
				}
			}
			if h.Active() != tc.active {
				t.Errorf("Active = %v, want %v", h.Active(), tc.active)
			}
		})
	}
}

// TestHubLargeGroups exercises the indexed groups: many subscribers on one
// channel and pattern, removed in a scrambled order.
func TestHubLargeGroups(t *testing.T) {
	h := New()
	const n = 500
	rs := make([]*recorder, n)
	for i := range rs {
		rs[i] = &recorder{}
		h.Subscribe(rs[i], Channels, []byte("ch"))
		h.Subscribe(rs[i], Patterns, []byte("c*"))
	}
	if got := h.Publish([]byte("ch"), []byte("m")); got != 2*n {
		t.Fatalf("Publish = %d, want %d", got, 2*n)
	}
	for i := 0; i < n; i += 2 {
		h.Drop(rs[(i*7)%n])
	}
	left := 0
	for _, r := range rs {
		if a, _, _ := h.Counts(r); a == 1 {
			left++
		}
	}
	if got := h.Publish([]byte("ch"), []byte("m")); got != 2*left || h.NumSub(Channels, []byte("ch")) != left {
		t.Fatalf("after drops: Publish = %d, NumSub = %d, want %d and %d", got, h.NumSub(Channels, []byte("ch")), 2*left, left)
	}
	for _, r := range rs {
		r.take()
	}
	h.Publish([]byte("ch"), []byte("z"))
	for i, r := range rs {
		a, _, _ := h.Counts(r)
		if got := len(r.take()); got != 2*a {
			t.Fatalf("subscriber %d got %d messages, want %d", i, got, 2*a)
		}
	}
	for _, r := range rs {
		h.Drop(r)
	}
	if h.Active() || h.Len(Channels) != 0 || h.Len(Patterns) != 0 {
		t.Fatalf("not empty after dropping all: active %v, %d channels, %d patterns", h.Active(), h.Len(Channels), h.Len(Patterns))
	}
}

// TestHubConcurrent publishes from several goroutines while others
// subscribe and unsubscribe (run with -race): every delivery counted by
// Publish reaches a subscriber.
func TestHubConcurrent(t *testing.T) {
	h := New()
	var wg sync.WaitGroup
	stable := &recorder{}
	h.Subscribe(stable, Channels, []byte("c"))
	var total sync.Map
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			sum := 0
			for i := 0; i < 2000; i++ {
				sum += h.Publish([]byte("c"), []byte("m"))
			}
			total.Store(p, sum)
		}(p)
	}
	churn := make([]*recorder, 8)
	for k := range churn {
		churn[k] = &recorder{}
		wg.Add(1)
		go func(r *recorder) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				h.Subscribe(r, Patterns, []byte("c*"))
				h.Subscribe(r, Channels, []byte("c"))
				h.Unsubscribe(r, Channels, []byte("c"))
				h.Drop(r)
			}
		}(churn[k])
	}
	wg.Wait()
	published := 0
	total.Range(func(_, v any) bool { published += v.(int); return true })
	received := len(stable.take())
	for _, r := range churn {
		received += len(r.take())
	}
	if received != published {
		t.Fatalf("Publish counted %d deliveries, subscribers received %d", published, received)
	}
	if got := h.Len(Patterns); got != 0 {
		t.Fatalf("%d patterns left", got)
	}
}

// TestPublishAllocs: publishing allocates nothing when no one listens and
// nothing in the Hub when someone does (keyspace notifications publish on
// every write).
func TestPublishAllocs(t *testing.T) {
	h := New()
	ch, msg := []byte("chan"), []byte("msg")
	if n := testing.AllocsPerRun(100, func() { h.Publish(ch, msg) }); n != 0 {
		t.Errorf("Publish with no subscribers: %v allocations", n)
	}
	h.Subscribe(nopSub{}, Channels, ch)
	h.Subscribe(nopSub{}, Patterns, []byte("c*"))
	if n := testing.AllocsPerRun(100, func() { h.Publish(ch, msg) }); n != 0 {
		t.Errorf("Publish to subscribers: %v allocations", n)
	}
	h.Subscribe(nopSub{}, Shard, ch)
	if n := testing.AllocsPerRun(100, func() { h.SPublish(ch, msg) }); n != 0 {
		t.Errorf("SPublish to subscribers: %v allocations", n)
	}
}

type nopSub struct{}

func (nopSub) Deliver(*Message) {}

// TestRecipients checks that Recipients names the subscribers a publish
// would reach, once per delivery, as Publish counts them, and stops when
// told to.
func TestRecipients(t *testing.T) {
	h := New()
	a, b, c := &recorder{name: "a"}, &recorder{name: "b"}, &recorder{name: "c"}
	h.Subscribe(a, Channels, []byte("news"))
	h.Subscribe(b, Patterns, []byte("n*"))
	h.Subscribe(b, Patterns, []byte("*s"))
	h.Subscribe(c, Shard, []byte("news"))
	h.Subscribe(c, Channels, []byte("other"))
	names := func(sp Space, ch string, limit int) []string {
		var out []string
		h.Recipients(sp, []byte(ch), func(s Subscriber) bool {
			out = append(out, s.(*recorder).name)
			return len(out) < limit
		})
		return out
	}
	if got, want := names(Channels, "news", 10), []string{"a", "b", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("news: %v, want %v", got, want)
	}
	if n := h.Publish([]byte("news"), []byte("x")); n != 3 {
		t.Errorf("Publish news reached %d, want 3", n)
	}
	if got := names(Channels, "news", 1); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("stopped after one: %v", got)
	}
	if got := names(Shard, "news", 10); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("shard news: %v", got)
	}
	if got := names(Channels, "zzz", 10); got != nil {
		t.Errorf("zzz: %v", got)
	}
	h.Unsubscribe(a, Channels, []byte("news"))
	h.UnsubscribeAll(b, Patterns, nil)
	if got := names(Channels, "news", 10); got != nil {
		t.Errorf("after unsubscribing: %v", got)
	}
}
