package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spillway/spillway/integration/harness"
)

// Pub/Sub tests of subscribers' connections (see pubsub_test.go for the
// exchanges compared byte for byte): disconnects, many subscribers,
// go-redis's PubSub client, a slow subscriber cut at
// client-output-buffer-limit, RESP3 commands interleaved with pushes, and
// the idle timeout.

// TestPubSubDisconnect: a subscriber that closes its connection, or sends
// QUIT, leaves every channel, pattern and shard channel (asynchronously,
// on both servers).
func TestPubSubDisconnect(t *testing.T) {
	for _, tg := range psTargets(t) {
		for _, how := range []string{"close", "quit"} {
			t.Run(tg.name+"/"+how, func(t *testing.T) {
				psDisconnect(t, tg.srv, how == "quit")
			})
		}
	}
}

func psDisconnect(t *testing.T, srv *harness.Server, quit bool) {
	sub := srv.Conn(t)
	for _, cmd := range [][]string{{"SUBSCRIBE", "dc1", "dc2"}, {"PSUBSCRIBE", "dc*"}, {"SSUBSCRIBE", "dc1"}} {
		if _, err := psExchange(sub, [][]string{cmd}, "t"); err != nil {
			t.Fatal(err)
		}
	}
	obs := srv.Conn(t)
	if r := obs.Do("PUBLISH", "dc1", "x"); r.Int != 2 {
		t.Fatalf("PUBLISH before disconnect = %s, want 2", r.String())
	}
	if quit {
		frames, err := psExchange(sub, [][]string{{"QUIT"}}, "t")
		if len(frames) < 3 || string(frames[2].Raw) != "+OK\r\n" || err == nil {
			t.Fatalf("QUIT: frames %s, err %v; want two messages, +OK, then the connection closed", psDump(frames), err)
		}
	} else {
		sub.Close()
	}
	deadline := time.Now().Add(psWait)
	for {
		n := obs.Do("PUBLISH", "dc1", "x").Int + obs.Do("SPUBLISH", "dc1", "x").Int +
			obs.Do("PUBSUB", "NUMPAT").Int
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions left %v after the subscriber closed", psWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	clients, info := psIntrospect(t, obs)
	if len(clients) != 0 || info != "pubsub_channels=0 pubsub_patterns=0 pubsubshard_channels=0" {
		t.Errorf("after disconnect: clients %q, %s", clients, info)
	}
}

// TestPubSubManySubscribers: 200 subscribers (RESP2 and RESP3) on channels,
// patterns and shard channels, the same publishes on both servers; every
// PUBLISH reply and every subscriber's messages compared, and counted
// against a model.
func TestPubSubManySubscribers(t *testing.T) {
	const (
		nSubs     = 200
		nChannels = 10
		nRounds   = 15
	)
	type result struct {
		replies []int64
		frames  [][]harness.Reply
	}
	want := make([]int, nSubs) // frames each subscriber should receive
	for k := 0; k < nRounds; k++ {
		for c := 0; c < nChannels; c++ {
			for i := 0; i < nSubs; i++ {
				if i%nChannels == c {
					want[i]++
				}
				if i%3 == 0 {
					want[i]++
				}
				if i%5 == 0 && c <= 4 {
					want[i]++
				}
			}
		}
		for i := 0; i < nSubs; i++ {
			if i%7 == 0 && i%nChannels == k%nChannels {
				want[i]++
			}
		}
	}
	run := func(t *testing.T, srv *harness.Server) result {
		subs := make([]*harness.Conn, nSubs)
		for i := range subs {
			c := srv.Conn(t)
			subs[i] = c
			cmds := [][]string{{"SUBSCRIBE", fmt.Sprintf("m:ch%d", i%nChannels)}}
			if i%2 == 1 {
				cmds = append([][]string{{"HELLO", "3"}}, cmds...)
			}
			if i%3 == 0 {
				cmds = append(cmds, []string{"PSUBSCRIBE", "m:ch*"})
			}
			if i%5 == 0 {
				cmds = append(cmds, []string{"PSUBSCRIBE", "m:ch[0-4]"})
			}
			if i%7 == 0 {
				cmds = append(cmds, []string{"SSUBSCRIBE", fmt.Sprintf("m:ch%d", i%nChannels)})
			}
			if _, err := psExchange(c, cmds, "ready"); err != nil {
				t.Fatalf("subscriber %d: %v", i, err)
			}
		}
		res := result{frames: make([][]harness.Reply, nSubs)}
		var wg sync.WaitGroup
		errs := make(chan error, nSubs)
		for i, c := range subs {
			wg.Add(1)
			go func(i int, c *harness.Conn) {
				defer wg.Done()
				for len(res.frames[i]) < want[i] {
					r := c.Read()
					if r.Err != nil {
						errs <- fmt.Errorf("subscriber %d after %d of %d messages: %v", i, len(res.frames[i]), want[i], r.Err)
						return
					}
					res.frames[i] = append(res.frames[i], r)
				}
			}(i, c)
		}
		pub := srv.Conn(t)
		for k := 0; k < nRounds; k++ {
			for c := 0; c < nChannels; c++ {
				pub.Send("PUBLISH", fmt.Sprintf("m:ch%d", c), fmt.Sprintf("r%d-c%d", k, c))
			}
			pub.Send("SPUBLISH", fmt.Sprintf("m:ch%d", k%nChannels), fmt.Sprintf("shard-r%d", k))
			for c := 0; c <= nChannels; c++ {
				r := pub.Read()
				if r.Type != ':' {
					t.Fatalf("publish reply %s", r.String())
				}
				res.replies = append(res.replies, r.Int)
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Nothing more arrived than the model says.
		for i, c := range subs {
			extra, err := psExchange(c, nil, "end")
			if err != nil || len(extra) != 1 {
				t.Fatalf("subscriber %d: %d extra frames (%v)", i, len(extra)-1, err)
			}
		}
		return res
	}
	var results []result
	for _, tg := range psTargets(t) {
		results = append(results, run(t, tg.srv))
	}
	rd, sp := results[0], results[1]
	if fmt.Sprint(rd.replies) != fmt.Sprint(sp.replies) {
		t.Errorf("PUBLISH replies differ\nredis:    %v\nspillway: %v", rd.replies, sp.replies)
	}
	for i := 0; i < nSubs; i++ {
		a, b := psNormalize(rd.frames[i], false, false), psNormalize(sp.frames[i], false, false)
		if strings.Join(a, "") != strings.Join(b, "") {
			t.Errorf("subscriber %d: messages differ\nredis:\n%s\nspillway:\n%s", i, psDump(rd.frames[i]), psDump(sp.frames[i]))
			break
		}
	}
}

// TestPubSubGoRedis: go-redis's PubSub client, RESP2 and RESP3.
func TestPubSubGoRedis(t *testing.T) {
	for _, tg := range psTargets(t) {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", tg.name, proto), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), psWait)
				defer cancel()
				cl := harness.GoRedis(t, tg.srv.Addr(), proto)
				ch := fmt.Sprintf("gr%d:news", proto)
				sub := cl.Subscribe(ctx, ch)
				defer sub.Close()
				if m, err := sub.Receive(ctx); err != nil || fmt.Sprint(m) != fmt.Sprint(&redis.Subscription{Kind: "subscribe", Channel: ch, Count: 1}) {
					t.Fatalf("Receive = %v, %v", m, err)
				}
				if err := sub.PSubscribe(ctx, fmt.Sprintf("gr%d:*", proto)); err != nil {
					t.Fatal(err)
				}
				if m, err := sub.Receive(ctx); err != nil || fmt.Sprint(m) != fmt.Sprint(&redis.Subscription{Kind: "psubscribe", Channel: fmt.Sprintf("gr%d:*", proto), Count: 2}) {
					t.Fatalf("Receive = %v, %v", m, err)
				}
				ssub := cl.SSubscribe(ctx, ch)
				defer ssub.Close()
				if _, err := ssub.Receive(ctx); err != nil {
					t.Fatal(err)
				}
				if n, err := cl.Publish(ctx, ch, "hello").Result(); err != nil || n != 2 {
					t.Fatalf("PUBLISH = %d, %v", n, err)
				}
				if n, err := cl.SPublish(ctx, ch, "shard").Result(); err != nil || n != 1 {
					t.Fatalf("SPUBLISH = %d, %v", n, err)
				}
				msgs := sub.Channel()
				got := map[string]bool{}
				for i := 0; i < 2; i++ {
					select {
					case m := <-msgs:
						got[m.Pattern+"|"+m.Channel+"|"+m.Payload] = true
					case <-ctx.Done():
						t.Fatalf("only %d messages: %v", i, got)
					}
				}
				if !got["|"+ch+"|hello"] || !got[fmt.Sprintf("gr%d:*", proto)+"|"+ch+"|hello"] {
					t.Errorf("messages %v", got)
				}
				if m, err := ssub.ReceiveMessage(ctx); err != nil || m.Channel != ch || m.Payload != "shard" {
					t.Errorf("shard message %v, %v", m, err)
				}
				if v, err := cl.PubSubNumSub(ctx, ch, "none").Result(); err != nil || v[ch] != 1 || v["none"] != 0 {
					t.Errorf("PUBSUB NUMSUB = %v, %v", v, err)
				}
				if v, err := cl.PubSubNumPat(ctx).Result(); err != nil || v != 1 {
					t.Errorf("PUBSUB NUMPAT = %v, %v", v, err)
				}
				if v, err := cl.PubSubChannels(ctx, fmt.Sprintf("gr%d:*", proto)).Result(); err != nil || fmt.Sprint(v) != fmt.Sprint([]string{ch}) {
					t.Errorf("PUBSUB CHANNELS = %v, %v", v, err)
				}
				if v, err := cl.PubSubShardNumSub(ctx, ch).Result(); err != nil || v[ch] != 1 {
					t.Errorf("PUBSUB SHARDNUMSUB = %v, %v", v, err)
				}
				// A burst arrives complete and in order.
				const burst = 200
				for i := 0; i < burst; i++ {
					if err := cl.Publish(ctx, ch, strconv.Itoa(i)).Err(); err != nil {
						t.Fatal(err)
					}
				}
				next := map[string]int{}
				for i := 0; i < 2*burst; i++ {
					select {
					case m := <-msgs:
						if want := strconv.Itoa(next[m.Pattern]); m.Payload != want {
							t.Fatalf("pattern %q: got %q, want %q", m.Pattern, m.Payload, want)
						}
						next[m.Pattern]++
					case <-ctx.Done():
						t.Fatalf("burst: %d of %d messages", i, 2*burst)
					}
				}
				if err := sub.Unsubscribe(ctx, ch); err != nil {
					t.Fatal(err)
				}
				if err := sub.PUnsubscribe(ctx); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(psWait)
				for cl.PubSubNumSub(ctx, ch).Val()[ch] != 0 || cl.PubSubNumPat(ctx).Val() != 0 {
					if time.Now().After(deadline) {
						t.Fatal("still subscribed after Unsubscribe and PUnsubscribe")
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
}

// dialSmallRcvBuf connects to addr with a tiny receive buffer, so that a
// client that stops reading backs up into the server quickly.
func dialSmallRcvBuf(t *testing.T, addr string) *harness.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.NewConn(nc)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPubSubSlowSubscriber: a subscriber that stops reading is disconnected
// once its output passes client-output-buffer-limit's pubsub class, while
// the publisher's PUBLISHes keep being answered promptly and a subscriber
// that reads gets every message.
func TestPubSubSlowSubscriber(t *testing.T) {
	const (
		msgSize  = 32 << 10
		maxMsgs  = 2000 // 64 MB: far past any socket buffers plus 1 MB
		afterGap = 20   // messages published after the disconnect
		promptly = 2 * time.Second
	)
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			admin := tg.srv.Conn(t)
			if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 1"); r.Str != "OK" {
				t.Fatalf("CONFIG SET: %s", r.String())
			}
			slow := dialSmallRcvBuf(t, tg.srv.Addr())
			if _, err := psExchange(slow, [][]string{{"SUBSCRIBE", "slow:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			good := tg.srv.Conn(t)
			if _, err := psExchange(good, [][]string{{"SUBSCRIBE", "slow:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			// The good subscriber reads in the background until "end".
			type goodResult struct {
				n   int
				err error
			}
			done := make(chan goodResult, 1)
			go func() {
				n := 0
				for {
					r := good.Read()
					if r.Err != nil {
						done <- goodResult{n, r.Err}
						return
					}
					if frameKind(r) != "message" {
						done <- goodResult{n, fmt.Errorf("unexpected frame %q", harness.Trunc(string(r.Raw), 80))}
						return
					}
					p := r.Elems[2].Str
					if p == "end" {
						done <- goodResult{n, nil}
						return
					}
					if want := fmt.Sprintf("%06d", n); !strings.HasPrefix(p, want) {
						done <- goodResult{n, fmt.Errorf("message %d starts %q", n, harness.Trunc(p, 10))}
						return
					}
					n++
				}
			}()
			pub := tg.srv.Conn(t)
			pad := strings.Repeat("x", msgSize-6)
			published, disconnectedAt := 0, -1
			var slowest time.Duration
			for published < maxMsgs && (disconnectedAt < 0 || published < disconnectedAt+afterGap) {
				start := time.Now()
				r := pub.Do("PUBLISH", "slow:ch", fmt.Sprintf("%06d", published)+pad)
				slowest = max(slowest, time.Since(start))
				published++
				if r.Type != ':' {
					t.Fatalf("PUBLISH: %s", r.String())
				}
				if r.Int == 1 && disconnectedAt < 0 {
					disconnectedAt = published
				}
			}
			if r := pub.Do("PUBLISH", "slow:ch", "end"); r.Int != 1 {
				t.Errorf("final PUBLISH = %s, want 1 receiver", r.String())
			}
			if disconnectedAt < 0 {
				t.Fatalf("the slow subscriber was never disconnected (%d messages of %d bytes)", published, msgSize)
			}
			t.Logf("slow subscriber dropped after %d messages (%d MB); slowest PUBLISH %v",
				disconnectedAt, disconnectedAt*msgSize>>20, slowest)
			if slowest > promptly {
				t.Errorf("a PUBLISH took %v (want < %v): publishers wait for a slow subscriber", slowest, promptly)
			}
			select {
			case res := <-done:
				if res.err != nil || res.n != published {
					t.Errorf("the reading subscriber got %d of %d messages (%v)", res.n, published, res.err)
				}
			case <-time.After(psWait):
				t.Fatal("the reading subscriber did not finish")
			}
			if _, closed := slow.ReadAll(3 * time.Second); !closed {
				t.Error("the slow subscriber's connection was not closed")
			}
			if tg.name == "spillway" {
				log, _ := os.ReadFile(tg.srv.LogPath())
				if !bytes.Contains(log, []byte("output buffer limits")) {
					t.Errorf("no log line about the output buffer limit in:\n%s", harness.Trunc(string(log), 2000))
				}
			}
		})
	}
}

// TestPubSubRESP3Interleaved: a RESP3 subscriber runs SET and GET while
// messages are pushed to it; every reply is the right one and every
// message arrives, in order.
func TestPubSubRESP3Interleaved(t *testing.T) {
	const n = 300
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c := tg.srv.Conn(t)
			if r := c.Do("HELLO", "3"); r.Type != '%' {
				t.Fatalf("HELLO 3: %s", r.String())
			}
			if _, err := psExchange(c, [][]string{{"SUBSCRIBE", "il:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			pubErr := make(chan error, 1)
			go func() {
				pub, err := harness.Dial(tg.srv.Addr())
				if err != nil {
					pubErr <- err
					return
				}
				defer pub.Close()
				for i := 0; i < n; i++ {
					if r := pub.Do("PUBLISH", "il:ch", strconv.Itoa(i)); r.Int != 1 {
						pubErr <- fmt.Errorf("PUBLISH %d: %s", i, r.String())
						return
					}
				}
				pubErr <- nil
			}()
			var got []string
			// reply reads frames until a non-push one: the command's reply.
			reply := func() harness.Reply {
				for {
					r := c.Read()
					if r.Err != nil {
						t.Fatal(r.Err)
					}
					if r.Type != '>' {
						return r
					}
					if frameKind(r) != "message" || r.Elems[1].Str != "il:ch" {
						t.Fatalf("unexpected push %q", r.Raw)
					}
					got = append(got, r.Elems[2].Str)
				}
			}
			for i := 0; i < n; i++ {
				v := "v" + strconv.Itoa(i)
				c.Send("SET", "il:k", v)
				if r := reply(); r.Str != "OK" {
					t.Fatalf("SET: %s", r.String())
				}
				c.Send("GET", "il:k")
				if r := reply(); r.Type != '$' || r.Str != v {
					t.Fatalf("GET = %s, want %q", r.String(), v)
				}
			}
			if err := <-pubErr; err != nil {
				t.Fatal(err)
			}
			c.Send("PING", "end")
			if r := reply(); r.Str != "end" {
				t.Fatalf("PING: %s", r.String())
			}
			if len(got) != n {
				t.Fatalf("%d of %d messages", len(got), n)
			}
			for i, m := range got {
				if m != strconv.Itoa(i) {
					t.Fatalf("message %d is %q", i, m)
				}
			}
			c.Do("DEL", "il:k")
		})
	}
}

// TestPubSubIdleTimeout: `timeout` closes idle clients but not
// subscribers, as in Redis.
func TestPubSubIdleTimeout(t *testing.T) {
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if r := tg.srv.Conn(t).Do("CONFIG", "SET", "timeout", "1"); r.Str != "OK" {
				t.Fatalf("CONFIG SET timeout: %s", r.String())
			}
			defer func() { tg.srv.Conn(t).Do("CONFIG", "SET", "timeout", "0") }()
			sub := tg.srv.Conn(t)
			if _, err := psExchange(sub, [][]string{{"SUBSCRIBE", "idle:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			idle := tg.srv.Conn(t)
			idle.Do("PING")
			time.Sleep(2500 * time.Millisecond)
			if _, closed := idle.ReadAll(500 * time.Millisecond); !closed {
				t.Error("an idle normal client was not closed")
			}
			if r := tg.srv.Conn(t).Do("PUBLISH", "idle:ch", "still-here"); r.Int != 1 {
				t.Fatalf("PUBLISH = %s: the idle subscriber was closed", r.String())
			}
			sub.Timeout = psWait
			if r := sub.Read(); frameKind(r) != "message" || r.Elems[2].Str != "still-here" {
				t.Fatalf("subscriber read %s", r.String())
			}
		})
	}
}
