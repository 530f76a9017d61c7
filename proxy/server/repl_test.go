package server

import (
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"

	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/tiering"
)

// TestPropagationOffCostsNothing: with no replica ever attached, a write's
// path through call and withLock (the propagation state's reset, the
// Active check) allocates nothing and records nothing.
func TestPropagationOffCostsNothing(t *testing.T) {
	s := localServer(t, nil)
	c := &Client{s: s}
	h := func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error {
			x.Notify(NotifyString, "set", args[1]) // a change: propagated if replicating
			return nil
		})
	}
	args := [][]byte{[]byte("set"), []byte("k"), []byte("v")}
	c.call(h, args)
	if n := testing.AllocsPerRun(1000, func() { c.call(h, args) }); n != 0 {
		t.Errorf("%v allocations per write without a replica, want 0", n)
	}
	if s.repl.Active() || s.prop.Len() != 0 || s.repl.Offset() != 0 {
		t.Errorf("recorded without a replica: active %v, unit %d, offset %d", s.repl.Active(), s.prop.Len(), s.repl.Offset())
	}
}

// TestPropagationOnRecords: once a replica attached, a write is recorded
// in the stream as received (after a SELECT), a rewrite replaces it, and a
// command that changed nothing records nothing.
func TestPropagationOnRecords(t *testing.T) {
	s := localServer(t, nil)
	c := &Client{s: s}
	s.engine.Update(func(*tiering.Tx) error {
		s.repl.Attach(repl.Handshake{}, false, "", 0, "127.0.0.1")
		return nil
	})
	write := func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error {
			x.Notify(NotifyString, "set", args[1])
			if len(args) > 3 {
				x.RewriteArgs(args[:3]...)
			}
			return nil
		})
	}
	read := func(x *Ctx, args [][]byte) error { return x.View(func(*tiering.Tx) error { return nil }) }
	steps := []struct {
		h    Handler
		args []string
		add  string // what the stream gains
	}{
		{write, []string{"set", "k", "v"}, "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{write, []string{"set", "k", "v", "ex"}, "*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{read, []string{"get", "k"}, ""},
	}
	for _, st := range steps {
		before := s.repl.Offset()
		var args [][]byte
		for _, a := range st.args {
			args = append(args, []byte(a))
		}
		c.callCounted(cmdtable.Lookup(args[0]), st.h, args, time.Now())
		if got := s.repl.Offset() - before; got != int64(len(st.add)) {
			t.Errorf("%v: the stream grew by %d bytes, want %d (%q)", st.args, got, len(st.add), st.add)
		}
	}
	s.repl.Close()
}
