package integration

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// badCase is raw client input and the exact bytes Redis 7.0 answers with.
// When closes is set the server must close the connection after want;
// otherwise a PING is appended to the input and its reply (+PONG, or NOAUTH
// before authentication) to want, which proves the connection is still
// served.
type badCase struct {
	name   string
	input  string
	want   string
	closes bool
	// sentinel overrides the expected reply to the appended PING.
	sentinel string
	// chunk > 0 writes the input in pieces of that many bytes, 1 ms apart,
	// to exercise a parser resuming on partial input.
	chunk int
}

const (
	errMbulk = "-ERR Protocol error: invalid multibulk length\r\n"
	errBulk  = "-ERR Protocol error: invalid bulk length\r\n"
	errQuote = "-ERR Protocol error: unbalanced quotes in request\r\n"
	pingCmd  = "*1\r\n$4\r\nPING\r\n"
	pong     = "+PONG\r\n"
	noAuth   = "-NOAUTH Authentication required.\r\n"
)

var badCases = []badCase{
	// Malformed multibulk headers.
	{name: "mbulk-not-a-number", input: "*abc\r\n", want: errMbulk, closes: true},
	{name: "mbulk-empty", input: "*\r\n", want: errMbulk, closes: true},
	{name: "mbulk-space", input: "*1 \r\n$4\r\nPING\r\n", want: errMbulk, closes: true},
	{name: "mbulk-plus-sign", input: "*+1\r\n$4\r\nPING\r\n", want: errMbulk, closes: true},
	{name: "mbulk-leading-zero", input: "*01\r\n$4\r\nPING\r\n", want: errMbulk, closes: true},
	{name: "mbulk-lf-only", input: "*1\n$4\r\nPING\r\n", want: errMbulk, closes: true},
	{name: "mbulk-over-int-max", input: "*2147483648\r\n", want: errMbulk, closes: true},
	{name: "mbulk-huge", input: "*999999999999999999999999999999\r\n", want: errMbulk, closes: true},
	{name: "mbulk-count-line-too-long", input: "*" + strings.Repeat("1", 70000),
		want: "-ERR Protocol error: too big mbulk count string\r\n", closes: true},
	// Malformed bulk headers.
	{name: "bulk-negative", input: "*1\r\n$-5\r\n", want: errBulk, closes: true},
	{name: "bulk-minus-one", input: "*1\r\n$-1\r\n", want: errBulk, closes: true},
	{name: "bulk-not-a-number", input: "*1\r\n$abc\r\n", want: errBulk, closes: true},
	{name: "bulk-empty", input: "*1\r\n$\r\n", want: errBulk, closes: true},
	{name: "bulk-over-512mb", input: "*1\r\n$536870913\r\n", want: errBulk, closes: true},
	{name: "bulk-huge", input: "*1\r\n$111111111111111111111111111111\r\n", want: errBulk, closes: true},
	{name: "bulk-count-line-too-long", input: "*1\r\n$" + strings.Repeat("1", 70000),
		want: "-ERR Protocol error: too big bulk count string\r\n", closes: true},
	{name: "expected-dollar-x", input: "*1\r\nx3\r\nfoo\r\n",
		want: "-ERR Protocol error: expected '$', got 'x'\r\n", closes: true},
	{name: "expected-dollar-colon", input: "*2\r\n$3\r\nget\r\n:1\r\n",
		want: "-ERR Protocol error: expected '$', got ':'\r\n", closes: true},
	{name: "error-after-good-command", input: "*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n",
		want: pong + errBulk, closes: true},
	// Inline commands.
	{name: "inline-unbalanced-single", input: "set 'a b\r\n", want: errQuote, closes: true},
	{name: "inline-unbalanced-double", input: "set \"a b\r\n", want: errQuote, closes: true},
	{name: "inline-quote-then-text", input: "set \"a\"b c\r\n", want: errQuote, closes: true},
	{name: "inline-single-quote-then-text", input: "set 'a'b c\r\n", want: errQuote, closes: true},
	{name: "inline-too-big", input: strings.Repeat("x", 70000),
		want: "-ERR Protocol error: too big inline request\r\n", closes: true},
	{name: "inline-ping", input: "PING\r\n", want: pong},
	{name: "inline-lf-only", input: "ping\n", want: pong},
	{name: "inline-blank-line", input: "\r\n", want: ""},
	{name: "inline-spaces", input: "   \r\n", want: ""},
	{name: "inline-arity", input: "GET\r\n", want: "-ERR wrong number of arguments for 'get' command\r\n"},
	{name: "inline-quotes-and-escapes", input: "set \"\\x41\\n\" 'b c'\r\nget \"A\\n\"\r\nECHO \"\"\r\n",
		want: "+OK\r\n$3\r\nb c\r\n$0\r\n\r\n"},
	{name: "inline-big-arg", input: "ECHO " + strings.Repeat("y", 60000) + "\r\n",
		want: "$60000\r\n" + strings.Repeat("y", 60000) + "\r\n"},
	{name: "inline-looks-like-bulk", input: "$3\r\nfoo\r\n",
		want: "-ERR unknown command '$3', with args beginning with: \r\n-ERR unknown command 'foo', with args beginning with: \r\n"},
	{name: "inline-looks-like-int", input: ":1\r\n", want: "-ERR unknown command ':1', with args beginning with: \r\n"},
	// Valid but unusual multibulk requests.
	{name: "mbulk-zero", input: "*0\r\n", want: ""},
	{name: "mbulk-minus-one", input: "*-1\r\n", want: ""},
	{name: "mbulk-negative", input: "*-5\r\n", want: ""},
	{name: "empty-command-name", input: "*1\r\n$0\r\n\r\n", want: "-ERR unknown command '', with args beginning with: \r\n"},
	{name: "mixed-inline-and-mbulk", input: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n",
		want: "+OK\r\n$1\r\nv\r\n:1\r\n"},
	{name: "fragmented", chunk: 1, input: "*3\r\n$3\r\nSET\r\n$2\r\nfr\r\n$5\r\nhello\r\nGET fr\r\n*2\r\n$3\r\nDEL\r\n$2\r\nfr\r\n",
		want: "+OK\r\n$5\r\nhello\r\n:1\r\n"},
	{name: "binary-arg", input: "*3\r\n$3\r\nSET\r\n$2\r\nbk\r\n$4\r\n\r\n\x00\xff\r\n*2\r\n$6\r\nGETDEL\r\n$2\r\nbk\r\n",
		want: "+OK\r\n$4\r\n\r\n\x00\xff\r\n"},
}

// unauthCases run against a server with a password, before AUTH.
var unauthCases = []badCase{
	{name: "unauth-mbulk-over-10", input: "*11\r\n",
		want: "-ERR Protocol error: unauthenticated multibulk length\r\n", closes: true},
	{name: "unauth-bulk-over-16k", input: "*10\r\n$16385\r\n",
		want: "-ERR Protocol error: unauthenticated bulk length\r\n", closes: true},
	{name: "unauth-ping", input: "PING\r\n", want: noAuth},
	{name: "unauth-get", input: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", want: noAuth},
	{name: "unauth-unknown", input: "FOO\r\n", want: "-ERR unknown command 'FOO', with args beginning with: \r\n"},
	{name: "auth-arity", input: "AUTH\r\n", want: "-ERR wrong number of arguments for 'auth' command\r\n"},
	{name: "auth-wrong", input: "AUTH x\r\n", want: "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
	{name: "auth-right", input: "AUTH sec\r\nPING\r\n", want: "+OK\r\n+PONG\r\n", sentinel: pong},
}

// TestBadInputRedis pins the table against a real redis-server: if Redis
// answers differently the table, not Spillway, is wrong.
func TestBadInputRedis(t *testing.T) {
	srv := harness.StartRedis(t)
	runBadCases(t, srv.Addr(), "", pong, badCases)
	auth := harness.StartRedis(t, "--requirepass", "sec")
	runBadCases(t, auth.Addr(), "sec", noAuth, unauthCases)
}

// TestBadInputSpillway sends the same bad input to Spillway, which must
// answer with Redis's exact bytes and keep serving other clients.
func TestBadInputSpillway(t *testing.T) {
	srv := harness.StartSpillway(t, "", spillwayDiffArgs...)
	runBadCases(t, srv.Addr(), "", pong, badCases)
	auth := harness.StartSpillway(t, "", append(spillwayDiffArgs, "--requirepass", "sec")...)
	runBadCases(t, auth.Addr(), "sec", noAuth, unauthCases)
}

// runBadCases runs each case on its own connection while a second,
// well-behaved client checks after every case that the server still serves.
// sentinel is the expected reply to the PING appended to cases that keep the
// connection open.
func runBadCases(t *testing.T, addr, password, sentinel string, cases []badCase) {
	watch := harness.MustDial(t, addr)
	if password != "" {
		if r := watch.Do("AUTH", password); r.Str != "OK" {
			t.Fatalf("AUTH: %s", r.String())
		}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.MustDial(t, addr)
			input, want := tc.input, tc.want
			if !tc.closes {
				input += pingCmd
				if tc.sentinel != "" {
					want += tc.sentinel
				} else {
					want += sentinel
				}
			}
			if err := writeChunked(c, []byte(input), tc.chunk); err != nil && !tc.closes {
				t.Fatalf("write: %v", err)
			}
			var got []byte
			var closed bool
			if tc.closes {
				got, closed = c.ReadAll(5 * time.Second)
			} else {
				got, closed = readN(c, len(want), 5*time.Second)
			}
			if !bytes.Equal(got, []byte(want)) {
				t.Errorf("input %s\ngot  %s\nwant %s", fmtRaw([]byte(input)), fmtRaw(got), fmtRaw([]byte(want)))
			}
			if tc.closes && !closed {
				t.Errorf("input %s: connection still open after the error reply", fmtRaw([]byte(input)))
			}
			if !tc.closes && closed {
				t.Errorf("input %s: connection closed, want it kept open", fmtRaw([]byte(input)))
			}
		})
		// The other client is unaffected.
		val := "v" + strconv.Itoa(i)
		if r := watch.Do("SET", "watch", val); r.Str != "OK" {
			t.Fatalf("after case %s: second client SET: %s", tc.name, r.String())
		}
		if r := watch.Do("GET", "watch"); r.Str != val {
			t.Fatalf("after case %s: second client GET: %s", tc.name, r.String())
		}
	}
}

func writeChunked(c *harness.Conn, b []byte, chunk int) error {
	if chunk <= 0 {
		return c.WriteRaw(b)
	}
	for len(b) > 0 {
		n := min(chunk, len(b))
		if err := c.WriteRaw(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		time.Sleep(time.Millisecond)
	}
	return nil
}

// readN reads until n bytes arrived, the peer closed, or timeout passed.
func readN(c *harness.Conn, n int, timeout time.Duration) ([]byte, bool) {
	var got []byte
	deadline := time.Now().Add(timeout)
	for len(got) < n && time.Now().Before(deadline) {
		data, closed := c.ReadAll(5 * time.Millisecond)
		got = append(got, data...)
		if closed {
			return got, true
		}
	}
	return got, false
}

// TestHugeArgCountsRedis and TestHugeArgCountsSpillway send commands with
// 100000 arguments and a 1 MB argument; both servers must answer them
// correctly.
func TestHugeArgCountsRedis(t *testing.T) {
	runHugeArgs(t, harness.StartRedis(t).Addr())
}

func TestHugeArgCountsSpillway(t *testing.T) {
	runHugeArgs(t, harness.StartSpillway(t, "", spillwayDiffArgs...).Addr())
}

func runHugeArgs(t *testing.T, addr string) {
	c := harness.MustDial(t, addr)
	c.Timeout = 60 * time.Second
	const pairs = 50000
	mset := []string{"MSET"}
	keys := []string{"DEL"}
	for i := 0; i < pairs; i++ {
		k := "h:" + strconv.Itoa(i)
		mset = append(mset, k, strconv.Itoa(i*7))
		keys = append(keys, k, "missing:"+strconv.Itoa(i))
	}
	if r := c.Do(mset...); r.Str != "OK" {
		t.Fatalf("MSET with %d args: %s", len(mset), r.String())
	}
	if r := c.Do("DBSIZE"); r.Type != ':' || r.Int != pairs {
		t.Fatalf("DBSIZE after MSET: %s, want %d", r.String(), pairs)
	}
	mget := append([]string{"MGET"}, keys[1:]...)
	r := c.Do(mget...)
	if r.Type != '*' || len(r.Elems) != 2*pairs {
		t.Fatalf("MGET with %d keys: got type %q with %d elements", 2*pairs, r.Type, len(r.Elems))
	}
	for i := 0; i < pairs; i++ {
		if got, want := r.Elems[2*i].Str, strconv.Itoa(i*7); got != want {
			t.Fatalf("MGET element %d = %q, want %q", 2*i, got, want)
		}
		if !r.Elems[2*i+1].Null {
			t.Fatalf("MGET element %d = %s, want nil", 2*i+1, r.Elems[2*i+1].String())
		}
	}
	if r := c.Do(keys...); r.Type != ':' || r.Int != pairs {
		t.Fatalf("DEL with %d keys: %s, want %d", len(keys)-1, r.String(), pairs)
	}
	if r := c.Do("DBSIZE"); r.Int != 0 {
		t.Fatalf("DBSIZE after DEL: %s", r.String())
	}
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MB
	if r := c.Do("SET", "bigval", big); r.Str != "OK" {
		t.Fatalf("SET 1 MB: %s", r.String())
	}
	if r := c.Do("GET", "bigval"); r.Str != big {
		t.Fatalf("GET 1 MB: got %d bytes, want %d", len(r.Str), len(big))
	}
	if r := c.Do("STRLEN", "bigval"); r.Int != int64(len(big)) {
		t.Fatalf("STRLEN: %s", r.String())
	}
}

// TestWrongArityRedis and TestWrongAritySpillway send every string and
// keyspace command with each argument count its arity rejects (pipelined)
// and expect Redis's arity error for each.
func TestWrongArityRedis(t *testing.T) {
	runWrongArity(t, harness.StartRedis(t).Addr())
}

func TestWrongAritySpillway(t *testing.T) {
	runWrongArity(t, harness.StartSpillway(t, "", spillwayDiffArgs...).Addr())
}

func runWrongArity(t *testing.T, addr string) {
	c := harness.MustDial(t, addr)
	type sent struct {
		args []string
		want string
	}
	var all []sent
	for _, name := range arityNames {
		a := arity[name]
		var counts []int // total words, name included
		if a > 0 {
			for n := 1; n <= a+2; n++ {
				if n != a {
					counts = append(counts, n)
				}
			}
		} else {
			for n := 1; n < -a; n++ {
				counts = append(counts, n)
			}
		}
		for _, n := range counts {
			args := []string{name}
			if n%2 == 0 {
				args[0] = strings.ToUpper(name)
			}
			for len(args) < n {
				args = append(args, "arg"+strconv.Itoa(len(args)))
			}
			all = append(all, sent{args, fmt.Sprintf("-ERR wrong number of arguments for '%s' command\r\n", name)})
		}
	}
	for _, s := range all {
		if err := c.Send(s.args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range all {
		r := c.Read()
		if r.Err != nil {
			t.Fatalf("%s: %v", fmtArgs(s.args), r.Err)
		}
		if string(r.Raw) != s.want {
			t.Errorf("%s: got %s, want %s", fmtArgs(s.args), fmtRaw(r.Raw), fmtRaw([]byte(s.want)))
		}
	}
	if len(all) < 60 {
		t.Fatalf("only %d wrong-arity commands generated", len(all))
	}
	if r := c.Do("DBSIZE"); r.Int != 0 {
		t.Errorf("wrong-arity commands changed the keyspace: DBSIZE %s", r.String())
	}
}
