package config

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// TestApplyRollback: an apply hook failing restores every setting of the
// CONFIG SET, runs the hooks again on the restored values, calls no
// OnChange callback, and names the setting the hook was run for.
func TestApplyRollback(t *testing.T) {
	c := Default()
	var log []string
	failPort := "7000"
	if err := c.RegisterApply(func() error {
		v, _ := c.Value("port")
		log = append(log, "listen "+v)
		if v == failPort {
			return errors.New("Unable to listen on this port. Check server logs.")
		}
		return nil
	}, "port", "bind"); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterApply(func() error {
		log = append(log, "mem "+mustValue(t, c, "maxmemory"))
		return nil
	}, "maxmemory"); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterApply(func() error { return nil }, "nosuch"); err == nil {
		t.Error("RegisterApply(nosuch) succeeded")
	}
	var changed []string
	c.OnChange("maxmemory", func(v string) { changed = append(changed, v) })
	before := get(c, "*")

	err := c.Set([][2]string{{"maxmemory", "10000001"}, {"port", failPort}, {"bind", "* -::*"},
		{"client-query-buffer-limit", "10m"}})
	want := "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs."
	if err == nil || err.Error() != want {
		t.Fatalf("Set = %v, want %s", err, want)
	}
	if after := get(c, "*"); !reflect.DeepEqual(before, after) {
		t.Error("a failed apply left settings changed")
	}
	// The hook of port and bind ran once, failed, and both hooks ran
	// again on the restored values.
	wantLog := []string{"mem 10000001", "listen 7000", "mem " + before["maxmemory"], "listen 6380"}
	if !reflect.DeepEqual(log, wantLog) {
		t.Errorf("hooks ran %q, want %q", log, wantLog)
	}
	if len(changed) != 0 {
		t.Errorf("OnChange called after a failed apply: %q", changed)
	}

	// Unchanged values run no hook; a success runs each hook once.
	log = nil
	if err := c.Set([][2]string{{"port", "6380"}, {"maxmemory", before["maxmemory"]}}); err != nil || log != nil {
		t.Errorf("Set of current values: err %v, hooks %q", err, log)
	}
	if err := c.Set([][2]string{{"port", "7001"}, {"bind", "127.0.0.1 -::1"}}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(log, []string{"listen 7001"}) || c.Port() != 7001 ||
		!reflect.DeepEqual(c.Bind(), []string{"127.0.0.1", "-::1"}) {
		t.Errorf("hooks %q, port %d, bind %q", log, c.Port(), c.Bind())
	}
}

// TestFixedSettings: Spillway's start-up settings accept their current
// value (CONFIG SET of everything CONFIG GET reports succeeds) and refuse
// others.
func TestFixedSettings(t *testing.T) {
	c := Default()
	for _, kv := range c.Get([]byte("*")) {
		s := registry[names[kv[0]].idx]
		err := c.Set([][2]string{{kv[0], kv[1]}})
		if (err == nil) != (s.mut == mutable || s.mut == fixed) {
			t.Errorf("CONFIG SET %s %q (its current value) = %v", kv[0], kv[1], err)
		}
	}
}

func TestParseMultiArg(t *testing.T) {
	inc := writeConf(t, "hz 20\n")
	p := writeConf(t, "save 900 1\nsave \"300 10\"\nbind \"127.0.0.1 -::1\"\n"+
		"client-output-buffer-limit \"pubsub 1mb 1mb 0\"\nshutdown-on-sigterm \"now force\"\n"+
		"oom-score-adj-values \"1 2 3\"\nlist-max-ziplist-entries 512\ninclude "+inc+"\n"+
		"list-compress-depth 1\ndaemonize yes\n")
	c, err := Parse([]string{p, "--latency-tracking-info-percentiles", "50 99", "--replicaof", "no", "one"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"save": "900 1 300 10", "bind": "127.0.0.1 -::1", "shutdown-on-sigterm": "now force",
		"oom-score-adj-values": "1 2 3", "hz": "20", "list-compress-depth": "1",
		"latency-tracking-info-percentiles": "50 99", "replicaof": "",
		"client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 1048576 0",
	}
	got := get(c, "*")
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	wantInert := []string{"hz", "daemonize", "shutdown-on-sigterm", "list-compress-depth",
		"oom-score-adj-values", "replicaof", "latency-tracking-info-percentiles"}
	if !reflect.DeepEqual(c.Inert(), wantInert) {
		t.Errorf("Inert() = %q, want %q", c.Inert(), wantInert)
	}
}

// TestRewriteRoundTrip: every kind of setting CONFIG REWRITE writes reads
// back as the same value.
func TestRewriteRoundTrip(t *testing.T) {
	p := writeConf(t, "replicaof no one\nbind 127.0.0.1\n")
	c, err := Parse([]string{p})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Set([][2]string{{"shutdown-on-sigint", "now save"}, {"maxmemory-clients", "5%"},
		{"oom-score-adj-values", "-1 2 3"}, {"latency-tracking-info-percentiles", ""}, {"bind", ""},
		{"proc-title-template", "x {port}"}, {"key-load-delay", "-5"}, {"repl-backlog-size", "1mb"},
		{"slave-announce-ip", "a b"}, {"list-compress-depth", "3"}, {"oom-score-adj", "absolute"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Rewrite(); err != nil {
		t.Fatal(err)
	}
	c2, err := Parse([]string{p})
	if err != nil {
		data, _ := os.ReadFile(p)
		t.Fatalf("%v\n%s", err, data)
	}
	want := get(c, "*", "key-load-delay")
	if got := get(c2, "*", "key-load-delay"); !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %q after rewrite, want %q", k, got[k], v)
			}
		}
	}
}

// TestSetDeferred: SetDeferred changes the values and runs the apply hooks
// at once, the OnChange callbacks only when its notify function is
// called; a failed SetDeferred returns no notify function.
func TestSetDeferred(t *testing.T) {
	c := Default()
	hooks := 0
	if err := c.RegisterApply(func() error { hooks++; return nil }, "maxmemory"); err != nil {
		t.Fatal(err)
	}
	var changed []string
	c.OnChange("maxmemory", func(v string) { changed = append(changed, "maxmemory "+v) })
	c.OnChange("promote-min-hits", func(v string) { changed = append(changed, "promote-min-hits "+v) })
	notify, err := c.SetDeferred([][2]string{{"maxmemory", "1mb"}, {"promote-min-hits", "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMemory() != 1<<20 || hooks != 1 || len(changed) != 0 {
		t.Fatalf("before notify: maxmemory %d, hooks %d, callbacks %q", c.MaxMemory(), hooks, changed)
	}
	notify()
	if want := []string{"maxmemory 1048576", "promote-min-hits 3"}; !reflect.DeepEqual(changed, want) {
		t.Errorf("callbacks %q, want %q", changed, want)
	}
	if notify, err := c.SetDeferred([][2]string{{"maxmemory", "lots"}}); err == nil || notify != nil {
		t.Errorf("a bad value: notify %v, err %v", notify != nil, err)
	}
}
