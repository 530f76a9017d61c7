package integration

// Ordering across connections, as Redis runs commands: one at a time, in
// the order their bytes reach it. A client that sends UNSUBSCRIBE on one
// connection, then PUBLISH on another, reaches nobody (Redis's own
// unit/pubsub tests rely on it); in Spillway the connections run in
// goroutines of their own, and PUBLISH waits for its subscribers' earlier
// input (cmd_pubsub.go, awaitSubscribers). Both servers run every case.

import (
	"strconv"
	"testing"
)

// TestPubSubPublishAfterUnsubscribe has a subscriber pipeline PINGs and
// an UNSUBSCRIBE (or PUNSUBSCRIBE, SUNSUBSCRIBE); once the first PING's
// reply is back, the whole pipeline has reached the server, and a PUBLISH
// from another connection, though it arrives while the subscriber still
// runs its PINGs, must count no subscriber. (Without the wait, Spillway
// counted the subscriber in most runs.)
func TestPubSubPublishAfterUnsubscribe(t *testing.T) {
	const pings = 1000 // 14 KB of commands: one read
	cases := []struct {
		name             string
		sub, unsub, pub  string
		channel, publish string
	}{
		{"channels", "SUBSCRIBE", "UNSUBSCRIBE", "PUBLISH", "chan1", "chan1"},
		{"patterns", "PSUBSCRIBE", "PUNSUBSCRIBE", "PUBLISH", "chan.*", "chan.hi"},
		{"shard", "SSUBSCRIBE", "SUNSUBSCRIBE", "SPUBLISH", "chan1", "chan1"},
	}
	for _, tg := range psTargets(t) {
		for _, tc := range cases {
			for _, proto := range []int{2, 3} {
				t.Run(tg.name+"/"+tc.name+"/resp"+strconv.Itoa(proto), func(t *testing.T) {
					pub := tg.srv.Conn(t)
					for round := range 10 {
						sub := tg.srv.Conn(t)
						if r := sub.Do("HELLO", strconv.Itoa(proto)); r.Type != '%' && r.Type != '*' {
							t.Fatalf("HELLO: %q", r.Raw)
						}
						if r := sub.Do(tc.sub, tc.channel); len(r.Elems) != 3 || r.Elems[2].Int != 1 {
							t.Fatalf("%s: %q", tc.sub, r.Raw)
						}
						for range pings {
							sub.Send("PING")
						}
						sub.Send(tc.unsub)
						if r := sub.Read(); r.Err != nil {
							t.Fatalf("first PING: %v", r.Err)
						}
						if r := pub.Do(tc.pub, tc.publish, "m"+strconv.Itoa(round)); r.Type != ':' || r.Int != 0 {
							t.Fatalf("round %d: %s after %s reached %q subscribers", round, tc.pub, tc.unsub, r.Raw)
						}
						sub.Close()
					}
				})
			}
		}
	}
}
