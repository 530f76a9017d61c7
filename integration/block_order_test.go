package integration

import (
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestServingPushWaitsForEarlierInput: a push that serves a blocked
// BRPOPLPUSH lets a command another client sent before it run first, as
// Redis's single thread does: here an EXEC watching the list the served
// pop pushes to, sent just before the LPUSH, must succeed. Repeated:
// without the ordering wait the LPUSH overtakes the EXEC now and then.
func TestServingPushWaitsForEarlierInput(t *testing.T) {
	srv := harness.StartSpillway(t, "")
	r := utDial(t, srv.Addr(), 10*time.Second)
	for i := range 20 {
		blocked := utDial(t, srv.Addr(), 10*time.Second)
		watching := utDial(t, srv.Addr(), 10*time.Second)
		r.Do("DEL", "bw:src", "bw:dst", "bw:some")
		r.Do("SET", "bw:some", "somevalue")
		if err := blocked.Send("BRPOPLPUSH", "bw:src", "bw:dst", "0"); err != nil {
			t.Fatal(err)
		}
		if err := blocked.Flush(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			if n, err := utInfoInt(r, "clients", "blocked_clients"); err == nil && n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the BRPOPLPUSH never blocked")
			}
		}
		watching.Do("WATCH", "bw:dst")
		watching.Do("MULTI")
		watching.Do("GET", "bw:some")
		if err := watching.Send("EXEC"); err != nil {
			t.Fatal(err)
		}
		if err := watching.Flush(); err != nil {
			t.Fatal(err)
		}
		r.Do("LPUSH", "bw:src", "element")
		if got := watching.Read(); len(got.Elems) != 1 || got.Elems[0].Str != "somevalue" {
			t.Fatalf("round %d: EXEC = %s; want [somevalue] (the EXEC was sent before the LPUSH that touched the watched key)", i, got.String())
		}
		if got := blocked.Read(); got.Str != "element" {
			t.Fatalf("round %d: BRPOPLPUSH = %s", i, got.String())
		}
		blocked.Close()
		watching.Close()
	}
}
