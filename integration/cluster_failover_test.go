package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/tiering/uptier"
)

// TestClusterFailover: a 3-primary Redis Cluster with a replica per
// primary, all six nodes behind Spillway sidecars with a small maxmemory
// (scripts/redis-cluster.sh --replicas 1). Keys are written to their
// shard's primary sidecar and acknowledged by the replica (WAIT 1, Redis's
// promise: a write a replica acknowledged survives a failover); most are
// demoted. Then node 0 and its sidecar are killed with SIGKILL (the
// machine dies), the cluster promotes node 3, and every key reads back
// through the sidecars, hot or cold, with the key counts of every slot
// (CLUSTER COUNTKEYSINSLOT through the sidecars) equal to the keys
// written. Node 0 and its sidecar then come back as a replica and its
// follower. Then a manual CLUSTER FAILOVER through node 4's sidecar swaps
// shard 1's roles, with no key lost either.
func TestClusterFailover(t *testing.T) {
	s := startSidecarCluster(t, 1, "CLUSTER_NODE_TIMEOUT=1000", "SIDECAR_MAXMEMORY=3mb")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i := range s.sidecars {
			b, _ := os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.log", i)))
			for _, line := range strings.Split(string(b), "\n") {
				if strings.Contains(line, "cold") || strings.Contains(line, "cluster") || strings.Contains(line, "level=WARN") {
					t.Logf("sidecar %d: %s", i, line)
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	owners := s.slotOwners(t, ctx)
	// Each primary's replica is attached through the primary's sidecar,
	// and what the primary says of it names its sidecar only.
	for i := 0; i < 3; i++ {
		info := utGoRedis(t, s.sidecars[i], 10*time.Second).Info(ctx, "replication").Val()
		if !strings.Contains(info, "connected_slaves:1") || !strings.Contains(info, "port="+strconv.Itoa(s.base+3+i)) {
			t.Fatalf("INFO replication through sidecar %d: want its replica, by sidecar %d's port:\n%s", i, 3+i, info)
		}
		s.checkNoNodeAddr(t, fmt.Sprintf("INFO replication through sidecar %d", i), info)
	}

	const n = 15000
	key := func(i int) string { return "fk:" + strconv.Itoa(i) }
	byOwner := map[string][]int{}
	perSlot := make([]int64, uptier.SlotCount)
	for i := 0; i < n; i++ {
		sl := uptier.KeySlot([]byte(key(i)))
		byOwner[owners[sl]] = append(byOwner[owners[sl]], i)
		perSlot[sl]++
	}
	// Each shard's keys on one connection to its primary's sidecar, in
	// batches each acknowledged by the replica: WAIT counts the writes of
	// the connection it is sent on.
	for _, addr := range s.sidecars[:3] {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1,
			ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
		keys := byOwner[addr]
		for lo := 0; lo < len(keys); lo += 200 {
			hi := min(lo+200, len(keys))
			var wait *redis.Cmd
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, i := range keys[lo:hi] {
					p.Set(ctx, key(i), clusterValue(i), 0)
				}
				wait = p.Do(ctx, "WAIT", 1, 10000)
				return nil
			})
			if err != nil {
				t.Fatalf("writing through %s: %v", addr, err)
			}
			if acked, err := wait.Int64(); err != nil || acked < 1 {
				t.Fatalf("WAIT 1 through %s after keys %d..%d = %d (%v); want the replica's acknowledgement", addr, lo, hi, acked, err)
			}
		}
		c.Close()
	}
	// Most of shard 0's keys are cold: the node holds fewer than written,
	// and its replica's sidecar holds the cold copies.
	written0 := int64(len(byOwner[s.sidecars[0]]))
	node0 := utGoRedis(t, "127.0.0.1:"+strconv.Itoa(s.nodePort(0)), 10*time.Second)
	var hot0 int64
	for tries := 0; ; tries++ {
		hot0 = node0.DBSize(ctx).Val()
		if hot0 < written0/2 {
			break
		}
		if tries == 300 {
			t.Fatalf("node 0 holds %d of the %d keys of its shard; want most demoted", hot0, written0)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("shard 0: %d keys written, %d hot on its node before the failure", written0, hot0)
	// Once demotion settles, node 3's sidecar holds a copy of every cold
	// key of node 0's sidecar (the cold feed).
	leader, follower := utDial(t, s.sidecars[0], 10*time.Second), utDial(t, s.sidecars[3], 10*time.Second)
	var coldL, coldF int64
	for tries := 0; ; tries++ {
		var err error
		if coldL, err = utInfoInt(leader, "tiering", "cold_keys"); err != nil {
			t.Fatal(err)
		}
		if coldF, err = utInfoInt(follower, "tiering", "cold_keys"); err != nil {
			t.Fatal(err)
		}
		if coldL > 0 && coldL == coldF && coldL+hot0 >= written0 {
			break
		}
		if tries == 300 {
			t.Fatalf("sidecar 0 holds %d cold keys, its follower (sidecar 3) %d; want the same, with %d hot of %d", coldL, coldF, hot0, written0)
		}
		time.Sleep(100 * time.Millisecond)
		hot0 = node0.DBSize(ctx).Val()
	}
	leader.Close()
	follower.Close()
	// One feed from the start: it never broke (a broken feed is a full
	// copy again, and demotions waiting for it abandoned).
	for _, i := range []int{3, 4, 5} {
		b, err := os.ReadFile(filepath.Join(s.dir, fmt.Sprintf("sidecar-%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "following the primary's sidecar's cold store"); n != 1 {
			t.Fatalf("sidecar %d started following %d times; want once", i, n)
		}
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.sidecars[1:], ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, DisableIdentity: true, MaxRedirects: 16})
	t.Cleanup(func() { cc.Close() })
	checkAll := func(when string) {
		t.Helper()
		for lo := 0; lo < n; lo += 500 {
			cmds := make([]*redis.StringCmd, 0, 500)
			_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := lo; i < min(lo+500, n); i++ {
					cmds = append(cmds, p.Get(ctx, key(i)))
				}
				return nil
			})
			if err != nil && err != redis.Nil {
				t.Fatalf("%s: reading keys %d..: %v", when, lo, err)
			}
			for j, c := range cmds {
				if got, want := c.Val(), clusterValue(lo+j); got != want {
					t.Fatalf("%s: GET %s = %.40q (%v); want %.40q", when, key(lo+j), got, c.Err(), want)
				}
			}
		}
	}
	// checkCounts compares every slot's count through its owner's sidecar
	// with the keys written; a promoted sidecar drops the cold copies of
	// keys its node also holds as it takes over, so the counts may take a
	// moment to settle.
	checkCounts := func(when string) {
		t.Helper()
		var bad string
		for tries := 0; tries < 100; tries++ {
			bad = ""
			own := s.slotOwners(t, ctx)
			clients := map[string]*redis.Client{}
			for sl := 0; sl < uptier.SlotCount && bad == ""; sl += 1000 {
				cmds := map[int]*redis.IntCmd{}
				pipes := map[string]redis.Pipeliner{}
				for x := sl; x < min(sl+1000, uptier.SlotCount); x++ {
					o := own[x]
					if clients[o] == nil {
						clients[o] = utGoRedis(t, o, 10*time.Second)
					}
					if pipes[o] == nil {
						pipes[o] = clients[o].Pipeline()
					}
					cmds[x] = pipes[o].ClusterCountKeysInSlot(ctx, x)
				}
				for o, p := range pipes {
					if _, err := p.Exec(ctx); err != nil {
						t.Fatalf("%s: COUNTKEYSINSLOT through %s: %v", when, o, err)
					}
				}
				for x := sl; x < min(sl+1000, uptier.SlotCount); x++ {
					if got := cmds[x].Val(); got != perSlot[x] {
						bad = fmt.Sprintf("slot %d through %s: %d keys; want %d", x, own[x], got, perSlot[x])
						break
					}
				}
			}
			for _, c := range clients {
				c.Close()
			}
			if bad == "" {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: COUNTKEYSINSLOT: %s", when, bad)
	}

	// The machine of node 0 dies: the node and its sidecar (the sidecar
	// first: alive a moment after its node it would log the node's loss as
	// an error, which checkLogs counts against the run).
	for _, name := range []string{"sidecar-0.pid", "redis-0.pid"} {
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	s.waitOwner(t, ctx, 0, s.sidecars[3], s.sidecars[1:])
	checkAll("after node 0's failure")
	checkCounts("after node 0's failure")

	// Node 0's machine comes back: the node rejoins as node 3's replica
	// (through sidecar 3), and its sidecar, on its old directory, follows
	// sidecar 3's cold store (a full copy replacing what it had).
	s.restartNode(t, 0, 1000)
	s.spawnSidecar(t, 0, "3mb")
	back, promoted := utDial(t, s.sidecars[0], 10*time.Second), utDial(t, s.sidecars[3], 10*time.Second)
	for tries := 0; ; tries++ {
		up := node0.Info(ctx, "replication").Val()
		coldB, err := utInfoInt(back, "tiering", "cold_keys")
		if err != nil {
			t.Fatal(err)
		}
		coldP, err := utInfoInt(promoted, "tiering", "cold_keys")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(up, "role:slave") && strings.Contains(up, "master_link_status:up") &&
			strings.Contains(up, "master_port:"+strconv.Itoa(s.base+3)) && coldP > 0 && coldB == coldP {
			break
		}
		if tries == 300 {
			t.Fatalf("node 0 back: %d cold keys on its sidecar, %d on sidecar 3; replication:\n%s", coldB, coldP, up)
		}
		time.Sleep(100 * time.Millisecond)
	}
	back.Close()
	promoted.Close()
	checkAll("after node 0 came back as a replica")
	checkCounts("after node 0 came back as a replica")

	// A manual failover of shard 1, asked through its replica's sidecar.
	if err := utGoRedis(t, s.sidecars[4], 10*time.Second).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER through sidecar 4: %v", err)
	}
	s.waitOwner(t, ctx, 5461, s.sidecars[4], s.sidecars)
	checkAll("after CLUSTER FAILOVER of shard 1")
	checkCounts("after CLUSTER FAILOVER of shard 1")
	s.checkLogs(t)
}

// restartNode starts node i's redis-server again as the script does, on
// its directory (nodes.conf) and log, with the given cluster-node-timeout.
func (s *sidecarCluster) restartNode(t *testing.T, i, timeoutMs int) {
	t.Helper()
	port, bus := s.nodePort(i), s.base+10010+i
	out, err := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", filepath.Join(s.dir, fmt.Sprintf("redis-%d", i)),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.Itoa(timeoutMs), "--cluster-port", strconv.Itoa(bus),
		"--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", strconv.Itoa(s.base+i),
		"--cluster-announce-bus-port", strconv.Itoa(bus), "--save", "", "--appendonly", "no",
		"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", strconv.Itoa(s.base+i),
		"--daemonize", "yes", "--pidfile", filepath.Join(s.dir, fmt.Sprintf("redis-%d.pid", i)),
		"--logfile", filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", i))).CombinedOutput()
	if err != nil {
		t.Fatalf("restarting node %d: %v: %s", i, err, out)
	}
}

// waitOwner waits until CLUSTER SLOTS through every sidecar of ask names
// want as slot's owner and each reports cluster_state:ok.
func (s *sidecarCluster) waitOwner(t *testing.T, ctx context.Context, slot int, want string, ask []string) {
	t.Helper()
	var got, from string
	for tries := 0; tries < 300; tries++ {
		agreed := true
		for _, addr := range ask {
			c := utGoRedis(t, addr, 5*time.Second)
			ranges, err := c.ClusterSlots(ctx).Result()
			info, _ := c.ClusterInfo(ctx).Result()
			c.Close()
			got, from = "", addr
			for _, r := range ranges {
				if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
					got = r.Nodes[0].Addr
				}
			}
			if err != nil || got != want || !strings.Contains(info, "cluster_state:ok") {
				agreed = false
				break
			}
		}
		if agreed {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("slot %d is served by %q according to %s; want %s", slot, got, from, want)
}
