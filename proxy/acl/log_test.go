package acl

import "testing"

// ACL LOG groups an event with a similar one among the 10 newest (same
// reason, context, object and user, within a minute): the count goes up
// and the entry moves first; the log keeps maxLen entries, newest first.
func TestLogGroupsAndTrims(t *testing.T) {
	var l Log
	e := func(obj string, ms int64) LogEntry {
		return LogEntry{Reason: DeniedCmd, Context: CtxTopLevel, Object: obj, Username: "u", Millis: ms, ClientInfo: obj}
	}
	l.Add(e("get", 0), 128)
	l.Add(e("set", 1), 128)
	l.Add(e("get", 2), 128)
	got := l.Entries(10)
	if len(got) != 2 || got[0].Object != "get" || got[0].Count != 2 || got[0].Millis != 2 || got[1].Count != 1 {
		t.Fatalf("grouping: %+v", got)
	}
	l.Add(e("get", 2+groupWindow+1), 128) // too late: a new entry
	if got := l.Entries(10); len(got) != 3 || got[0].Count != 1 {
		t.Fatalf("window: %+v", got)
	}
	ctx := e("get", 3)
	ctx.Context = CtxMulti
	l.Add(ctx, 128)
	if got := l.Entries(10); len(got) != 4 {
		t.Fatalf("context: %+v", got)
	}
	for i := 0; i < 11; i++ {
		l.Add(e(string(rune('a'+i)), 4), 128)
	}
	l.Add(e("set", 5), 128) // "set" is now 12th newest: not found, added
	if got := l.Entries(100); got[0].Object != "set" || got[0].Count != 1 || len(got) != 16 {
		t.Fatalf("scan limit: %d entries, first %+v", len(got), got[0])
	}
	l.Add(e("z", 6), 5)
	if got := l.Entries(100); len(got) != 5 || got[0].Object != "z" {
		t.Fatalf("trim: %d entries", len(got))
	}
	if got := l.Entries(-1); len(got) != 0 {
		t.Fatalf("negative count: %d", len(got))
	}
	l.Reset()
	if got := l.Entries(10); len(got) != 0 {
		t.Fatalf("reset: %d", len(got))
	}
}
