package link

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckMaster asks a real master and a real replica for their ROLE.
func TestCheckMaster(t *testing.T) {
	m := startServer(t, 0)
	r := startServer(t, 0, "--replicaof", "127.0.0.1", strconv.Itoa(m.port))
	for _, tc := range []struct {
		addr   string
		master bool
	}{{m.addr, true}, {r.addr, false}} {
		for _, proto := range []int{2, 3} {
			c, err := Dial(Target{Addr: tc.addr}, proto, 0, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			err = checkMaster(c, tc.addr)
			c.Close()
			if (err == nil) != tc.master {
				t.Errorf("checkMaster(%s, RESP%d) = %v, want master %v", tc.addr, proto, err, tc.master)
			}
		}
	}
}

// TestRecentUnlinks: the keys demoted lately are remembered by database,
// a reload forgets one, and taking them empties the set; without
// Sentinel nothing is remembered.
func TestRecentUnlinks(t *testing.T) {
	p := &Pool{watch: &sentinelWatch{}}
	p.noteUnlinked(0, [][]byte{[]byte("a"), []byte("b\x00c")})
	p.noteUnlinked(3, [][]byte{[]byte("a")})
	p.Forget(0, []byte("a"))
	got := p.takeRecent()
	if len(got) != 2 || len(got[0]) != 1 || string(got[0][0]) != "b\x00c" || len(got[3]) != 1 || string(got[3][0]) != "a" {
		t.Errorf("takeRecent = %v", got)
	}
	if again := p.takeRecent(); len(again) != 0 {
		t.Errorf("takeRecent after takeRecent = %v", again)
	}
	plain := &Pool{}
	plain.noteUnlinked(0, [][]byte{[]byte("a")})
	if len(plain.recent.keys) != 0 {
		t.Errorf("a pool without Sentinel remembered %d keys", len(plain.recent.keys))
	}
}

// TestSentinelResolve: when no sentinel answers, resolve fails with
// ErrUnavailable naming every sentinel tried and the master.
func TestSentinelResolve(t *testing.T) {
	addrs := []string{"127.0.0.1:" + strconv.Itoa(freePort(t)), "127.0.0.1:" + strconv.Itoa(freePort(t))}
	p := &Pool{opts: Options{DialTimeout: time.Second, Logger: quietLog}}
	w := &sentinelWatch{p: p, cfg: Sentinel{Addrs: addrs, Master: "mm"}, kick: make(chan struct{}, 1)}
	_, err := w.resolve("", true)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("resolve with no sentinel = %v, want ErrUnavailable", err)
	}
	for _, a := range append(addrs, `"mm"`) {
		if !strings.Contains(err.Error(), a) {
			t.Errorf("resolve error %q does not name %s", err, a)
		}
	}
}

// TestSentinelAsk runs a real redis-sentinel that requires a password,
// monitoring a real master: resolve finds the master with the sentinel's
// credentials, and fails with the sentinel's refusal without them or for
// a master name it does not monitor.
func TestSentinelAsk(t *testing.T) {
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatalf("redis-sentinel is not on PATH (scripts/ensure-redis.sh installs it): %v", err)
	}
	m := startServer(t, 0)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\nrequirepass sp\nsentinel monitor mm 127.0.0.1 %d 1\n", port, m.port)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p := &Pool{opts: Options{DialTimeout: time.Second, Logger: quietLog}}
	w := &sentinelWatch{p: p, cfg: Sentinel{Addrs: []string{addr}, Master: "mm", Password: "sp"}, kick: make(chan struct{}, 1)}
	var got string
	pollUntil(t, "the sentinel to name the master", func() bool {
		got, err = w.resolve("", true)
		return err == nil
	})
	if got != m.addr {
		t.Errorf("resolve = %s, want %s", got, m.addr)
	}
	w.cfg.Password = ""
	if _, err := w.resolve("", true); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("resolve without the sentinel's password = %v, want its NOAUTH", err)
	}
	w.cfg.Password, w.cfg.Master = "sp", "other"
	if _, err := w.resolve("", true); err == nil || !strings.Contains(err.Error(), `does not know master "other"`) {
		t.Errorf("resolve of an unknown master = %v", err)
	}
}
