package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/repl"
)

func respCmds(cmds ...[]string) []byte {
	var b []byte
	for _, c := range cmds {
		b = fmt.Appendf(b, "*%d\r\n", len(c))
		for _, a := range c {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return b
}

// TestRelayStreamFilters: what the relay feeds Spillway's replicas from
// the upstream's stream: the demoter's marked UNLINKs left out (a MULTI
// block left with nothing dropped whole), an announced RESTORE left out
// once, the upstream's PINGs and SELECTs replaced by the relay's own
// SELECTs, local changes put where their ordering PUBLISH comes back,
// everything else byte for byte; the upstream offset counts every byte.
func TestRelayStreamFilters(t *testing.T) {
	m := repl.New(repl.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Setting: func(string) string { return "" }})
	defer m.Close()
	m.SetProxy(true)
	m.Adopt("", 0)
	r := &relay{restores: map[restoreKey]int{{3, "k"}: 1}, kick: make(chan struct{}, 1), running: true, gen: 1}
	r.cond = sync.NewCond(&r.mu)
	r.active.Store(true)
	r.addLocal(0, []byte("DEL"), []byte("cold"))
	r.addLocal(0, []byte("PEXPIREAT"), []byte("later"), []byte("99"))

	in := respCmds(
		[]string{"SELECT", "3"}, []string{"SET", "a", "1"},
		[]string{"MULTI"}, []string{"UNLINK", "k1", "k2", relayMarker}, []string{"EXEC"},
		[]string{"RESTORE", "k", "0", "payload"},
		[]string{"RESTORE", "k", "0", "payload"},
		[]string{"MULTI"}, []string{"SET", "b", "2"}, []string{"UNLINK", "k3", relayMarker}, []string{"EXEC"},
		[]string{"PING"},
		[]string{"SELECT", "0"}, []string{"PUBLISH", relayChannel, "1"},
		[]string{"UNLINK", "x", relayMarker + "x"},
		[]string{"SELECT", "5"}, []string{"PUBLISH", relayChannel, "2"},
	)
	s := &relayStream{r: r, gen: 1, br: bufio.NewReader(bytes.NewReader(in)), edb: -1, m: m}
	if err := s.run(); err != io.EOF {
		t.Fatalf("run: %v, want io.EOF at the end of the input", err)
	}
	want := respCmds(
		[]string{"SELECT", "3"}, []string{"SET", "a", "1"},
		[]string{"RESTORE", "k", "0", "payload"},
		[]string{"MULTI"}, []string{"SET", "b", "2"}, []string{"EXEC"},
		[]string{"SELECT", "0"}, []string{"DEL", "cold"},
		[]string{"UNLINK", "x", relayMarker + "x"},
		[]string{"PEXPIREAT", "later", "99"},
	)
	if r.upOff != int64(len(in)) || r.injected.Load() != 2 || r.last.off != int64(len(want)) || r.last.db != 0 {
		t.Fatalf("upstream offset %d (want %d), injected %d, last mark %+v (want offset %d, db 0)",
			r.upOff, len(in), r.injected.Load(), r.last, len(want))
	}

	// What a replica continuing from the start receives.
	rep := m.Attach(repl.Handshake{CapaPsync2: true}, true, m.ID(), 1, "127.0.0.1")
	a, b := net.Pipe()
	defer b.Close()
	go m.Run(rep, a, a, nil)
	b.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(b)
	line, err := br.ReadString('\n')
	if err != nil || line != "+CONTINUE "+m.ID()+"\r\n" {
		t.Fatalf("PSYNC reply %q, %v", line, err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatalf("reading the stream: %v (got %q)", err, got)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stream:\n%q\nwant\n%q", got, want)
	}
}
