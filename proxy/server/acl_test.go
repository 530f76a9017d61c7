package server

import "testing"

// The client's ACL flag (dispatch's one test per command) is off while
// its user allows everything and follows every change of the user's
// rules, on the clients already connected too.
func TestACLFlagFollowsRules(t *testing.T) {
	tb := NewTable()
	tb.Register("get", func(x *Ctx, _ [][]byte) error { x.W.OK(); return nil })
	tb.Register("acl|setuser", func(x *Ctx, args [][]byte) error {
		ops := make([]string, len(args)-3)
		for i, a := range args[3:] {
			ops[i] = string(a)
		}
		u, old, err := x.ACL().SetUser(string(args[2]), ops)
		if err != nil {
			return err
		}
		x.UserChanged(u, old)
		x.W.OK()
		return nil
	})
	s := localServer(t, tb)
	l := s.NewLocal()
	defer l.Close()
	other := s.NewLocal()
	defer other.Close()
	if l.c.aclOn.Load() || other.c.aclOn.Load() {
		t.Fatal("default user's clients check commands")
	}
	for _, step := range []struct {
		rules []string
		on    bool
		get   string
	}{
		{[]string{"-get"}, true, "-NOPERM this user has no permissions to run the 'get' command\r\n"},
		{[]string{"+get", "resetkeys", "~a*"}, true, "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"},
		// Every command allowed again, but not as +@all: still checked,
		// as Redis checks the command bits once +@all is broken.
		{[]string{"allkeys"}, true, "+OK\r\n"},
		{[]string{"+@all"}, false, "+OK\r\n"},
	} {
		args := append([]string{"ACL", "SETUSER", "default"}, step.rules...)
		if got := string(l.DoString(args...)); got != "+OK\r\n" {
			t.Fatalf("%q: %q", args, got)
		}
		if other.c.aclOn.Load() != step.on {
			t.Errorf("after %q: flag %v", step.rules, other.c.aclOn.Load())
		}
		if got := string(other.DoString("GET", "b")); got != step.get {
			t.Errorf("after %q: GET b = %q, want %q", step.rules, got, step.get)
		}
	}
}
