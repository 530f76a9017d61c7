package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/tiering/uptier"
)

// sidecarCluster is a Redis Cluster started by scripts/redis-cluster.sh:
// three primaries on loopback, each behind a Spillway sidecar (and with
// --replicas 1 a replica each, nodes 3 to 5, behind sidecars of their own).
type sidecarCluster struct {
	dir      string
	base     int
	sidecars []string // host:port, node i's at [i]
}

// nodePort is node i's own redis-server port (the script's layout), which
// no reply may name.
func (s *sidecarCluster) nodePort(i int) int { return s.base + 10 + i }

// startSidecarCluster runs the script with a base port whose ports
// (sidecars, nodes, buses) are free, with replicas (0 or 1) replicas per
// primary and env added to the script's environment, and stops everything
// when the test ends.
func startSidecarCluster(t *testing.T, replicas int, env ...string) *sidecarCluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal(harness.RedisMissing)
	}
	bin := harness.BuildSpillway(t)
	script, err := filepath.Abs("../scripts/redis-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := &sidecarCluster{dir: t.TempDir()}
	nodes := 3 * (1 + replicas)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for attempt := 0; attempt < 50 && s.base == 0; attempt++ {
		// Below the kernel's ephemeral ports (32768 up) with the buses
		// (base+10010...), which a client's outgoing connection could hold.
		base := 12000 + rng.Intn(10000)
		free := true
		for i := 0; i < nodes && free; i++ {
			for _, p := range []int{base + i, base + 10 + i, base + 10010 + i} {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					free = false
					break
				}
				l.Close()
			}
		}
		if free {
			s.base = base
		}
	}
	if s.base == 0 {
		t.Fatal("no free base port found")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{script, s.dir, strconv.Itoa(s.base)}
	if replicas > 0 {
		args = append(args, "--replicas", strconv.Itoa(replicas))
	}
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Env = append(append(os.Environ(), "SPILLWAY="+bin), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		out, err := exec.Command("bash", script, s.dir, "stop").CombinedOutput()
		if err != nil {
			t.Errorf("redis-cluster.sh stop: %v: %s", err, out)
		}
	})
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-cluster.sh: %v\n%s", err, stderr.String())
	}
	s.sidecars = strings.Fields(string(out))
	for i := 0; i < nodes; i++ {
		if want := fmt.Sprintf("127.0.0.1:%d", s.base+i); len(s.sidecars) != nodes || s.sidecars[i] != want {
			t.Fatalf("redis-cluster.sh printed %q; want the sidecars 127.0.0.1:%d..%d", out, s.base, s.base+nodes-1)
		}
	}
	return s
}

// checkNoNodeAddr fails if text names one of the nodes' own ports.
func (s *sidecarCluster) checkNoNodeAddr(t *testing.T, what, text string) {
	t.Helper()
	for i := range s.sidecars {
		if strings.Contains(text, ":"+strconv.Itoa(s.nodePort(i))) {
			t.Fatalf("%s names node %d's own port %d:\n%s", what, i, s.nodePort(i), text)
		}
	}
}

// slotOwners maps every slot to the sidecar that serves it, from CLUSTER
// SLOTS through the last sidecar, checking that only sidecars are named.
func (s *sidecarCluster) slotOwners(t *testing.T, ctx context.Context) []string {
	t.Helper()
	c := utGoRedis(t, s.sidecars[len(s.sidecars)-1], 10*time.Second) // alive in the failover test
	ranges, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := make([]string, uptier.SlotCount)
	for _, r := range ranges {
		for _, n := range r.Nodes {
			s.checkNoNodeAddr(t, "CLUSTER SLOTS", n.Addr)
		}
		for sl := r.Start; sl <= r.End; sl++ {
			owners[sl] = r.Nodes[0].Addr
		}
	}
	for sl, o := range owners {
		if o == "" {
			t.Fatalf("slot %d has no owner in CLUSTER SLOTS", sl)
		}
	}
	return owners
}

func clusterValue(i int) string {
	v := fmt.Sprintf("value-%d-", i)
	return v + strings.Repeat(string(rune('a'+i%26)), 300-len(v))
}

// TestClusterSidecars: a 3-primary Redis Cluster behind Spillway sidecars
// (scripts/redis-cluster.sh). A go-redis ClusterClient given the sidecars
// writes 30,000 keys across the slots, well past the sidecars' maxmemory,
// and reads them back; CLUSTER SLOTS/SHARDS/NODES, -MOVED and -ASK name
// sidecars only; ASKING holds for the client that sent it alone; CLUSTER
// COUNTKEYSINSLOT counts cold keys; then `redis-cli --cluster reshard`
// pointed at a sidecar moves 2,000 slots from node 0 to node 1 (while a
// cluster client rewrites some of node 0's keys), and every
// key reads back equal, none left behind in node 0's sidecar (hot or
// cold), the per-slot counts still those written; `redis-cli --cluster
// rebalance` then moves about 2,000 slots back, with the same checks; a
// sidecar restarted on its directory then serves its cold keys again.
func TestClusterSidecars(t *testing.T) {
	s := startSidecarCluster(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	for i, addr := range s.sidecars {
		c := utDial(t, addr, 10*time.Second)
		for _, args := range [][]string{{"CLUSTER", "NODES"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "SHARDS"}} {
			r := c.Do(args...)
			if r.IsError() {
				t.Fatalf("sidecar %d: %v = %s", i, args, r.String())
			}
			s.checkNoNodeAddr(t, fmt.Sprintf("sidecar %d: %v", i, args), string(r.Raw))
		}
	}

	// The announced address cannot be changed through a sidecar.
	if r := utDial(t, s.sidecars[0], 10*time.Second).Do("CONFIG", "SET", "maxmemory-samples", "5", "cluster-announce-port", "1"); !r.IsError() ||
		!strings.Contains(r.Str, "cluster-announce-port") {
		t.Fatalf("CONFIG SET cluster-announce-port through a sidecar = %s; want the refusal", r.String())
	}

	// Writes past maxmemory are slowed while the sidecars demote (up to a
	// second each): small batches, a generous timeout.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.sidecars, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, DisableIdentity: true})
	t.Cleanup(func() { cc.Close() })
	const n = 30000
	key := func(i int) string { return "ck:" + strconv.Itoa(i) }
	for lo := 0; lo < n; lo += 100 {
		_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+100; i++ {
				p.Set(ctx, key(i), clusterValue(i), 0)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("writing keys %d..: %v", lo, err)
		}
	}
	values := make([]string, n) // what each key holds
	for i := range values {
		values[i] = clusterValue(i)
	}
	readAll := func(when string) {
		t.Helper()
		for lo := 0; lo < n; lo += 500 {
			cmds := make([]*redis.StringCmd, 0, 500)
			_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := lo; i < lo+500; i++ {
					cmds = append(cmds, p.Get(ctx, key(i)))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s: reading keys %d..: %v", when, lo, err)
			}
			for j, c := range cmds {
				if c.Val() != values[lo+j] {
					t.Fatalf("%s: GET %s = %q (%v); want %q", when, key(lo+j), c.Val(), c.Err(), values[lo+j])
				}
			}
		}
	}

	// The sidecars demote: past their 4 MB, most keys are cold.
	infos := make([]*harness.Conn, 3)
	for i, addr := range s.sidecars {
		infos[i] = utDial(t, addr, 10*time.Second)
	}
	coldTotal := func() int64 {
		var sum int64
		for _, c := range infos {
			v, err := utInfoInt(c, "tiering", "cold_keys")
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		return sum
	}
	deadline := time.Now().Add(30 * time.Second)
	for coldTotal() < n/3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if cold := coldTotal(); cold < n/3 {
		t.Fatalf("only %d of %d keys are cold; the test wants many", cold, n)
	}
	readAll("before the reshard")

	// Each key's slot, by Redis (CLUSTER KEYSLOT through a sidecar), and
	// Spillway's own KeySlot agrees.
	slotOf := make([]int, n)
	for lo := 0; lo < n; lo += 1000 {
		cmds := make([]*redis.IntCmd, 0, 1000)
		_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+1000; i++ {
				cmds = append(cmds, p.ClusterKeySlot(ctx, key(i)))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range cmds {
			slotOf[lo+j] = int(c.Val())
			if got := uptier.KeySlot([]byte(key(lo + j))); got != slotOf[lo+j] {
				t.Fatalf("KeySlot(%s) = %d; Redis says %d", key(lo+j), got, slotOf[lo+j])
			}
		}
	}
	want := make([]int64, uptier.SlotCount)
	for _, sl := range slotOf {
		want[sl]++
	}
	owners := s.slotOwners(t, ctx)
	checkCounts := func(when string, slots []int) {
		t.Helper()
		conns := map[string]*harness.Conn{}
		for i, addr := range s.sidecars {
			conns[addr] = infos[i]
		}
		for _, sl := range slots {
			r := conns[owners[sl]].Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(sl))
			if r.Int != want[sl] {
				t.Fatalf("%s: CLUSTER COUNTKEYSINSLOT %d at %s = %s; %d keys were written there", when, sl, owners[sl], r.String(), want[sl])
			}
		}
		var total int64
		for _, c := range infos {
			total += c.Do("DBSIZE").Int
		}
		if total != n {
			t.Fatalf("%s: the sidecars' DBSIZEs add up to %d; want %d", when, total, n)
		}
	}
	var sample []int
	for sl := 0; sl < uptier.SlotCount; sl += 37 {
		sample = append(sample, sl)
	}
	checkCounts("before the reshard", sample)

	// -MOVED and -ASK name sidecars; ASKING holds for its client only.
	id := func(i int) string { return infos[i].Do("CLUSTER", "MYID").Str }
	id0, id1 := id(0), id(1)
	for i := 0; i < n; i++ {
		if owners[slotOf[i]] == s.sidecars[1] {
			r := infos[0].Do("GET", key(i))
			wantErr := fmt.Sprintf("MOVED %d %s", slotOf[i], s.sidecars[1])
			if r.Str != wantErr {
				t.Fatalf("GET %s at sidecar 0 = %s; want -%s", key(i), r.String(), wantErr)
			}
			break
		}
	}
	askSlot, askKey := -1, ""
	for tag := 0; tag < 1_000_000 && askSlot < 0; tag++ {
		k := fmt.Sprintf("ask:{%d}", tag)
		if sl := uptier.KeySlot([]byte(k)); owners[sl] == s.sidecars[0] && want[sl] == 0 {
			askSlot, askKey = sl, k
		}
	}
	if askSlot < 0 {
		t.Fatal("no empty slot of node 0 found")
	}
	slot := strconv.Itoa(askSlot)
	for _, step := range []struct {
		c    *harness.Conn
		args []string
	}{{infos[1], []string{"CLUSTER", "SETSLOT", slot, "IMPORTING", id0}}, {infos[0], []string{"CLUSTER", "SETSLOT", slot, "MIGRATING", id1}}} {
		if r := step.c.Do(step.args...); r.Str != "OK" {
			t.Fatalf("%v = %s", step.args, r.String())
		}
	}
	if r, wantErr := infos[0].Do("GET", askKey), fmt.Sprintf("ASK %d %s", askSlot, s.sidecars[1]); r.Str != wantErr {
		t.Fatalf("GET %s at sidecar 0 during the migration = %s; want -%s", askKey, r.String(), wantErr)
	}
	asker, other := utDial(t, s.sidecars[1], 10*time.Second), utDial(t, s.sidecars[1], 10*time.Second)
	if r := asker.Do("ASKING"); r.Str != "OK" {
		t.Fatalf("ASKING = %s", r.String())
	}
	if r, wantErr := other.Do("GET", askKey), fmt.Sprintf("MOVED %d %s", askSlot, s.sidecars[0]); r.Str != wantErr {
		t.Fatalf("GET %s at sidecar 1 from another client after ASKING = %s; want -%s", askKey, r.String(), wantErr)
	}
	if r := asker.Do("SET", askKey, "asked"); r.Str != "OK" {
		t.Fatalf("SET %s after ASKING = %s; want OK", askKey, r.String())
	}
	if r := asker.Do("GET", askKey); !strings.HasPrefix(r.Str, "MOVED ") {
		t.Fatalf("a second command after one ASKING = %s; want -MOVED", r.String())
	}
	for _, c := range infos {
		if r := c.Do("CLUSTER", "SETSLOT", slot, "NODE", id1); r.Str != "OK" {
			t.Fatalf("CLUSTER SETSLOT %s NODE = %s", slot, r.String())
		}
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		v, err := cc.Get(ctx, askKey).Result()
		if err == nil && v == "asked" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s after the slot moved = %q, %v", askKey, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cc.Del(ctx, askKey).Err(); err != nil {
		t.Fatal(err)
	}

	// Reshard 2,000 slots from node 0 to node 1 through sidecar 0, while
	// a cluster client rewrites a tenth of node 0's keys (cold ones
	// included: -ASK, -TRYAGAIN and -MOVED are followed), at most once
	// each, spread over the reshard; the other keys stay as demoted.
	var node0Keys []int
	for i := 0; i < n; i += 10 {
		if owners[slotOf[i]] == s.sidecars[0] {
			node0Keys = append(node0Keys, i)
		}
	}
	writer := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.sidecars, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, DisableIdentity: true, MaxRedirects: 32})
	t.Cleanup(func() { writer.Close() })
	stopWriter := make(chan struct{})
	type rewrite struct {
		i   int
		err error
	}
	rewrites := make(chan rewrite, len(node0Keys))
	go func() {
		defer close(rewrites)
		for _, i := range node0Keys {
			select {
			case <-stopWriter:
				return
			default:
			}
			rewrites <- rewrite{i, writer.Set(ctx, key(i), "rewritten-"+strconv.Itoa(i), 0).Err()}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer rcancel()
	out, err := exec.CommandContext(rctx, "redis-cli", "--cluster", "reshard", s.sidecars[0],
		"--cluster-from", id0, "--cluster-to", id1, "--cluster-slots", "2000", "--cluster-yes").CombinedOutput()
	close(stopWriter)
	nRewritten := 0
	for r := range rewrites {
		if r.err != nil {
			t.Errorf("SET %s during the reshard: %v", key(r.i), r.err)
			continue
		}
		values[r.i] = "rewritten-" + strconv.Itoa(r.i)
		nRewritten++
	}
	t.Logf("%d keys rewritten during the reshard", nRewritten)
	if err != nil {
		t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, tail(out, 2000))
	}
	s.checkNoNodeAddr(t, "redis-cli --cluster reshard's output", string(out))
	before := owners
	owners = s.slotOwners(t, ctx)
	var moved []int
	for sl := range owners {
		if before[sl] == s.sidecars[0] && owners[sl] == s.sidecars[1] {
			moved = append(moved, sl)
		}
	}
	if len(moved) < 2000 {
		t.Fatalf("%d slots moved from node 0 to node 1; want 2000 at least", len(moved))
	}
	readAll("after the reshard")
	// Nothing is left in a sidecar but keys of the slots it serves (KEYS
	// lists both tiers).
	leftBehind := func(when string) {
		t.Helper()
		for si, addr := range s.sidecars {
			held := infos[si].Do("KEYS", "ck:*")
			if held.IsError() {
				t.Fatal(held.String())
			}
			for _, e := range held.Elems {
				i, err := strconv.Atoi(strings.TrimPrefix(e.Str, "ck:"))
				if err != nil || owners[slotOf[i]] != addr {
					t.Fatalf("%s: sidecar %d still holds %s (slot %d, %s's)", when, si, e.Str, slotOf[i], owners[slotOf[i]])
				}
			}
			var wantHeld int
			for _, sl := range slotOf {
				if owners[sl] == addr {
					wantHeld++
				}
			}
			if len(held.Elems) != wantHeld {
				t.Fatalf("%s: sidecar %d holds %d keys; %d were written to the slots it serves", when, si, len(held.Elems), wantHeld)
			}
		}
	}
	leftBehind("after the reshard")
	checkCounts("after the reshard", append(sample, moved[:100]...))
	for _, sl := range moved[:50] {
		if r := infos[0].Do("CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(sl)); r.Int != 0 {
			t.Fatalf("after the reshard, sidecar 0 counts %s keys in moved slot %d", r.String(), sl)
		}
	}

	// redis-cli --cluster rebalance through a sidecar evens the slots out
	// again (node 1 has about 7,460, node 0 about 3,460).
	out, err = exec.CommandContext(rctx, "redis-cli", "--cluster", "rebalance", s.sidecars[2]).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster rebalance: %v\n%s", err, tail(out, 2000))
	}
	s.checkNoNodeAddr(t, "redis-cli --cluster rebalance's output", string(out))
	before = owners
	owners = s.slotOwners(t, ctx)
	rebalanced := 0
	for sl := range owners {
		if before[sl] != owners[sl] {
			rebalanced++
		}
	}
	if rebalanced < 1000 {
		t.Fatalf("rebalance moved %d slots; want over 1,000\n%s", rebalanced, tail(out, 2000))
	}
	readAll("after the rebalance")
	leftBehind("after the rebalance")
	checkCounts("after the rebalance", sample)

	s.checkLogs(t)

	// A sidecar restarted on its directory serves its cold keys again.
	cold2, err := utInfoInt(infos[2], "tiering", "cold_keys")
	if err != nil || cold2 == 0 {
		t.Fatalf("sidecar 2 has %d cold keys (%v); the restart check wants some", cold2, err)
	}
	s.restartSidecar(t, 2)
	readAll("after sidecar 2 restarted")
	c2 := utDial(t, s.sidecars[2], 10*time.Second)
	if got, err := utInfoInt(c2, "tiering", "cold_keys"); err != nil || got < cold2/2 {
		t.Fatalf("sidecar 2 restarted with %d cold keys (%v); it had %d", got, err, cold2)
	}

	// redis-cli -c through a sidecar follows -MOVED to another sidecar.
	for i := 0; i < n; i++ {
		if owners[slotOf[i]] == s.sidecars[2] {
			out, err := exec.CommandContext(ctx, "redis-cli", "-c", "-p", strconv.Itoa(s.base), "GET", key(i)).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != values[i] {
				t.Fatalf("redis-cli -c -p %d GET %s: %v %q", s.base, key(i), err, out)
			}
			break
		}
	}
}

// restartSidecar stops sidecar i (SIGTERM, a clean shutdown) and starts
// it again as the script does, on the same directory, recording its new
// pid for the script's stop.
func (s *sidecarCluster) restartSidecar(t *testing.T, i int) {
	t.Helper()
	pidFile := filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.pid", i))
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for tries := 0; ; tries++ {
		if p.Signal(syscall.Signal(0)) != nil {
			break
		}
		if tries == 300 {
			t.Fatalf("sidecar %d (pid %d) did not exit after SIGTERM", i, pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.spawnSidecar(t, i, "4mb")
}

// spawnSidecar starts sidecar i as the script does, on its directory and
// log, with the given maxmemory, records its pid for the script's stop,
// and waits until it answers.
func (s *sidecarCluster) spawnSidecar(t *testing.T, i int, maxmemory string) {
	t.Helper()
	pidFile := filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.pid", i))
	logf, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.log", i)), os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(harness.BuildSpillway(t), "--port", strconv.Itoa(s.base+i), "--bind", "127.0.0.1",
		"--dir", filepath.Join(s.dir, fmt.Sprintf("sidecar-%d", i)), "--maxmemory", maxmemory,
		"--upstream", "redis://127.0.0.1:"+strconv.Itoa(s.nodePort(i)))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reaped when the script's stop kills it
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for tries := 0; ; tries++ {
		if c, err := harness.Dial(s.sidecars[i]); err == nil {
			c.Timeout = 5 * time.Second
			r := c.Do("PING")
			c.Close()
			if r.Str == "PONG" {
				return
			}
		}
		if tries == 300 {
			t.Fatalf("sidecar %d does not answer after its restart", i)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkLogs fails if a sidecar logged an error, and shows its warnings.
func (s *sidecarCluster) checkLogs(t *testing.T) {
	t.Helper()
	for i := range s.sidecars {
		b, err := os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("sidecar %d logged: %s", i, line)
			} else if strings.Contains(line, "level=WARN") {
				t.Logf("sidecar %d logged: %s", i, line)
			}
		}
	}
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
