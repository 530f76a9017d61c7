package integration

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

const (
	// queueElemMin and queueElemMax bound the length of a queue element.
	queueElemMin = 40
	queueElemMax = 64
	// queueWindow is the number of commands the queue client keeps in
	// flight on its one connection.
	queueWindow = 16
	// queueCheckpoints is how many times during the push and again during
	// the drain LLEN and LINDEX (head, middle, tail) are checked.
	queueCheckpoints = 10
)

// queueRSSBound bounds the RSS of a Spillway with --maxmemory 32mb holding a
// 5,000,000-element queue: Go's soft memory limit, 2 x 32 MB + 64 MB. The
// budget covers the hot tier, the block cache (4 MB) and the memtables (2 MB
// each, two at most); the rest of the process (resident text, stacks,
// connection buffers, Pebble's manually managed memory) fits in the 64 MB.
// Measured on 2 cores: 37 MB at the end of the push, 52-54 MB peak during
// the drain. The queue's elements alone are about 260 MB, and redis-server
// holds them in 277 MB, so a list kept whole in memory cannot pass.
const queueRSSBound = 128 << 20

// TestQueueFiveMillion: a queue of 5,000,000 unique elements of 40-64 bytes
// (about 260 MB) backs up in a Spillway with --maxmemory 32mb, pushed by
// pipelined variadic and single-element RPUSH, then drains by LPOP with and
// without a count. Every element comes out exactly once and in order, LLEN
// and LINDEX (head, middle, tail) are right at checkpoints, the key is gone
// at the end, and RSS stays under queueRSSBound throughout: only the ends of
// the list are in memory, its middle is on disk.
func TestQueueFiveMillion(t *testing.T) {
	const n = 5_000_000
	s := harness.StartSpillway(t, "", "--maxmemory", "32mb", "--appendfsync", "no", "--loglevel", "warning")
	began := time.Now()
	before := tieringInfo(t, s)
	res := runQueue(t, s, "queue", n, 1, 5*time.Minute, func() {
		info := tieringInfo(t, s)
		t.Logf("INFO tiering after the push: %s", tieringFields(info))
		hot, err1 := strconv.ParseInt(info["hot_bytes"], 10, 64)
		budget, err2 := strconv.ParseInt(info["hot_budget"], 10, 64)
		if err1 != nil || err2 != nil || budget <= 0 {
			t.Fatalf("INFO tiering hot_bytes=%q hot_budget=%q", info["hot_bytes"], info["hot_budget"])
		}
		// Only the list's ends are in memory: far less than the budget
		// (hashes and sets over an eighth of it are never promoted).
		if hot > budget/8 {
			t.Fatalf("hot_bytes %d over hot_budget/8 (%d) with only a %d-element list: more than its ends in memory",
				hot, budget/8, n)
		}
	})
	after := tieringInfo(t, s)
	t.Logf("INFO tiering after the drain: %s", tieringFields(after))
	t.Logf("whole run %v; peak RSS %d MB (bound %d MB)", time.Since(began).Round(time.Millisecond), res.peak()>>20, queueRSSBound>>20)
	if before["promotions_in_steps"] != after["promotions_in_steps"] {
		t.Errorf("promotions_in_steps went from %s to %s: the queue was loaded into memory whole",
			before["promotions_in_steps"], after["promotions_in_steps"])
	}
	if res.peak() > queueRSSBound {
		t.Fatalf("peak RSS %d MB (push %d MB, drain %d MB, VmHWM %d MB) with --maxmemory 32mb, want under %d MB",
			res.peak()>>20, res.pushPeak>>20, res.drainPeak>>20, res.hwm>>20, queueRSSBound>>20)
	}
}

// tieringFields renders the INFO tiering fields that show where a key lives.
func tieringFields(info map[string]string) string {
	var b []byte
	for _, k := range []string{"hot_keys", "cold_keys", "hot_bytes", "hot_budget", "promotions", "promotions_in_steps",
		"demotions", "cold_reads", "cold_store_gets", "cold_store_iter_steps", "cold_bytes_on_disk"} {
		b = fmt.Appendf(b, "%s=%s ", k, info[k])
	}
	return string(b[:max(len(b)-1, 0)])
}

// queuePool is the filler the queue elements are cut from.
var queuePool = randomLetters(rand.New(rand.NewPCG(11, 12)), 1<<16)

// queueElem appends element i of a test queue to b: "job:" and i in nine
// digits, a colon, then letters from queuePool up to queueElemMin..Max
// bytes in all. Every element is unique and names its sequence number.
func queueElem(b []byte, i int) []byte {
	b = append(b, "job:"...)
	var d [9]byte
	for k, x := len(d)-1, i; k >= 0; k, x = k-1, x/10 {
		d[k] = '0' + byte(x%10)
	}
	b = append(b, d[:]...)
	b = append(b, ':')
	n := queueElemMin + i%(queueElemMax-queueElemMin+1) - 14
	off := (i * 7919) % (len(queuePool) - queueElemMax)
	return append(b, queuePool[off:off+n]...)
}

// queueOp is a command of the queue workload in flight, with what its reply
// must be.
type queueOp struct {
	kind byte // 'P' RPUSH, 'C' LPOP key count, 'O' plain LPOP, 'L' LLEN, 'I' LINDEX
	// first is the first element pushed or popped; for LINDEX the element
	// expected.
	first int
	// n is the number of elements pushed or popped (for LPOP with a count,
	// what the count should yield); for LINDEX the index asked.
	n int
	// length is the list length RPUSH or LLEN must answer.
	length int
}

// queueClient runs the queue workload on one pipelined connection, keeping
// up to queueWindow commands in flight and checking every reply in order.
type queueClient struct {
	t        *testing.T
	c        *harness.Conn
	key      string
	deadline time.Time
	buf      []byte    // the command being encoded
	elem     []byte    // scratch for expected elements
	inflight []queueOp // sent, reply not read, oldest first
	// Commands sent: RPUSH (singles of them with one element), LPOP with a
	// count, plain LPOP, and LLEN/LINDEX checks.
	rpush, singles, lpopCount, lpopPlain, checks int
}

// queueResult is what one run of the workload measured.
type queueResult struct {
	n                 int
	pushTime, popTime time.Duration
	pushCmds, popCmds int
	// pushPeak and drainPeak are the largest sampled VmRSS during each
	// phase, hwm the server's VmHWM at the end.
	pushPeak, drainPeak, hwm int64
}

// peak is the largest resident set size seen.
func (r queueResult) peak() int64 { return max(r.pushPeak, r.drainPeak, r.hwm) }

// runQueue pushes elements 0..n-1 of queueElem onto key (the queue backs
// up: nothing is popped until everything is pushed) with RPUSH of 100-500
// elements a command and some single-element RPUSHes, then drains it with
// LPOP key count (mostly 100-500, sometimes 1-10) and some plain LPOPs. It
// checks every reply: RPUSH's length, every element popped exactly once and
// in order, LLEN and LINDEX at the head, middle and tail at checkpoints, and
// that the key is gone at the end. The server's RSS is sampled throughout.
// afterPush, when not nil, runs between the two phases. The whole run must
// finish within limit.
func runQueue(t *testing.T, s *harness.Server, key string, n int, seed uint64, limit time.Duration, afterPush func()) queueResult {
	t.Helper()
	c := s.Conn(t)
	c.Timeout = time.Minute
	if r := c.Do("EXISTS", key); r.Int != 0 {
		t.Fatalf("EXISTS %s before the run = %s", key, r.String())
	}
	q := &queueClient{t: t, c: c, key: key, deadline: time.Now().Add(limit)}
	rnd := rand.New(rand.NewPCG(seed, 13))
	res := queueResult{n: n}
	rss := harness.SampleRSS(s.Pid(), 50*time.Millisecond)
	defer rss.Stop()

	start := time.Now()
	next := n / queueCheckpoints
	for pushed := 0; pushed < n; {
		k := 1
		if rnd.IntN(100) >= 8 {
			k = min(100+rnd.IntN(401), n-pushed)
		}
		q.push(pushed, k)
		pushed += k
		if pushed >= next || pushed == n {
			q.checkpoint(0, pushed-1)
			next += n / queueCheckpoints
		}
	}
	q.waitAll()
	res.pushTime = time.Since(start)
	res.pushCmds = q.rpush
	res.pushPeak, _ = rss.Peak()
	t.Logf("pushed %d elements with %d RPUSH (%d single-element) in %v: %s elements/s, %s commands/s; peak RSS %d MB",
		n, q.rpush, q.singles, res.pushTime.Round(time.Millisecond),
		thousands(float64(n)/res.pushTime.Seconds()), thousands(float64(q.rpush)/res.pushTime.Seconds()), res.pushPeak>>20)
	if afterPush != nil {
		afterPush()
	}

	start = time.Now()
	next = n / queueCheckpoints
	for popped := 0; popped < n; {
		switch p := rnd.IntN(100); {
		case p < 5:
			q.popOne(popped)
			popped++
		case p < 10:
			k := 1 + rnd.IntN(10)
			q.popCount(popped, k, min(k, n-popped))
			popped += min(k, n-popped)
		default:
			k := 100 + rnd.IntN(401)
			q.popCount(popped, k, min(k, n-popped))
			popped += min(k, n-popped)
		}
		if popped >= next && popped < n {
			q.checkpoint(popped, n-1)
			next += n / queueCheckpoints
		}
	}
	q.waitAll()
	res.popTime = time.Since(start)
	res.popCmds = q.lpopCount + q.lpopPlain
	peak, samples, err := rss.Stop()
	if err != nil {
		t.Fatalf("sampling RSS: %v", err)
	}
	res.drainPeak = peak
	if res.hwm, err = harness.ProcPeakRSS(s.Pid()); err != nil {
		t.Fatal(err)
	}
	t.Logf("popped %d elements with %d LPOP count and %d plain LPOP in %v: %s elements/s, %s commands/s; "+
		"peak RSS %d MB (%d samples), VmHWM %d MB",
		n, q.lpopCount, q.lpopPlain, res.popTime.Round(time.Millisecond), thousands(float64(n)/res.popTime.Seconds()),
		thousands(float64(res.popCmds)/res.popTime.Seconds()), res.drainPeak>>20, samples, res.hwm>>20)

	// The queue is empty: the key is gone, and popping it answers nil.
	for _, cmd := range [][]string{{"LLEN", key}, {"EXISTS", key}} {
		if r := c.Do(cmd...); r.Type != ':' || r.Int != 0 {
			t.Fatalf("%v after the drain = %s, want 0", cmd, r.String())
		}
	}
	for _, cmd := range [][]string{{"LPOP", key}, {"LPOP", key, "10"}, {"LRANGE", key, "0", "-1"}} {
		r := c.Do(cmd...)
		if cmd[0] == "LRANGE" && (r.Type != '*' || len(r.Elems) != 0) || cmd[0] == "LPOP" && !r.Null {
			t.Fatalf("%v after the drain = %s", cmd, r.String())
		}
	}
	if r := c.Do("TYPE", key); r.Str != "none" {
		t.Fatalf("TYPE %s after the drain = %s", key, r.String())
	}
	return res
}

// push sends RPUSH key with elements first..first+k-1.
func (q *queueClient) push(first, k int) {
	q.buf = append(q.buf[:0], '*')
	q.buf = strconv.AppendInt(q.buf, int64(2+k), 10)
	q.buf = append(q.buf, "\r\n$5\r\nRPUSH\r\n"...)
	q.buf = appendBulk(q.buf, []byte(q.key))
	for i := first; i < first+k; i++ {
		q.elem = queueElem(q.elem[:0], i)
		q.buf = appendBulk(q.buf, q.elem)
	}
	q.send(queueOp{kind: 'P', first: first, n: k, length: first + k})
}

// popCount sends LPOP key k, which must return elements first..first+want-1.
func (q *queueClient) popCount(first, k, want int) {
	q.buf = harness.EncodeCommand([]byte("LPOP"), []byte(q.key), strconv.AppendInt(nil, int64(k), 10))
	q.send(queueOp{kind: 'C', first: first, n: want})
}

// popOne sends LPOP key, which must return element first.
func (q *queueClient) popOne(first int) {
	q.buf = harness.EncodeCommand([]byte("LPOP"), []byte(q.key))
	q.send(queueOp{kind: 'O', first: first, n: 1})
}

// checkpoint sends LLEN and LINDEX of the head, middle and tail of a queue
// holding elements first..last.
func (q *queueClient) checkpoint(first, last int) {
	q.buf = harness.EncodeCommand([]byte("LLEN"), []byte(q.key))
	q.send(queueOp{kind: 'L', length: last - first + 1})
	for _, idx := range []int{0, (last - first) / 2, last - first, -1} {
		q.buf = harness.EncodeCommand([]byte("LINDEX"), []byte(q.key), strconv.AppendInt(nil, int64(idx), 10))
		want := first + idx
		if idx < 0 {
			want = last + 1 + idx
		}
		q.send(queueOp{kind: 'I', first: want, n: idx})
	}
}

// send writes the encoded command, first reading replies while queueWindow
// commands are in flight.
func (q *queueClient) send(op queueOp) {
	q.t.Helper()
	if time.Now().After(q.deadline) {
		q.t.Fatalf("queue workload still running at its time limit (%d commands sent)", q.total())
	}
	for len(q.inflight) >= queueWindow {
		q.readOne()
	}
	if err := q.c.WriteRaw(q.buf); err != nil {
		q.t.Fatal(err)
	}
	q.inflight = append(q.inflight, op)
	switch op.kind {
	case 'P':
		q.rpush++
		if op.n == 1 {
			q.singles++
		}
	case 'C':
		q.lpopCount++
	case 'O':
		q.lpopPlain++
	default:
		q.checks++
	}
}

// waitAll reads every reply still outstanding.
func (q *queueClient) waitAll() {
	for len(q.inflight) > 0 {
		q.readOne()
	}
}

// readOne reads and checks the reply of the oldest command in flight.
func (q *queueClient) readOne() {
	q.t.Helper()
	op := q.inflight[0]
	q.inflight = q.inflight[1:]
	r := q.c.Read()
	if r.Err != nil {
		q.t.Fatalf("queue %c command for elements from %d: %v", op.kind, op.first, r.Err)
	}
	bad := func(format string, args ...any) {
		q.t.Helper()
		q.t.Fatalf("%s (command %c, first element %d, n %d): reply %s",
			fmt.Sprintf(format, args...), op.kind, op.first, op.n, harness.Trunc(r.String(), 300))
	}
	switch op.kind {
	case 'P', 'L':
		if r.Type != ':' || r.Int != int64(op.length) {
			bad("want list length %d", op.length)
		}
	case 'C':
		if r.Type != '*' || r.Null || len(r.Elems) != op.n {
			bad("want %d elements", op.n)
		}
		for j, e := range r.Elems {
			q.elem = queueElem(q.elem[:0], op.first+j)
			if e.Type != '$' || e.Str != string(q.elem) {
				bad("element %d is %q, want %q", j, harness.Trunc(e.Str, 80), q.elem)
			}
		}
	case 'O', 'I':
		q.elem = queueElem(q.elem[:0], op.first)
		if r.Type != '$' || r.Null || r.Str != string(q.elem) {
			bad("want %q", q.elem)
		}
	}
}

func (q *queueClient) total() int { return q.rpush + q.lpopCount + q.lpopPlain + q.checks }

// appendBulk appends a RESP bulk string.
func appendBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}
