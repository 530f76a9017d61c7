package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// End-to-end durability tests (DESIGN.md invariant 2): kill -9 under
// appendfsync always loses nothing acknowledged, a graceful stop loses
// nothing, and expiry times are absolute and survive restarts.

// kstate is the state of one key in the crash test's model.
type kstate struct {
	exists bool
	val    string
	ttl    bool
}

func (s kstate) String() string {
	if !s.exists {
		return "(absent)"
	}
	return fmt.Sprintf("%q ttl=%v", harness.Trunc(s.val, 40), s.ttl)
}

// crashOp is one write of the crash test.
type crashOp struct {
	kind byte // 's' SET, 'e' SET EX 3600, 'x' SETEX 3600, 'd' DEL, 'i' INCR, 'a' APPEND
	arg  string
}

// apply returns the state after op, as Redis defines it.
func (s kstate) apply(op crashOp) kstate {
	switch op.kind {
	case 's':
		return kstate{exists: true, val: op.arg}
	case 'e', 'x':
		return kstate{exists: true, val: op.arg, ttl: true}
	case 'd':
		return kstate{}
	case 'i':
		n, _ := strconv.ParseInt(s.val, 10, 64)
		return kstate{exists: true, val: strconv.FormatInt(n+1, 10), ttl: s.ttl}
	case 'a':
		return kstate{exists: true, val: s.val + op.arg, ttl: s.ttl}
	}
	panic("unknown op")
}

// args returns the command of op on key.
func (op crashOp) args(key string) []string {
	switch op.kind {
	case 's':
		return []string{"SET", key, op.arg}
	case 'e':
		return []string{"SET", key, op.arg, "EX", "3600"}
	case 'x':
		return []string{"SETEX", key, "3600", op.arg}
	case 'd':
		return []string{"DEL", key}
	case 'i':
		return []string{"INCR", key}
	case 'a':
		return []string{"APPEND", key, op.arg}
	}
	panic("unknown op")
}

// reply returns the reply op must get when the key was in state before.
func (op crashOp) reply(before kstate) string {
	switch op.kind {
	case 'd':
		if before.exists {
			return ":1"
		}
		return ":0"
	case 'i':
		return ":" + before.apply(op).val
	case 'a':
		return ":" + strconv.Itoa(len(before.val)+len(op.arg))
	}
	return "+OK"
}

// crashKey is the model of one key: its state when the cycle began
// (observed after the last restart) and the log indexes of this cycle's
// writes to it.
type crashKey struct {
	base kstate
	cur  kstate // assuming every write sent was applied
	idx  []int
}

type crashEntry struct {
	key  string
	op   crashOp
	want string
}

// crashWorker writes to keys only it owns, on one connection, so the order
// of its writes is the order the server applies them.
type crashWorker struct {
	id        int
	pipelined bool
	rng       *rand.Rand
	seq       int
	keys      map[string]*crashKey
	plain     []string // SET/SETEX keys, targets of DEL and overwrites
	log       []crashEntry
	acked     int // log[:acked] were acknowledged
}

func newCrashWorker(id int, seed uint64) *crashWorker {
	return &crashWorker{id: id, pipelined: id%2 == 1, rng: rand.New(rand.NewPCG(seed, uint64(id))),
		keys: make(map[string]*crashKey)}
}

func (w *crashWorker) randValue() string {
	b := make([]byte, 50+w.rng.IntN(1450))
	for i := range b {
		b[i] = 'a' + byte(w.rng.IntN(26))
	}
	return string(b)
}

// next picks the next write.
func (w *crashWorker) next() (string, crashOp) {
	w.seq++
	p := fmt.Sprintf("w%d:", w.id)
	r := w.rng.IntN(100)
	switch {
	case r < 30 || (r >= 72 && len(w.plain) == 0):
		return p + "s:" + strconv.Itoa(w.seq), crashOp{'s', w.randValue()}
	case r < 42:
		return p + "x:" + strconv.Itoa(w.seq), crashOp{'x', w.randValue()}
	case r < 57:
		return p + "ctr:" + strconv.Itoa(w.rng.IntN(6)), crashOp{kind: 'i'}
	case r < 72:
		return p + "app:" + strconv.Itoa(w.rng.IntN(20)), crashOp{'a', strconv.Itoa(w.seq) + ";"}
	case r < 84:
		return w.plain[w.rng.IntN(len(w.plain))], crashOp{kind: 'd'}
	case r < 92:
		return w.plain[w.rng.IntN(len(w.plain))], crashOp{'s', w.randValue()}
	default:
		return w.plain[w.rng.IntN(len(w.plain))], crashOp{'e', w.randValue()}
	}
}

// record adds a write to the model before it is sent.
func (w *crashWorker) record(key string, op crashOp) crashEntry {
	k := w.keys[key]
	if k == nil {
		k = &crashKey{}
		w.keys[key] = k
		if op.kind == 's' || op.kind == 'x' {
			w.plain = append(w.plain, key)
		}
	}
	e := crashEntry{key: key, op: op, want: op.reply(k.cur)}
	k.cur = k.cur.apply(op)
	k.idx = append(k.idx, len(w.log))
	w.log = append(w.log, e)
	return e
}

// run writes until the connection fails (the server was killed), maxOps
// writes were made or the deadline passes. A wrong reply is an error.
func (w *crashWorker) run(addr string, maxOps int, deadline time.Time, total *atomic.Int64) error {
	c, err := harness.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.Timeout = 10 * time.Second
	for len(w.log) < maxOps && time.Now().Before(deadline) {
		n := 1
		if w.pipelined {
			n = 1 + w.rng.IntN(32)
		}
		first := len(w.log)
		for i := 0; i < n; i++ {
			key, op := w.next()
			e := w.record(key, op)
			if err := c.Send(e.op.args(key)...); err != nil {
				return nil
			}
		}
		for i := first; i < len(w.log); i++ {
			r := c.Read()
			if r.Err != nil {
				return nil // the server is gone: log[i:] are in flight
			}
			e := w.log[i]
			if got := string(r.Raw[:len(r.Raw)-2]); got != e.want {
				return fmt.Errorf("worker %d: %s answered %s, want %s", w.id,
					strings.Join(e.op.args(e.key)[:2], " "), r.String(), e.want)
			}
			w.acked = i + 1
			total.Add(1)
		}
	}
	return nil
}

// candidates returns the states key may be in after a crash: its writes
// acknowledged applied, then any prefix of those in flight.
func (w *crashWorker) candidates(k *crashKey) []kstate {
	s := k.base
	var out []kstate
	for _, i := range k.idx {
		if i >= w.acked {
			if out == nil {
				out = append(out, s)
			}
		}
		s = s.apply(w.log[i].op)
		if i >= w.acked {
			out = append(out, s)
		}
	}
	if out == nil {
		out = []kstate{s}
	}
	return out
}

// verify reads every key of w and checks it against the model, then makes
// the observed states the base of the next cycle. It returns how many keys
// exist.
func (w *crashWorker) verify(t *testing.T, c *harness.Conn) int {
	t.Helper()
	names := make([]string, 0, len(w.keys))
	for k := range w.keys {
		names = append(names, k)
	}
	slices.Sort(names)
	got := make([]kstate, len(names))
	pipe(t, c, 2*len(names), 512, func(i int) []string {
		if i%2 == 0 {
			return []string{"GET", names[i/2]}
		}
		return []string{"PTTL", names[i/2]}
	}, func(i int, r harness.Reply) error {
		s := &got[i/2]
		if i%2 == 0 {
			if r.Type != '$' {
				return fmt.Errorf("GET %s = %s", names[i/2], r.String())
			}
			s.exists, s.val = !r.Null, r.Str
			return nil
		}
		switch {
		case r.Type != ':':
			return fmt.Errorf("PTTL %s = %s", names[i/2], r.String())
		case r.Int == -2 && s.exists, r.Int != -2 && !s.exists:
			return fmt.Errorf("PTTL %s = %d but GET = %v", names[i/2], r.Int, s.exists)
		case r.Int > 3600_000 || r.Int == 0 || r.Int < -2:
			return fmt.Errorf("PTTL %s = %d", names[i/2], r.Int)
		}
		s.ttl = r.Int > 0
		return nil
	})
	exist, bad := 0, 0
	for i, name := range names {
		k := w.keys[name]
		cands := w.candidates(k)
		if !slices.Contains(cands, got[i]) {
			if bad++; bad <= 10 {
				t.Errorf("after restart: %s is %v, want one of %v (acknowledged writes lost?)", name, got[i], cands)
			}
		}
		if got[i].exists {
			exist++
		}
		k.base, k.cur, k.idx = got[i], got[i], nil
	}
	if bad > 10 {
		t.Errorf("... %d keys wrong in all for worker %d", bad, w.id)
	}
	w.log, w.acked = nil, 0
	return exist
}

// TestKill9LosesNothingAcknowledged kills the server with SIGKILL while
// several clients write (some pipelining) under appendfsync always and a
// budget small enough that keys are demoted, restarts it on the same
// directory and checks that every acknowledged write is there, three times.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	s := harness.StartSpillway(t, "", "--appendfsync", "always", "--maxmemory", "1mb", "--loglevel", "warning")
	rng := rand.New(rand.NewPCG(seed, 0))
	workers := make([]*crashWorker, 4)
	for i := range workers {
		workers[i] = newCrashWorker(i, seed)
	}
	for cycle := 1; cycle <= 3; cycle++ {
		// Kill at a random moment 1.5-3 s into the load.
		after := 1500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond
		stopUnderLoad(t, s, workers, loadStop{name: fmt.Sprintf("kill -9 #%d", cycle), after: after,
			needDemotions: true, stop: s.Kill9})
		if t.Failed() {
			t.FailNow()
		}
	}
}

// loadStop says how stopUnderLoad stops the server.
type loadStop struct {
	name  string
	after time.Duration // time from the start of the load to stop
	stop  func()
	// others is the number of keys in the database not owned by workers.
	others int64
	// needDemotions makes a load that demoted nothing an error.
	needDemotions bool
}

// stopUnderLoad runs workers against s, calls ls.stop after ls.after,
// restarts s on the same directory and checks every worker's keys against
// its model: acknowledged writes are all there, in-flight ones may or may
// not be.
func stopUnderLoad(t *testing.T, s *harness.Server, workers []*crashWorker, ls loadStop) {
	t.Helper()
	name := ls.name
	const maxOpsPerWorker = 40_000
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(workers))
	deadline := time.Now().Add(ls.after + 20*time.Second)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(s.Addr(), maxOpsPerWorker, deadline, &total); err != nil {
				errs <- err
			}
		}()
	}
	stopAt := time.Now().Add(ls.after)
	for time.Now().Before(stopAt) && total.Load() < int64(len(workers))*maxOpsPerWorker {
		time.Sleep(20 * time.Millisecond)
	}
	ti := tierInfo(t, s.Conn(t))
	acked := total.Load()
	ls.stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	inflight := 0
	for _, w := range workers {
		inflight += len(w.log) - w.acked
	}
	t.Logf("%s: after %d acknowledged writes (%d in flight); demotions %d, hot_keys %d, cold_keys %d, hot_bytes %d, hot_budget %d",
		name, acked, inflight, ti.get(t, "demotions"), ti.get(t, "hot_keys"), ti.get(t, "cold_keys"),
		ti.get(t, "hot_bytes"), ti.get(t, "hot_budget"))
	if acked < 500 {
		t.Errorf("%s: only %d writes acknowledged before the stop: load too slow to test anything", name, acked)
	}
	if ls.needDemotions && ti.get(t, "demotions") == 0 {
		t.Errorf("%s: no demotions during the load; the budget is too large for the test", name)
	}

	s.Restart()
	c := s.Conn(t)
	c.Timeout = 30 * time.Second
	exist := 0
	for _, w := range workers {
		exist += w.verify(t, c)
	}
	want := ls.others + int64(exist)
	if got := dbsize(t, c); got != want {
		t.Errorf("%s: DBSIZE %d after restart, want %d", name, got, want)
	}
	if ti := tierInfo(t, c); ti.get(t, "hot_keys")+ti.get(t, "cold_keys") != want {
		t.Errorf("%s: hot_keys %d + cold_keys %d != %d keys after restart", name,
			ti.get(t, "hot_keys"), ti.get(t, "cold_keys"), want)
	}
}

// stopMethods are the graceful ways to stop a server; none may lose a write.
var stopMethods = []struct {
	name string
	stop func(t *testing.T, s *harness.Server)
}{
	{"SIGTERM", func(t *testing.T, s *harness.Server) { s.Term() }},
	{"SHUTDOWN NOSAVE", func(t *testing.T, s *harness.Server) { shutdown(t, s, "NOSAVE") }},
	{"SHUTDOWN", func(t *testing.T, s *harness.Server) { shutdown(t, s) }},
	{"SHUTDOWN SAVE", func(t *testing.T, s *harness.Server) { shutdown(t, s, "SAVE") }},
}

// shutdown sends SHUTDOWN with args, which must close the connection
// without a reply, and waits for the process to exit with status 0.
func shutdown(t *testing.T, s *harness.Server, args ...string) {
	t.Helper()
	c, err := harness.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := c.Do(append([]string{"SHUTDOWN"}, args...)...); r.Err == nil {
		t.Fatalf("SHUTDOWN %v answered %s; want the connection closed", args, r.String())
	}
	if !s.WaitExit(30 * time.Second) {
		t.Fatalf("server still running 30 s after SHUTDOWN %v", args)
	}
	if err := s.ExitError(); err != nil {
		t.Errorf("exit after SHUTDOWN %v: %v", args, err)
	}
}

// TestSigtermRestartLosesNothing writes, stops the server gracefully right
// after the last acknowledgement (SIGTERM, then SHUTDOWN in its forms),
// restarts it and checks every write of every round, under appendfsync
// everysec and no.
func TestSigtermRestartLosesNothing(t *testing.T) {
	for _, mode := range []string{"everysec", "no"} {
		t.Run(mode, func(t *testing.T) {
			s := harness.StartSpillway(t, "", "--appendfsync", mode, "--maxmemory", "4mb", "--loglevel", "warning")
			for round, m := range stopMethods {
				c := s.Conn(t)
				t0 := time.Now()
				writeRound(t, c, round)
				t1 := time.Now()
				m.stop(t, s)
				if m.name == "SIGTERM" {
					if err := s.ExitError(); err != nil {
						t.Errorf("exit after SIGTERM: %v", err)
					}
				}
				t2 := time.Now()
				s.Restart()
				c = s.Conn(t)
				t3 := time.Now()
				for r := 0; r <= round; r++ {
					checkRound(t, c, r)
				}
				t.Logf("%s: write %v, stop %v, restart %v, check %v", m.name, t1.Sub(t0).Round(time.Millisecond),
					t2.Sub(t1).Round(time.Millisecond), t3.Sub(t2).Round(time.Millisecond), time.Since(t3).Round(time.Millisecond))
				if got, want := dbsize(t, c), int64((round+1)*roundKeys); got != want {
					t.Errorf("after %s: DBSIZE %d, want %d", m.name, got, want)
				}
				if t.Failed() {
					t.FailNow()
				}
			}
			// A graceful stop while clients write: every acknowledged
			// write must survive, whatever the fsync policy.
			workers := []*crashWorker{newCrashWorker(0, 1), newCrashWorker(1, 1)}
			others := int64(len(stopMethods) * roundKeys)
			stopUnderLoad(t, s, workers, loadStop{name: "SIGTERM under load", after: time.Second,
				others: others, stop: s.Term})
			stopUnderLoad(t, s, workers, loadStop{name: "SHUTDOWN under load", after: time.Second,
				others: others, stop: func() { shutdown(t, s) }})
		})
	}
}
